/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-proc.h: which processes map a file or hold it open (for
 * writing)
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* TRUE when process @pid has a mapping of inode @dev/@ino */
gboolean daxfile_proc_maps_inode(pid_t pid, guint64 dev, guint64 ino);

/* PIDs (GArray of pid_t) of every process mapping the inode */
GArray *daxfile_proc_mappers(guint64 dev, guint64 ino);

/* PIDs of every process mapping the character device @rdev, by whatever
 * node (QEMU under libvirt maps a node of its own /dev): each mapped
 * inode is looked at through /proc/PID/map_files (root only) */
GArray *daxfile_proc_mappers_rdev(dev_t rdev);

/* PIDs (GArray of pid_t) holding an fd open for writing on the inode,
 * the calling process excluded */
GArray *daxfile_proc_writers(guint64 dev, guint64 ino);

/* How a process uses a file (DaxfileProcUser.use, flags) */
typedef enum {
    DAXFILE_PROC_MAPS = 1 << 0, /* it has a mapping of the file */
    DAXFILE_PROC_OPEN = 1 << 1, /* it holds a descriptor of it (any mode,
                                 * O_PATH too) */
} DaxfileProcUse;

typedef struct {
    pid_t pid;
    guint use; /* DaxfileProcUse */
} DaxfileProcUser;

/* Every process but the calling one that maps inode @dev/@ino or holds a
 * descriptor of it (GArray of DaxfileProcUser), in pid order */
GArray *daxfile_proc_users(guint64 dev, guint64 ino);

/* The same for the character device @rdev, by whatever node a process
 * maps or opened it (QEMU under libvirt: a node of its own /dev); a
 * mapping is found through /proc/PID/map_files (root only) */
GArray *daxfile_proc_users_rdev(dev_t rdev);

/* @pid and every descendant of it (GArray of pid_t) */
GArray *daxfile_proc_tree(pid_t pid);

gboolean daxfile_proc_alive(pid_t pid);

/* The start time of @pid (field 22 of /proc/PID/stat, clock ticks since
 * boot), 0 when it does not exist */
guint64 daxfile_proc_start_time(pid_t pid);

/* @pid is alive and is still the process that started at @start */
gboolean daxfile_proc_same(pid_t pid, guint64 start);

/* "comm" of @pid, for messages */
char *daxfile_proc_comm(pid_t pid);

gboolean daxfile_pid_in(const GArray *pids, pid_t pid);

/* How a process maps one file: its VMAs over the file that follow each
 * other (in address and in file offset) merged into one range, as
 * /proc/PID/smaps shows them. */
typedef struct {
    guint64 start;   /* address of the first byte */
    guint64 end;     /* address after the last byte */
    guint64 offset;  /* file offset mapped at @start */
    gboolean shared; /* every VMA MAP_SHARED ("s" in the permissions) */
    gboolean sync;   /* every VMA has VM_SYNC ("sf" in VmFlags): the
                      * mapping was made with MAP_SYNC and the kernel
                      * took it */
    guint vmas;      /* VMAs merged */
    guint others;    /* further mappings of the file not merged in */
} DaxfileProcMap;

/* The largest mapping of inode @dev/@ino in @smaps (the text of
 * /proc/PID/smaps) into *@out; FALSE when the file is not mapped. */
gboolean daxfile_smaps_find(const char *smaps, guint64 dev, guint64 ino,
                            DaxfileProcMap *out);

G_END_DECLS
