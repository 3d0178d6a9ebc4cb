/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile_smaps_find(): what the hook reads of QEMU's mapping of a file;
 * and the scans of /proc (who maps a file, who holds it open for
 * writing, a process tree, start times) over child processes of the test
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daxfile-attest.h"
#include "daxfile-json.h"
#include "daxfile-proc.h"
#include "daxfile-host-json.h"

#define DEV makedev(0xfd, 0x01)
#define INO 1234

/* one VMA: header, a few of smaps's keys, VmFlags */
#define VMA(range, perms, off, devino, flags)                                  \
    range " " perms " " off " " devino "   /mnt/pmem/vm1.img\n"                \
          "Size:               2048 kB\n"                                      \
          "Rss:                   0 kB\n"                                      \
          "THPeligible:    0\n"                                                \
          "VmFlags: " flags "\n"

static const char *const ANON =
    "7f0000000000-7f0000200000 ---p 00000000 00:00 0 \n"
    "Size:               2048 kB\n"
    "VmFlags: mr mw me sd\n";

static void
test_one_vma(void)
{
    g_autofree char *smaps =
        g_strconcat(ANON,
                    VMA("7f0000200000-7f0000600000", "rw-s", "00000000",
                        "fd:01 1234", "rd wr sh mr mw me ms sf"),
                    NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000200000);
    g_assert_cmphex(m.end, ==, 0x7f0000600000);
    g_assert_cmpuint(m.offset, ==, 0);
    g_assert_true(m.shared);
    g_assert_true(m.sync);
    g_assert_cmpuint(m.vmas, ==, 1);
    g_assert_cmpuint(m.others, ==, 0);
}

/* split by madvise: contiguous VMAs in address and offset are one
 * mapping, synchronous only if every part is */
static void
test_split_vmas(void)
{
    g_autofree char *smaps =
        g_strconcat(VMA("7f0000200000-7f0000400000", "rw-s", "00000000",
                        "fd:01 1234", "rd wr sh mr mw me ms sf hg"),
                    VMA("7f0000400000-7f0000600000", "rw-s", "00200000",
                        "fd:01 1234", "rd wr sh mr mw me ms"),
                    NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.end - m.start, ==, 0x400000);
    g_assert_cmpuint(m.vmas, ==, 2);
    g_assert_true(m.shared);
    g_assert_false(m.sync);
}

/* private; another inode and another device with the same inode number
 * are not the file; a flag merely containing "sf" does not count */
static void
test_private_and_others(void)
{
    g_autofree char *smaps =
        g_strconcat(VMA("7f0000000000-7f0000200000", "rw-s", "00000000",
                        "fd:01 999", "rd wr sh sf"),
                    VMA("7f0000200000-7f0000400000", "rw-s", "00000000",
                        "fd:02 1234", "rd wr sh sf"),
                    VMA("7f0000400000-7f0000600000", "rw-p", "00000000",
                        "fd:01 1234", "rd wr mr mw me sfx"),
                    NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000400000);
    g_assert_false(m.shared);
    g_assert_false(m.sync);
}

/* two separate mappings: the larger is reported, the other counted; a
 * gap in the file offsets is not merged */
static void
test_two_mappings(void)
{
    g_autofree char *smaps =
        g_strconcat(VMA("7f0000000000-7f0000001000", "r--s", "00000000",
                        "fd:01 1234", "rd sh mr me ms"),
                    VMA("7f0000200000-7f0000400000", "rw-s", "00000000",
                        "fd:01 1234", "rd wr sh mr mw me ms sf"),
                    VMA("7f0000400000-7f0000600000", "rw-s", "00400000",
                        "fd:01 1234", "rd wr sh mr mw me ms sf"),
                    NULL);
    DaxfileProcMap m;

    g_assert_true(daxfile_smaps_find(smaps, DEV, INO, &m));
    g_assert_cmphex(m.start, ==, 0x7f0000200000);
    g_assert_cmphex(m.end, ==, 0x7f0000400000);
    g_assert_cmpuint(m.vmas, ==, 1);
    g_assert_cmpuint(m.others, ==, 2);
}

static void
test_not_mapped(void)
{
    DaxfileProcMap m;

    g_assert_false(daxfile_smaps_find(ANON, DEV, INO, &m));
    g_assert_false(daxfile_smaps_find("", DEV, INO, &m));
    g_assert_false(daxfile_smaps_find("garbage\nVmFlags: sf\n", DEV, INO, &m));
}

/* this process's own mapping of a file, read from its smaps */
static void
test_self(void)
{
    g_autofree char *path = NULL;
    g_autoptr(GError) error = NULL;
    int fd = g_file_open_tmp("daxfile-test-proc-XXXXXX", &path, &error);
    struct stat st;
    DaxfileProcMap m;
    char *smaps;
    void *addr;

    g_assert_no_error(error);
    g_assert_cmpint(ftruncate(fd, 1 << 20), ==, 0);
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    addr = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(addr != MAP_FAILED);
    smaps = daxfile_attest_read_smaps(getpid(), &error);
    g_assert_no_error(error);
    g_assert_true(daxfile_smaps_find(smaps, st.st_dev, st.st_ino, &m));
    g_free(smaps);
    g_assert_cmphex(m.start, ==, (guintptr)addr);
    g_assert_cmphex(m.end - m.start, ==, 1 << 20);
    g_assert_true(m.shared);
    g_assert_false(m.sync); /* no MAP_SYNC asked for */
    munmap(addr, 1 << 20);
    smaps = daxfile_attest_read_smaps(getpid(), &error);
    g_assert_no_error(error);
    g_assert_false(daxfile_smaps_find(smaps, st.st_dev, st.st_ino, &m));
    g_free(smaps);
    close(fd);
    unlink(path);
}

/* A child of the test that did @what to the file @path (or, for
 * CHILD_FORK, made a child of its own) and waits, until child_stop() */
typedef enum {
    CHILD_MAP,    /* maps @path shared */
    CHILD_MAPPED, /* maps @path shared and closes its descriptor */
    CHILD_READ,   /* holds @path open read-only */
    CHILD_WRITE,  /* holds @path open write-only */
    CHILD_FORK,   /* has a child of its own, waiting too */
    CHILD_RENAME, /* calls itself "x) 1 2 (y" */
} ChildWhat;

typedef struct {
    pid_t pid;
    int go; /* closing it ends the child (and its child) */
} Child;

static void G_GNUC_NORETURN
child_main(ChildWhat what, const char *path, int ready, int go)
{
    char c;
    int fd = -1;
    pid_t grandchild = -1;

    /* the other children's pipes: each must end when its own closes */
    for (fd = 3; fd < 1024; fd++) {
        if (fd != ready && fd != go)
            close(fd);
    }
    fd = -1;
    if (what == CHILD_MAP || what == CHILD_MAPPED || what == CHILD_READ)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    else if (what == CHILD_WRITE)
        fd = open(path, O_WRONLY | O_CLOEXEC);
    if ((what == CHILD_MAP || what == CHILD_MAPPED) &&
        (fd < 0 ||
         mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED))
        _exit(1);
    if (what == CHILD_MAPPED)
        close(fd);
    if (what == CHILD_FORK && (grandchild = fork()) == 0) {
        close(ready);
        while (read(go, &c, 1) > 0)
            ;
        _exit(0);
    }
    if (what == CHILD_RENAME)
        prctl(PR_SET_NAME, "x) 1 2 (y", 0, 0, 0);
    if (write(ready, "r", 1) != 1)
        _exit(1);
    while (read(go, &c, 1) > 0)
        ;
    if (grandchild > 0)
        waitpid(grandchild, NULL, 0);
    _exit(0);
}

static Child
child_start(ChildWhat what, const char *path)
{
    int ready[2], go[2];
    Child child;
    char c = 0;

    g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
    g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
    child.pid = fork();
    g_assert_cmpint(child.pid, >=, 0);
    if (child.pid == 0) {
        close(ready[0]);
        close(go[1]);
        child_main(what, path, ready[1], go[0]);
    }
    close(ready[1]);
    close(go[0]);
    child.go = go[1];
    g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
    close(ready[0]);
    return child;
}

/* End the child and reap it: its pid no longer names a process */
static void
child_stop(Child *child)
{
    int status = -1;

    close(child->go);
    g_assert_cmpint(waitpid(child->pid, &status, 0), ==, child->pid);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* A scratch file: its path, device and inode */
static char *
scratch_file(struct stat *st)
{
    g_autoptr(GError) error = NULL;
    char *path = NULL;
    int fd = g_file_open_tmp("daxfile-test-proc-XXXXXX", &path, &error);

    g_assert_no_error(error);
    g_assert_cmpint(ftruncate(fd, 4096), ==, 0);
    g_assert_cmpint(fstat(fd, st), ==, 0);
    close(fd);
    return path;
}

/* Who maps a file: the child that does, not this process nor the child
 * that only opened it; nobody once the child is gone */
static void
test_mappers(void)
{
    struct stat st;
    g_autofree char *path = scratch_file(&st);
    Child mapper = child_start(CHILD_MAP, path);
    Child reader = child_start(CHILD_READ, path);
    g_autoptr(GArray) pids = daxfile_proc_mappers(st.st_dev, st.st_ino);
    g_autoptr(GArray) after = NULL;

    g_assert_cmpuint(pids->len, ==, 1);
    g_assert_cmpint(g_array_index(pids, pid_t, 0), ==, mapper.pid);
    g_assert_true(daxfile_proc_maps_inode(mapper.pid, st.st_dev, st.st_ino));
    g_assert_false(daxfile_proc_maps_inode(reader.pid, st.st_dev, st.st_ino));
    g_assert_false(daxfile_proc_maps_inode(getpid(), st.st_dev, st.st_ino));
    g_assert_false(
        daxfile_proc_maps_inode(mapper.pid, st.st_dev, st.st_ino + 1));
    child_stop(&mapper);
    child_stop(&reader);
    after = daxfile_proc_mappers(st.st_dev, st.st_ino);
    g_assert_cmpuint(after->len, ==, 0);
    unlink(path);
}

/* Who holds a file open for writing: the writer, not the reader, and
 * not the calling process whatever it holds */
static void
test_writers(void)
{
    struct stat st;
    g_autofree char *path = scratch_file(&st);
    int own = open(path, O_RDWR | O_CLOEXEC);
    Child writer = child_start(CHILD_WRITE, path);
    Child reader = child_start(CHILD_READ, path);
    g_autoptr(GArray) pids = daxfile_proc_writers(st.st_dev, st.st_ino);
    g_autoptr(GArray) after = NULL;

    g_assert_cmpint(own, >=, 0);
    g_assert_cmpuint(pids->len, ==, 1);
    g_assert_true(daxfile_pid_in(pids, writer.pid));
    g_assert_false(daxfile_pid_in(pids, reader.pid));
    g_assert_false(daxfile_pid_in(pids, getpid()));
    child_stop(&writer);
    child_stop(&reader);
    after = daxfile_proc_writers(st.st_dev, st.st_ino);
    g_assert_cmpuint(after->len, ==, 0);
    close(own);
    unlink(path);
}

static guint
use_of(GArray *users, pid_t pid)
{
    guint i;

    for (i = 0; i < users->len; i++) {
        const DaxfileProcUser *u = &g_array_index(users, DaxfileProcUser, i);

        if (u->pid == pid)
            return u->use;
    }
    return 0;
}

/* Who uses a file, for a wipe: a process that only maps it, one that
 * only holds it open (read-only), one that does both; never the calling
 * process, whatever it holds; nobody once they are gone. A character
 * device is found by its device number, whatever node names it. */
static void
test_users(void)
{
    struct stat st, null;
    g_autofree char *path = scratch_file(&st);
    int own = open(path, O_RDWR | O_CLOEXEC);
    Child mapped = child_start(CHILD_MAPPED, path);
    Child reader = child_start(CHILD_READ, path);
    Child both = child_start(CHILD_MAP, path);
    Child dev = child_start(CHILD_READ, "/dev/null");
    g_autoptr(GArray) users = daxfile_proc_users(st.st_dev, st.st_ino);
    g_autoptr(GArray) devs = NULL;
    g_autoptr(GArray) after = NULL;

    g_assert_cmpint(own, >=, 0);
    g_assert_cmpint(stat("/dev/null", &null), ==, 0);
    g_assert_cmpuint(users->len, ==, 3);
    g_assert_cmpuint(use_of(users, mapped.pid), ==, DAXFILE_PROC_MAPS);
    g_assert_cmpuint(use_of(users, reader.pid), ==, DAXFILE_PROC_OPEN);
    g_assert_cmpuint(use_of(users, both.pid), ==,
                     DAXFILE_PROC_MAPS | DAXFILE_PROC_OPEN);
    g_assert_cmpuint(use_of(users, getpid()), ==, 0);
    devs = daxfile_proc_users_rdev(null.st_rdev);
    g_assert_cmpuint(use_of(devs, dev.pid), ==, DAXFILE_PROC_OPEN);
    child_stop(&mapped);
    child_stop(&reader);
    child_stop(&both);
    child_stop(&dev);
    after = daxfile_proc_users(st.st_dev, st.st_ino);
    g_assert_cmpuint(after->len, ==, 0);
    close(own);
    unlink(path);
}

/* A process and its descendants, found by their parents in /proc */
static void
test_tree(void)
{
    Child parent = child_start(CHILD_FORK, NULL);
    Child other = child_start(CHILD_READ, "/dev/null");
    g_autoptr(GArray) tree = daxfile_proc_tree(parent.pid);
    g_autoptr(GArray) mine = daxfile_proc_tree(getpid());
    g_autoptr(GArray) alone = daxfile_proc_tree(other.pid);

    g_assert_cmpuint(tree->len, ==, 2);
    g_assert_cmpint(g_array_index(tree, pid_t, 0), ==, parent.pid);
    g_assert_true(daxfile_pid_in(mine, getpid()));
    g_assert_true(daxfile_pid_in(mine, parent.pid));
    g_assert_true(daxfile_pid_in(mine, other.pid));
    g_assert_true(daxfile_pid_in(mine, g_array_index(tree, pid_t, 1)));
    g_assert_cmpuint(mine->len, >=, 4);
    g_assert_cmpuint(alone->len, ==, 1);
    g_assert_cmpint(g_array_index(alone, pid_t, 0), ==, other.pid);
    child_stop(&parent);
    child_stop(&other);
}

/* /proc/PID/stat read past a name with spaces and parentheses: the start
 * time names the process while it lives, and only it */
static void
test_stat(void)
{
    Child child = child_start(CHILD_RENAME, NULL);
    pid_t pid = child.pid;
    g_autofree char *comm = daxfile_proc_comm(pid);
    g_autofree char *gone = NULL;
    guint64 start = daxfile_proc_start_time(pid);
    guint64 own = daxfile_proc_start_time(getpid());
    g_autoptr(GArray) tree = daxfile_proc_tree(getpid());

    g_assert_cmpstr(comm, ==, "x) 1 2 (y");
    g_assert_cmpuint(own, >, 0);
    g_assert_cmpuint(start, >=, own);
    /* its parent (field 4, after the name) is this process */
    g_assert_true(daxfile_pid_in(tree, pid));
    g_assert_true(daxfile_proc_alive(pid));
    g_assert_true(daxfile_proc_same(pid, start));
    g_assert_false(daxfile_proc_same(pid, start + 1));
    g_assert_false(daxfile_proc_same(pid, 0));
    g_assert_false(daxfile_proc_same(0, start));
    child_stop(&child);
    g_assert_false(daxfile_proc_alive(pid));
    g_assert_cmpuint(daxfile_proc_start_time(pid), ==, 0);
    g_assert_false(daxfile_proc_same(pid, start));
    gone = daxfile_proc_comm(pid);
    g_assert_cmpstr(gone, ==, "?");
    g_assert_false(daxfile_proc_alive(0));
    g_assert_false(daxfile_proc_alive(-1));
}

static void
test_pid_in(void)
{
    g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
    pid_t some[] = {7, 42};

    g_assert_false(daxfile_pid_in(NULL, 7));
    g_assert_false(daxfile_pid_in(pids, 7));
    g_array_append_vals(pids, some, G_N_ELEMENTS(some));
    g_assert_true(daxfile_pid_in(pids, 7));
    g_assert_true(daxfile_pid_in(pids, 42));
    g_assert_false(daxfile_pid_in(pids, 8));
}

static void
test_mapping_json(void)
{
    DaxfileProcMap m = {.start = 0x200000,
                        .end = 0x600000,
                        .offset = 4096,
                        .shared = TRUE,
                        .sync = FALSE,
                        .vmas = 2,
                        .others = 1};
    g_autoptr(JsonNode) node = daxfile_mapping_to_json(&m);
    g_autofree char *text = daxfile_json_to_string(node);

    g_assert_cmpstr(text, ==,
                    "{\n  \"start\" : 2097152,\n  \"end\" : 6291456,\n"
                    "  \"offset\" : 4096,\n  \"shared\" : true,\n"
                    "  \"sync\" : false,\n  \"vmas\" : 2,\n"
                    "  \"others\" : 1\n}\n");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/proc/smaps/one-vma", test_one_vma);
    g_test_add_func("/proc/smaps/split-vmas", test_split_vmas);
    g_test_add_func("/proc/smaps/private-and-others", test_private_and_others);
    g_test_add_func("/proc/smaps/two-mappings", test_two_mappings);
    g_test_add_func("/proc/smaps/not-mapped", test_not_mapped);
    g_test_add_func("/proc/smaps/self", test_self);
    g_test_add_func("/proc/smaps/to-json", test_mapping_json);
    g_test_add_func("/proc/scan/mappers", test_mappers);
    g_test_add_func("/proc/scan/writers", test_writers);
    g_test_add_func("/proc/scan/users", test_users);
    g_test_add_func("/proc/scan/tree", test_tree);
    g_test_add_func("/proc/scan/stat", test_stat);
    g_test_add_func("/proc/pid-in", test_pid_in);
    return g_test_run();
}
