/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-escape.h: names and paths made safe to print on one line
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Make a string safe to print on one line: control characters and invalid
 * UTF-8 become \xNN escapes. */
char *daxfile_escape(const char *str);

G_END_DECLS
