/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry: load, save, what a crash leaves, locks. Every test has a
 * state directory of its own (DAXFILE_STATE_DIR) under a temp directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-registry.h"
#include "daxfile-test-util.h"

static const char *tmp;

/* A fresh state directory, named after the running test; its lib/ dir */
static char *
state_new(void)
{
    g_autofree char *name = g_strdelimit(g_strdup(g_test_get_path()), "/", '-');
    g_autofree char *dir = g_build_filename(tmp, name, NULL);

    g_setenv("DAXFILE_STATE_DIR", dir, TRUE);
    return g_build_filename(dir, "lib", NULL);
}

static char *
registry_file(const char *lib)
{
    return g_build_filename(lib, "registry.json", NULL);
}

static void
write_file(const char *path, const char *text)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_assert_true(g_file_set_contents(path, text, -1, &error));
}

/* An entry with every field set */
static DaxfileEntry *
entry_new(const char *path, guint64 ino, const char *owner)
{
    DaxfileEntry *e = g_new0(DaxfileEntry, 1);

    e->path = g_strdup(path);
    e->dev = 2049;
    e->ino = ino;
    e->state = DAXFILE_STATE_ENGAGED;
    e->mechanism = DAXFILE_MECH_IMMUTABLE;
    e->owner = g_strdup(owner);
    e->owner_uuid = g_strdup("11111111-2222-3333-4444-555555555555");
    e->device = g_strdup("nvdimm");
    e->pid = 0;
    e->align = 2 << 20;
    e->fingerprint = g_strdup("sha256:0123abcd");
    e->since = g_strdup("2024-01-02T03:04:05Z");
    e->boot_id = g_strdup("0d5e1f54-0000-4000-8000-000000000001");
    e->flag_set = TRUE;
    e->handle = g_strdup("1:0a0b0c0d");
    e->fsid = g_strdup("abcd0123");
    e->fs_uuid = g_strdup("94aba22a3d254416bca5d39b7b871b93");
    return e;
}

/* Save @reg, close it (which drops its lock) and open it again */
static void
reopen(DaxfileRegistry **reg)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(daxfile_registry_save(*reg, &error));
    g_assert_no_error(error);
    daxfile_registry_free(*reg);
    *reg = daxfile_registry_open(&error);
    g_assert_no_error(error);
}

static void
assert_entry_equal(const DaxfileEntry *a, const DaxfileEntry *b)
{
    g_assert_cmpstr(a->path, ==, b->path);
    g_assert_cmpuint(a->dev, ==, b->dev);
    g_assert_cmpuint(a->ino, ==, b->ino);
    g_assert_cmpint(a->state, ==, b->state);
    g_assert_cmpint(a->mechanism, ==, b->mechanism);
    g_assert_cmpstr(a->owner, ==, b->owner);
    g_assert_cmpstr(a->owner_uuid, ==, b->owner_uuid);
    g_assert_cmpstr(a->device, ==, b->device);
    g_assert_cmpint(a->pid, ==, b->pid);
    g_assert_cmpuint(a->align, ==, b->align);
    g_assert_cmpstr(a->fingerprint, ==, b->fingerprint);
    g_assert_cmpstr(a->since, ==, b->since);
    g_assert_cmpstr(a->boot_id, ==, b->boot_id);
    g_assert_cmpint(a->flag_set, ==, b->flag_set);
    g_assert_cmpstr(a->handle, ==, b->handle);
    g_assert_cmpstr(a->fsid, ==, b->fsid);
    g_assert_cmpstr(a->fs_uuid, ==, b->fs_uuid);
    g_assert_cmpint(a->holder_pid, ==, b->holder_pid);
    g_assert_cmpuint(a->holder_start, ==, b->holder_start);
}

/* No registry yet: empty, its directories made private, and nothing is
 * written until something changes */
static void
test_empty(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *run = daxfile_state_run_dir();
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    struct stat st;

    g_assert_no_error(error);
    g_assert_cmpuint(daxfile_registry_entries(reg)->len, ==, 0);
    g_assert_null(daxfile_registry_lookup(reg, 2049, 12));
    g_assert_cmpint(stat(lib, &st), ==, 0);
    g_assert_cmphex(st.st_mode & 07777, ==, 0700);
    g_assert_cmpint(stat(run, &st), ==, 0);
    g_assert_cmphex(st.st_mode & 07777, ==, 0700);
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_no_error(error);
    g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS));
}

/* DAXFILE_STATE_DIR puts both directories under it */
static void
test_dirs(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *state = g_path_get_dirname(lib);
    g_autofree char *want_run = g_build_filename(state, "run", NULL);
    g_autofree char *run = daxfile_state_run_dir();
    g_autofree char *got_lib = daxfile_state_lib_dir();

    g_assert_cmpstr(run, ==, want_run);
    g_assert_cmpstr(got_lib, ==, lib);
    g_setenv("DAXFILE_STATE_DIR", "", TRUE);
    g_free(run);
    run = daxfile_state_run_dir();
    g_assert_false(g_str_has_prefix(run, state));
    g_assert_true(g_str_has_suffix(run, "daxfile"));
}

/* Saved and loaded again: every field, in insertion order, a path that is
 * not UTF-8 byte for byte; the file as the golden one, mode 0600, no
 * temporary file left */
static void
test_round_trip(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *tmpfile = g_strconcat(file, ".tmp", NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    g_autoptr(DaxfileEntry) a =
        entry_new("/mnt/pmem/vm1.img", 12, "domain:vm1");
    g_autoptr(DaxfileEntry) b =
        entry_new("/mnt/pmem/caf\xe9.img", 13, "domain:vm2");
    GPtrArray *entries;
    struct stat st;

    g_assert_no_error(error);
    b->state = DAXFILE_STATE_RESERVED;
    b->mechanism = DAXFILE_MECH_NONE;
    b->device = NULL;
    b->holder_pid = 4321;
    b->holder_start = 987654;
    daxfile_registry_put(reg, daxfile_entry_copy(a));
    daxfile_registry_put(reg, daxfile_entry_copy(b));
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_no_error(error);
    g_assert_cmpint(stat(file, &st), ==, 0);
    g_assert_cmphex(st.st_mode & 07777, ==, 0600);
    g_assert_false(g_file_test(tmpfile, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_get_contents(file, &text, NULL, &error));
    daxfile_test_golden("registry/two-entries.json", text);

    reopen(&reg);
    entries = daxfile_registry_entries(reg);
    g_assert_cmpuint(entries->len, ==, 2);
    assert_entry_equal(g_ptr_array_index(entries, 0), a);
    assert_entry_equal(g_ptr_array_index(entries, 1), b);
    g_assert_true(daxfile_registry_lookup(reg, 2049, 13) ==
                  g_ptr_array_index(entries, 1));
}

/* A registry of version 1 (before fs_uuid) is read as it is, and the
 * next change writes it back as version 2, its entries still without a
 * UUID (what the file does not say is not made up) */
static void
test_version_1(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *old = g_test_build_filename(
        G_TEST_DIST, "data", "registry", "version-1.json", NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    DaxfileEntry *e;

    g_assert_true(g_file_get_contents(old, &text, NULL, &error));
    write_file(file, text);
    g_clear_pointer(&text, g_free);
    reg = daxfile_registry_open(&error);
    g_assert_no_error(error);
    e = daxfile_registry_lookup(reg, 2049, 12);
    g_assert_nonnull(e);
    g_assert_cmpstr(e->fsid, ==, "abcd0123");
    g_assert_null(e->fs_uuid);
    g_assert_cmpstr(e->handle, ==, "1:0a0b0c0d");
    daxfile_registry_touch(reg);
    reopen(&reg);
    g_assert_true(g_file_get_contents(file, &text, NULL, &error));
    g_assert_nonnull(strstr(text, "\"version\" : 2"));
    g_assert_null(daxfile_registry_lookup(reg, 2049, 12)->fs_uuid);
}

/* A registry of a version this daxfile does not know is refused, in one
 * line naming it, and left as it is */
static void
test_version_newer(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    const char *newer = "{\"version\": 3, \"entries\": []}";

    write_file(file, newer);
    reg = daxfile_registry_open(&error);
    g_assert_null(reg);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, file));
    g_assert_nonnull(strstr(error->message, "version 3"));
    g_assert_nonnull(strstr(error->message, "; fix: "));
    g_assert_null(strchr(error->message, '\n'));
    g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, newer);
}

/* put replaces the entry of the same inode; remove; each change saved */
static void
test_put_remove(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);

    g_assert_no_error(error);
    daxfile_registry_put(reg, entry_new("/a.img", 12, "domain:vm1"));
    daxfile_registry_put(reg, entry_new("/b.img", 13, "domain:vm1"));
    daxfile_registry_put(reg, entry_new("/a.img", 12, "domain:vm3"));
    g_assert_cmpuint(daxfile_registry_entries(reg)->len, ==, 2);
    g_assert_cmpstr(daxfile_registry_lookup(reg, 2049, 12)->owner, ==,
                    "domain:vm3");
    g_assert_null(daxfile_registry_lookup(reg, 2050, 12));
    g_assert_true(daxfile_registry_remove(reg, 2049, 13));
    g_assert_false(daxfile_registry_remove(reg, 2049, 13));
    reopen(&reg);
    g_assert_cmpuint(daxfile_registry_entries(reg)->len, ==, 1);
    g_assert_cmpstr(daxfile_registry_lookup(reg, 2049, 12)->owner, ==,
                    "domain:vm3");
    /* an entry edited in place is saved once touched */
    g_free(daxfile_registry_lookup(reg, 2049, 12)->owner);
    daxfile_registry_lookup(reg, 2049, 12)->owner = g_strdup("pid:7");
    daxfile_registry_touch(reg);
    g_assert_false(daxfile_registry_remove(reg, 2049, 99));
    g_assert_true(daxfile_registry_save(reg, &error));
    g_assert_true(g_file_get_contents(file, &text, NULL, &error));
    g_assert_nonnull(strstr(text, "\"owner\" : \"pid:7\""));
    g_assert_true(daxfile_registry_remove(reg, 2049, 12));
    reopen(&reg);
    g_assert_cmpuint(daxfile_registry_entries(reg)->len, ==, 0);
    g_assert_true(g_file_test(file, G_FILE_TEST_EXISTS));
}

/* A save killed before its rename leaves registry.json.tmp: the registry
 * is the one before it, and the next open removes the leftover */
static void
test_recover_tmp(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *file = registry_file(lib);
    g_autofree char *tmpfile = g_strconcat(file, ".tmp", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = NULL;
    DaxfileEntry *e;

    write_file(
        file,
        "{\"version\": 1, \"entries\": [{\"path\": \"/x.img\", \"dev\": 5, \"ino\": 6, \"state\": \"engaging\", \"mechanism\": \"kernel\", \"owner\": \"pid:9\"}]}");
    write_file(tmpfile, "{\"version\": 1, \"entr");
    reg = daxfile_registry_open(&error);
    g_assert_no_error(error);
    g_assert_cmpuint(daxfile_registry_entries(reg)->len, ==, 1);
    e = daxfile_registry_lookup(reg, 5, 6);
    g_assert_nonnull(e);
    g_assert_cmpstr(e->path, ==, "/x.img");
    g_assert_cmpint(e->state, ==, DAXFILE_STATE_ENGAGING);
    g_assert_cmpint(e->mechanism, ==, DAXFILE_MECH_KERNEL);
    g_assert_cmpstr(e->owner, ==, "pid:9");
    /* what the file leaves out has its default */
    g_assert_null(e->boot_id);
    g_assert_false(e->flag_set);
    g_assert_cmpint(e->holder_pid, ==, 0);
    g_assert_false(g_file_test(tmpfile, G_FILE_TEST_EXISTS));
}

/* A registry that cannot be read refuses to open, saying what to do */
static void
test_corrupt(void)
{
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"{\"entries\": [", "; fix: move it aside and run 'daxfile repair'"},
        {"[]", ": not a daxfile registry"},
        {"{\"version\": 1}", ": not a daxfile registry"},
        {"{\"entries\": [1]}", ": entry 0 is malformed"},
        {"{\"entries\": [{\"path\": \"/a\", \"state\": \"engaged\", \"mechanism\": \"none\"}, {\"path\": \"/b\", \"state\": \"frozen\", \"mechanism\": \"none\"}]}",
         ": entry 1 is malformed"},
        {"{\"entries\": [{\"path\": \"/a\", \"state\": \"engaged\", \"mechanism\": \"glue\"}]}",
         ": entry 0 is malformed"},
        {"{\"entries\": [{\"state\": \"engaged\", \"mechanism\": \"none\"}]}",
         ": entry 0 is malformed"},
    };
    guint i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *lib = state_new();
        g_autofree char *file = registry_file(lib);
        g_autofree char *want =
            g_strdup_printf("Cannot read the registry '%s'", file);
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileRegistry) reg = NULL;

        write_file(file, cases[i].text);
        reg = daxfile_registry_open(&error);
        g_assert_null(reg);
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_FAILED);
        g_assert_true(g_str_has_prefix(error->message, want));
        g_assert_nonnull(strstr(error->message, cases[i].message));
    }
}

/* An open registry holds registry.lock until it is freed */
static void
test_lock(void)
{
    g_autofree char *lib = state_new();
    g_autofree char *run = daxfile_state_run_dir();
    g_autofree char *lock = g_build_filename(run, "registry.lock", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    int fd;

    g_assert_no_error(error);
    fd = open(lock, O_RDWR | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, -1);
    g_assert_cmpint(errno, ==, EWOULDBLOCK);
    g_clear_pointer(&reg, daxfile_registry_free);
    g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, 0);
    close(fd);
}

/* One operation per inode: a second lock of the same inode is BUSY, and
 * free again once the first is closed */
static void
test_lock_inode(void)
{
    g_autofree char *lib = state_new();
    g_autoptr(GError) error = NULL;
    int first = daxfile_registry_lock_inode(2049, 12, "/a.img", FALSE, &error);
    int other = daxfile_registry_lock_inode(2049, 13, "/b.img", FALSE, &error);
    int again;

    g_assert_no_error(error);
    g_assert_cmpint(first, >=, 0);
    g_assert_cmpint(other, >=, 0);
    again = daxfile_registry_lock_inode(2049, 12, "/a.img", FALSE, &error);
    g_assert_cmpint(again, ==, -1);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    g_assert_cmpstr(
        error->message, ==,
        "'/a.img' is busy: another daxfile operation on it is in progress; fix: try again");
    g_clear_error(&error);
    close(first);
    again = daxfile_registry_lock_inode(2049, 12, "/a.img", FALSE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(again, >=, 0);
    close(again);
    close(other);
}

static void
test_names(void)
{
    static const char *const mechs[] = {"none", "kernel", "immutable-guard",
                                        "verified-only", "device-dax"};
    static const char *const states[] = {"reserved", "engaging", "engaged",
                                         "releasing"};
    DaxfileMechanism m = DAXFILE_MECH_NONE;
    guint i;

    for (i = 0; i < G_N_ELEMENTS(mechs); i++) {
        g_assert_cmpstr(daxfile_mechanism_to_string(i), ==, mechs[i]);
        g_assert_true(daxfile_mechanism_from_string(mechs[i], &m));
        g_assert_cmpint(m, ==, i);
    }
    g_assert_false(daxfile_mechanism_from_string("immutable", &m));
    g_assert_false(daxfile_mechanism_from_string("", &m));
    g_assert_false(daxfile_mechanism_from_string(NULL, &m));
    for (i = 0; i < G_N_ELEMENTS(states); i++)
        g_assert_cmpstr(daxfile_entry_state_to_string(i), ==, states[i]);
}

/* An entry of another boot (or of none) is stale */
static void
test_stale(void)
{
    g_autoptr(DaxfileEntry) e = entry_new("/a.img", 12, "domain:vm1");

    g_assert_true(daxfile_entry_is_stale(e));
    g_free(e->boot_id);
    e->boot_id = g_strdup(daxfile_boot_id());
    g_assert_false(daxfile_entry_is_stale(e));
    g_clear_pointer(&e->boot_id, g_free);
    g_assert_true(daxfile_entry_is_stale(e));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tmp = daxfile_test_scratch("registry");
    g_test_add_func("/registry/empty", test_empty);
    g_test_add_func("/registry/dirs", test_dirs);
    g_test_add_func("/registry/round-trip", test_round_trip);
    g_test_add_func("/registry/put-remove", test_put_remove);
    g_test_add_func("/registry/version-1", test_version_1);
    g_test_add_func("/registry/version-newer", test_version_newer);
    g_test_add_func("/registry/recover/leftover-tmp", test_recover_tmp);
    g_test_add_func("/registry/recover/corrupt", test_corrupt);
    g_test_add_func("/registry/lock", test_lock);
    g_test_add_func("/registry/lock-inode", test_lock_inode);
    g_test_add_func("/registry/names", test_names);
    g_test_add_func("/registry/stale", test_stale);
    return daxfile_test_run();
}
