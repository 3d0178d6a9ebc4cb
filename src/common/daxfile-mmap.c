/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/mman.h>

#include "daxfile-mmap.h"

void
daxfile_mapping_clear(DaxfileMapping *map)
{
    if (map->addr && map->addr != MAP_FAILED)
        munmap(map->addr, map->length);
    map->addr = NULL;
    map->length = 0;
}
