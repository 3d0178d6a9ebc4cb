/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-medium.h: the medium of a file or device for `daxfile status` and
 * `list` (only the daxfile binary links src/pmem)
 */

#pragma once

#include <sys/types.h>

#include "daxfile-medium.h"

G_BEGIN_DECLS

/* daxfile_medium_read() from one inventory for the whole run, read on
 * its first need */
DaxfileMedium *cli_medium_read(dev_t dev, gboolean chr);

G_END_DECLS
