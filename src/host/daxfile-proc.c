/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daxfile-proc.h"

gboolean
daxfile_pid_in(const GArray *pids, pid_t pid)
{
    guint i;

    for (i = 0; pids && i < pids->len; i++) {
        if (g_array_index(pids, pid_t, i) == pid)
            return TRUE;
    }
    return FALSE;
}

static GArray *
proc_pids(void)
{
    GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
    g_autoptr(GDir) dir = g_dir_open("/proc", 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        guint64 pid = 0;

        if (g_ascii_string_to_unsigned(name, 10, 1, G_MAXINT32, &pid, NULL)) {
            pid_t p = (pid_t)pid;

            g_array_append_val(pids, p);
        }
    }
    return pids;
}

/* What a mapping is matched by: a file's inode, or (@rdev non-zero) a
 * character device by its device number, whatever node maps it */
typedef struct {
    guint64 dev;
    guint64 ino;
    dev_t rdev;
} MapKey;

/* One line of /proc/@pid/maps ("start-end perms offset MAJ:MIN inode
 * path") maps @key */
static gboolean
map_line_matches(pid_t pid, const char *line, const MapKey *key)
{
    g_autofree char *link = NULL;
    unsigned long long inode = 0;
    unsigned int maj, min;
    char range[64];
    struct stat st;

    if (sscanf(line, "%63s %*s %*s %x:%x %llu", range, &maj, &min, &inode) !=
            4 ||
        inode == 0)
        return FALSE;
    if (!key->rdev)
        return inode == key->ino && maj == major(key->dev) &&
               min == minor(key->dev);
    link = g_strdup_printf("/proc/%d/map_files/%s", (int)pid, range);
    return stat(link, &st) == 0 && S_ISCHR(st.st_mode) &&
           st.st_rdev == key->rdev;
}

static gboolean
pid_maps(pid_t pid, const MapKey *key)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/maps", (int)pid);
    g_autofree char *maps = NULL;
    g_auto(GStrv) lines = NULL;
    guint i;

    if (!g_file_get_contents(path, &maps, NULL, NULL))
        return FALSE;
    lines = g_strsplit(maps, "\n", -1);
    for (i = 0; lines[i]; i++) {
        if (map_line_matches(pid, lines[i], key))
            return TRUE;
    }
    return FALSE;
}

static GArray *
mappers(const MapKey *key)
{
    g_autoptr(GArray) pids = proc_pids();
    GArray *out = g_array_new(FALSE, FALSE, sizeof(pid_t));
    guint i;

    for (i = 0; i < pids->len; i++) {
        pid_t pid = g_array_index(pids, pid_t, i);

        if (pid_maps(pid, key))
            g_array_append_val(out, pid);
    }
    return out;
}

gboolean
daxfile_proc_maps_inode(pid_t pid, guint64 dev, guint64 ino)
{
    MapKey key = {.dev = dev, .ino = ino};

    return pid_maps(pid, &key);
}

GArray *
daxfile_proc_mappers(guint64 dev, guint64 ino)
{
    MapKey key = {.dev = dev, .ino = ino};

    return mappers(&key);
}

GArray *
daxfile_proc_mappers_rdev(dev_t rdev)
{
    MapKey key = {.rdev = rdev};

    return mappers(&key);
}

static gboolean
fd_is_writable(pid_t pid, const char *fd)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fdinfo/%s", (int)pid, fd);
    g_autofree char *info = NULL;
    const char *flags;
    guint64 value = 0;

    if (!g_file_get_contents(path, &info, NULL, NULL))
        return FALSE;
    flags = strstr(info, "flags:");
    if (!flags)
        return FALSE;
    value = g_ascii_strtoull(flags + strlen("flags:"), NULL, 8);
    return (value & O_ACCMODE) != O_RDONLY;
}

/* A descriptor of @pid (its number @fd) refers to what @key matches, and
 * is open for writing when @writable asks for it */
static gboolean
fd_matches(pid_t pid, const char *fd, const MapKey *key, gboolean writable)
{
    g_autofree char *link = g_strdup_printf("/proc/%d/fd/%s", (int)pid, fd);
    struct stat st;

    if (stat(link, &st) < 0)
        return FALSE;
    if (key->rdev) {
        if (!S_ISCHR(st.st_mode) || st.st_rdev != key->rdev)
            return FALSE;
    } else if (st.st_ino != key->ino || st.st_dev != key->dev) {
        return FALSE;
    }
    return !writable || fd_is_writable(pid, fd);
}

static gboolean
pid_holds(pid_t pid, const MapKey *key, gboolean writable)
{
    g_autofree char *fddir = g_strdup_printf("/proc/%d/fd", (int)pid);
    g_autoptr(GDir) dir = g_dir_open(fddir, 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        if (fd_matches(pid, name, key, writable))
            return TRUE;
    }
    return FALSE;
}

GArray *
daxfile_proc_writers(guint64 dev, guint64 ino)
{
    g_autoptr(GArray) pids = proc_pids();
    GArray *out = g_array_new(FALSE, FALSE, sizeof(pid_t));
    MapKey key = {.dev = dev, .ino = ino};
    pid_t self = getpid();
    guint i;

    for (i = 0; i < pids->len; i++) {
        pid_t pid = g_array_index(pids, pid_t, i);

        if (pid != self && pid_holds(pid, &key, TRUE))
            g_array_append_val(out, pid);
    }
    return out;
}

static gint
pid_cmp(gconstpointer a, gconstpointer b)
{
    pid_t x = *(const pid_t *)a;
    pid_t y = *(const pid_t *)b;

    return (x > y) - (x < y);
}

static GArray *
users(const MapKey *key)
{
    g_autoptr(GArray) pids = proc_pids();
    GArray *out = g_array_new(FALSE, FALSE, sizeof(DaxfileProcUser));
    pid_t self = getpid();
    guint i;

    g_array_sort(pids, pid_cmp);
    for (i = 0; i < pids->len; i++) {
        DaxfileProcUser u = {.pid = g_array_index(pids, pid_t, i)};

        if (u.pid == self)
            continue;
        if (pid_maps(u.pid, key))
            u.use |= DAXFILE_PROC_MAPS;
        if (pid_holds(u.pid, key, FALSE))
            u.use |= DAXFILE_PROC_OPEN;
        if (u.use)
            g_array_append_val(out, u);
    }
    return out;
}

GArray *
daxfile_proc_users(guint64 dev, guint64 ino)
{
    MapKey key = {.dev = dev, .ino = ino};

    return users(&key);
}

GArray *
daxfile_proc_users_rdev(dev_t rdev)
{
    MapKey key = {.rdev = rdev};

    return users(&key);
}

/* The fields of /proc/PID/stat after "pid (comm)", from "state" on */
static char **
proc_stat_fields(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *stat = NULL;
    const char *end;

    if (!g_file_get_contents(path, &stat, NULL, NULL))
        return NULL;
    /* "pid (comm) state ppid ...": comm may hold spaces and ')' */
    end = strrchr(stat, ')');
    if (!end)
        return NULL;
    return g_strsplit(g_strstrip((char *)end + 1), " ", -1);
}

/* field @n of /proc/PID/stat (1-based, as in proc(5)) as a number */
static guint64
proc_stat_u64(pid_t pid, guint n)
{
    g_auto(GStrv) f = proc_stat_fields(pid);
    guint64 v = 0;

    /* f[0] is field 3 (state) */
    if (!f || n < 3 || g_strv_length(f) <= n - 3 ||
        !g_ascii_string_to_unsigned(f[n - 3], 10, 0, G_MAXUINT64, &v, NULL))
        return 0;
    return v;
}

static pid_t
proc_ppid(pid_t pid)
{
    return (pid_t)proc_stat_u64(pid, 4);
}

guint64
daxfile_proc_start_time(pid_t pid)
{
    return proc_stat_u64(pid, 22);
}

gboolean
daxfile_proc_same(pid_t pid, guint64 start)
{
    return pid > 0 && start > 0 && daxfile_proc_start_time(pid) == start;
}

GArray *
daxfile_proc_tree(pid_t pid)
{
    g_autoptr(GArray) pids = proc_pids();
    g_autoptr(GArray) ppids =
        g_array_sized_new(FALSE, FALSE, sizeof(pid_t), pids->len);
    GArray *tree = g_array_new(FALSE, FALSE, sizeof(pid_t));
    gboolean grew = TRUE;
    guint i;

    for (i = 0; i < pids->len; i++) {
        pid_t ppid = proc_ppid(g_array_index(pids, pid_t, i));

        g_array_append_val(ppids, ppid);
    }
    g_array_append_val(tree, pid);
    while (grew) {
        grew = FALSE;
        for (i = 0; i < pids->len; i++) {
            pid_t p = g_array_index(pids, pid_t, i);

            if (!daxfile_pid_in(tree, p) &&
                daxfile_pid_in(tree, g_array_index(ppids, pid_t, i))) {
                g_array_append_val(tree, p);
                grew = TRUE;
            }
        }
    }
    return tree;
}

gboolean
daxfile_proc_alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

char *
daxfile_proc_comm(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)pid);
    char *comm = NULL;

    if (!g_file_get_contents(path, &comm, NULL, NULL))
        return g_strdup("?");
    g_strchomp(comm);
    return comm;
}

/* One VMA header of smaps: "start-end perms offset MAJ:MIN inode [path]" */
static gboolean
smaps_header(const char *line, guint64 *start, guint64 *end, char perms[5],
             guint64 *offset, guint *maj, guint *min, guint64 *ino)
{
    unsigned long long s, e, off, inode;

    if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu", &s, &e, perms, &off, maj,
               min, &inode) != 7)
        return FALSE;
    *start = s;
    *end = e;
    *offset = off;
    *ino = inode;
    return TRUE;
}

/* Does the "VmFlags: rd wr sh ..." line @line hold the flag @flag? */
static gboolean
vmflags_has(const char *line, const char *flag)
{
    g_auto(GStrv) words = g_strsplit(line + strlen("VmFlags:"), " ", -1);

    return g_strv_contains((const char *const *)words, flag);
}

static void
mapping_keep(DaxfileProcMap *best, gboolean *have, const DaxfileProcMap *cur)
{
    if (!*have) {
        *best = *cur;
        *have = TRUE;
        return;
    }
    if (cur->end - cur->start > best->end - best->start) {
        guint others = best->others + 1;

        *best = *cur;
        best->others = others;
    } else {
        best->others++;
    }
}

gboolean
daxfile_smaps_find(const char *smaps, guint64 dev, guint64 ino,
                   DaxfileProcMap *out)
{
    g_auto(GStrv) lines = g_strsplit(smaps, "\n", -1);
    DaxfileProcMap cur = {0};
    gboolean in_cur = FALSE; /* the VMA being read belongs to @cur */
    gboolean have_cur = FALSE;
    gboolean have = FALSE;
    guint i;

    memset(out, 0, sizeof(*out));
    for (i = 0; lines[i]; i++) {
        guint64 start, end, offset, inode;
        guint maj, min;
        char perms[5] = "";

        if (smaps_header(lines[i], &start, &end, perms, &offset, &maj, &min,
                         &inode)) {
            in_cur = inode == ino && maj == major(dev) && min == minor(dev);
            if (!in_cur)
                continue;
            if (have_cur && start == cur.end &&
                offset == cur.offset + (cur.end - cur.start)) {
                cur.end = end;
                cur.shared = cur.shared && perms[3] == 's';
                cur.vmas++;
                continue;
            }
            if (have_cur)
                mapping_keep(out, &have, &cur);
            cur = (DaxfileProcMap){.start = start,
                                   .end = end,
                                   .offset = offset,
                                   .shared = perms[3] == 's',
                                   .sync = TRUE,
                                   .vmas = 1};
            have_cur = TRUE;
        } else if (in_cur && g_str_has_prefix(lines[i], "VmFlags:")) {
            cur.sync = cur.sync && vmflags_has(lines[i], "sf");
        }
    }
    if (have_cur)
        mapping_keep(out, &have, &cur);
    return have;
}
