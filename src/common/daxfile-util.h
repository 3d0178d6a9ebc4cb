/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-util.h: string comparison macros (libvirt's STREQ)
 */
#pragma once

#include <string.h>

#define STREQ(a, b) (strcmp((a), (b)) == 0)
#define STRNEQ(a, b) (strcmp((a), (b)) != 0)
#define STRPREFIX(a, b) (strncmp((a), (b), strlen(b)) == 0)
