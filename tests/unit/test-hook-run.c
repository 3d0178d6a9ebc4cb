/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile_hook_run(): which operations act and which refuse, in process.
 *
 * Most cases replay a pair of tests/data/hooks (the input NAME.xml, the
 * expected NAME.out that tests/hooks/test-hook.py compares the binary's
 * output with) on the library: the same decision, the same message, the
 * same notes and rewritten XML, and the error code the binary does not
 * show. The placeholders are filled in as test-hook.py does; the scratch
 * directory holds the managed root (@TMP@/pmem), the registry
 * (DAXFILE_STATE_DIR) and the files the cases need. Nothing here runs
 * QEMU or engages static mode.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-hook.h"
#include "daxfile-registry.h"
#include "daxfile-test-util.h"
#include "daxfile-wipes.h"

#define M (G_GUINT64_CONSTANT(1) << 20)

static const char *tmp;  /* @TMP@ */
static const char *root; /* @TMP@/pmem, the managed root */

/* @text with the placeholders of tests/data/hooks filled in */
static char *
fill_in(const char *text)
{
    GString *s = g_string_new(text);

    g_string_replace(s, "@TMP@", tmp, 0);
    g_string_replace(s, "@RELTMP@", tmp + 1, 0);
    if (strstr(text, "@PADDING@")) {
        g_autofree char *padding = g_strnfill(17 << 20, 'x');

        g_string_replace(s, "@PADDING@", padding, 0);
    }
    return g_string_free(s, FALSE);
}

static char *
data_file(const char *name, const char *suffix)
{
    g_autofree char *base = g_strconcat(name, suffix, NULL);
    g_autofree char *path =
        g_test_build_filename(G_TEST_DIST, "data", "hooks", base, NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, &error));
    g_assert_no_error(error);
    return fill_in(text);
}

/* What NAME.out expects: exit status, stdout, the error (without
 * "daxfile: ") or NULL, the notes joined by newlines or NULL */
typedef struct {
    int rc;
    char *out;
    char *message;
    char *notes;
} Expected;

static void
expected_clear(Expected *e)
{
    g_free(e->out);
    g_free(e->message);
    g_free(e->notes);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Expected, expected_clear)

static void
expected_read(const char *name, Expected *e)
{
    g_autofree char *text = data_file(name, ".out");
    const char *out = strstr(text, "\n--- stdout\n");
    const char *err = strstr(text, "--- stderr\n");
    g_auto(GStrv) lines = NULL;
    g_autoptr(GString) notes = g_string_new(NULL);
    g_autofree char *rc = NULL;
    gint64 value = -1;
    guint i;

    g_assert_true(g_str_has_prefix(text, "rc: "));
    g_assert_nonnull(out);
    g_assert_nonnull(err);
    rc = g_strndup(text + strlen("rc: "), out - text - strlen("rc: "));
    g_assert_true(g_ascii_string_to_signed(rc, 10, 0, 255, &value, NULL));
    e->rc = (int)value;
    out += strlen("\n--- stdout\n");
    e->out = out < err ? g_strndup(out, err - out) : NULL;
    lines = g_strsplit(err + strlen("--- stderr\n"), "\n", -1);
    for (i = 0; lines[i] && *lines[i]; i++) {
        if (g_str_has_prefix(lines[i], "daxfile: note: ")) {
            g_string_append_printf(notes, "%s%s", notes->len ? "\n" : "",
                                   lines[i] + strlen("daxfile: note: "));
            continue;
        }
        g_assert_true(g_str_has_prefix(lines[i], "daxfile: "));
        g_assert_null(e->message);
        e->message = g_strdup(lines[i] + strlen("daxfile: "));
    }
    e->notes = notes->len ? g_strdup(notes->str) : NULL;
}

static DaxfileConf *
conf_new(const char *extra)
{
    g_autofree char *text =
        g_strdup_printf("[hook]\nmanaged_roots=%s\nallow_non_dax=true\n"
                        "trusted_owners=root;%u\nqemu_pid_dir=%s/qemu\n%s",
                        root, (unsigned)getuid(), tmp, extra);
    g_autofree char *path = g_build_filename(tmp, "daxfile.conf", NULL);
    g_autoptr(GError) error = NULL;
    DaxfileConf *conf =
        daxfile_conf_load_data(text, strlen(text), path, &error);

    g_assert_no_error(error);
    return conf;
}

/* The hook: @op @subop with the domain XML @xml */
static gboolean
hook(const DaxfileConf *conf, const char *op, const char *subop,
     const char *xml, char **ret_out, char **ret_notes, GError **error)
{
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    DaxfileHookCall call = {.object = "vm1",
                            .op = op,
                            .subop = subop,
                            .xml = xml,
                            .xml_len = xml ? strlen(xml) : 0};
    gboolean ok;

    ok = daxfile_hook_run(&call, conf, ret_out, notes, error);
    g_ptr_array_add(notes, NULL);
    *ret_notes =
        notes->len > 1 ? g_strjoinv("\n", (char **)notes->pdata) : NULL;
    return ok;
}

/* "owner state mechanism" of every registry entry, one a line */
static char *
registry(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileRegistry) reg = daxfile_registry_open(&error);
    g_autoptr(GString) s = g_string_new(NULL);
    GPtrArray *entries;
    guint i;

    g_assert_no_error(error);
    entries = daxfile_registry_entries(reg);
    for (i = 0; i < entries->len; i++) {
        const DaxfileEntry *e = g_ptr_array_index(entries, i);

        g_string_append_printf(s, "%s %s %s\n", e->owner,
                               daxfile_entry_state_to_string(e->state),
                               daxfile_mechanism_to_string(e->mechanism));
    }
    return g_strdup(s->str);
}

/* One golden case replayed: the hook runs @op @subop on NAME.xml (or on
 * @input.xml) and decides as NAME.out says, failing with @code */
typedef struct {
    const char *name;
    const char *op;
    const char *subop;
    const char *input;
    DaxfileErrorCode code;
} Replay;

static void
replay(const DaxfileConf *conf, const Replay *r)
{
    g_autofree char *xml = data_file(r->input ? r->input : r->name, ".xml");
    g_autofree char *out = NULL;
    g_autofree char *notes = NULL;
    g_autoptr(GError) error = NULL;
    g_auto(Expected) want = {0};
    gboolean ok =
        hook(conf, r->op ? r->op : "prepare", r->subop ? r->subop : "begin",
             xml, &out, &notes, &error);

    expected_read(r->name, &want);
    g_assert_cmpstr(notes, ==, want.notes);
    g_assert_cmpstr(out, ==, want.out);
    if (want.rc == 0) {
        g_assert_no_error(error);
        g_assert_true(ok);
        return;
    }
    g_assert_cmpint(want.rc, ==, 1);
    g_assert_false(ok);
    g_assert_error(error, DAXFILE_ERROR, (gint)r->code);
    g_assert_cmpstr(error->message, ==, want.message);
}

/* A case that needs no state: replayed, and nothing is registered */
static void
test_replay(gconstpointer data)
{
    g_autoptr(DaxfileConf) conf = conf_new("");
    g_autofree char *reg = NULL;

    replay(conf, data);
    reg = registry();
    g_assert_cmpstr(reg, ==, "");
}

static const Replay stateless[] = {
    /* the device's own settings, before its file is looked at */
    {"prepare-access-missing", .code = DAXFILE_ERROR_INVALID},
    {"prepare-access-private", .code = DAXFILE_ERROR_INVALID},
    {"prepare-no-pmem", .code = DAXFILE_ERROR_INVALID},
    {"prepare-no-alignsize", .code = DAXFILE_ERROR_INVALID},
    {"prepare-alignsize-not-power-of-two", .code = DAXFILE_ERROR_INVALID},
    {"prepare-no-size", .code = DAXFILE_ERROR_INVALID},
    {"prepare-label-too-small", .code = DAXFILE_ERROR_INVALID},
    {"prepare-label-fills-device", .code = DAXFILE_ERROR_INVALID},
    {"prepare-virtio-pmem-private", .code = DAXFILE_ERROR_INVALID},
    {"prepare-virtio-pmem-no-size", .code = DAXFILE_ERROR_INVALID},
    /* the XML itself */
    {"prepare-malformed", .code = DAXFILE_ERROR_INVALID},
    {"prepare-entity-bomb", .code = DAXFILE_ERROR_INVALID},
    {"prepare-external-entity", .code = DAXFILE_ERROR_INVALID},
    {"prepare-huge-xml", .code = DAXFILE_ERROR_INVALID},
    {"prepare-empty-stdin", .code = DAXFILE_ERROR_INVALID},
    /* a managed file by another spelling, or a path out of the root */
    {"prepare-dot-spelling", .code = DAXFILE_ERROR_PERMISSION},
    {"prepare-relative-spelling", .code = DAXFILE_ERROR_PERMISSION},
    {"prepare-dotdot-escape", .code = DAXFILE_ERROR_PERMISSION},
    /* files */
    {"prepare-missing-file", .code = DAXFILE_ERROR_NOT_FOUND},
    {"prepare-two-nvdimms-one-file", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-disk-file", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-disk-symlink-spelling", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-disk-relative-spelling", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-disk-backing-store", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-filesystem", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-serial-file", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-console-log", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-channel", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-tpm-device", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-virtio-pmem", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-os-kernel", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-os-initrd", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-os-dtb", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-os-loader", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-os-nvram", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-qemu-commandline", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-qemu-json-blockdev", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-qemu-json-object", .code = DAXFILE_ERROR_INVALID},
    {"prepare-also-qemu-relative", .code = DAXFILE_ERROR_INVALID},
    /* started without a QEMU: refused before anything is looked at */
    {"started-no-qemu", "started", .code = DAXFILE_ERROR_NOT_FOUND},
    /* left alone */
    {"prepare-unmanaged-ignored"},
    {"prepare-no-nvdimm"},
    {"unknown-op", "frobnicate"},
};

/* prepare reserves for the domain and refuses the file to another one
 * until release (prepare-other-owner.out shows the refusal once vm1 has
 * started; here vm1 holds a reservation) */
static void
test_lifecycle(void)
{
    g_autoptr(DaxfileConf) conf = conf_new("");
    g_autofree char *vm2 = data_file("prepare-other-owner", ".xml");
    g_autofree char *reg = NULL;
    g_autofree char *out = NULL;
    g_autofree char *notes = NULL;
    g_autoptr(GError) error = NULL;

    replay(conf, &(Replay){"prepare-ok"});
    reg = registry();
    g_assert_cmpstr(reg, ==, "domain:vm1 reserved none\n");
    g_assert_false(hook(conf, "prepare", "begin", vm2, &out, &notes, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    g_assert_true(g_str_has_prefix(error->message, "domain 'vm2' nvdimm0 "));
    g_assert_nonnull(strstr(
        error->message,
        "' is reserved for 'domain:vm1' (uuid 11111111-2222-3333-4444-555555555555) since "));
    g_assert_nonnull(strstr(
        error->message,
        ", and it cannot be used by 'domain:vm2' until that owner releases it"));
    g_free(reg);
    reg = registry();
    g_assert_cmpstr(reg, ==, "domain:vm1 reserved none\n");
    replay(conf, &(Replay){"release-again", "release", "end", "prepare-ok"});
    g_free(reg);
    reg = registry();
    g_assert_cmpstr(reg, ==, "");
    /* released already: nothing to do, nothing refused */
    replay(conf, &(Replay){"release-again", "release", "end", "prepare-ok"});
    g_free(reg);
    reg = registry();
    g_assert_cmpstr(reg, ==, "");
}

/* a file whose wipe is owed (daxfile-wipes.h: an undefined domain's, a
 * wipe cut short) is refused at prepare, naming why and the fix, and
 * nothing is reserved; once the record is gone it is accepted */
static void
test_wipe_owed(void)
{
    g_autoptr(DaxfileConf) conf = conf_new("");
    g_autofree char *xml = data_file("prepare-ok", ".xml");
    g_autofree char *path = g_build_filename(root, "vm1.img", NULL);
    g_autoptr(DaxfileFile) f = daxfile_file_open(path, DAXFILE_OPEN_READ, NULL);
    g_autoptr(DaxfileWipeRecord) r =
        daxfile_wipe_record_new(f, DAXFILE_WIPE_UNDEFINED, "gone", "u-1");
    g_autofree char *out = NULL;
    g_autofree char *notes = NULL;
    g_autofree char *reg = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_true(daxfile_wipe_record_save(r, &error));
    g_assert_false(hook(conf, "prepare", "begin", xml, &out, &notes, &error));
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_BUSY);
    g_assert_true(g_str_has_prefix(error->message, "domain 'vm1' "));
    g_assert_nonnull(strstr(error->message, "is to be wiped: domain 'gone'"));
    g_assert_nonnull(strstr(error->message, "; fix: let 'daxfile watch'"));
    reg = registry();
    g_assert_cmpstr(reg, ==, "");
    g_assert_true(daxfile_wipe_record_remove(r->dev, r->ino, NULL));
    replay(conf, &(Replay){"prepare-ok"});
    replay(conf, &(Replay){"release-again", "release", "end", "prepare-ok"});
}

/* migrate and restore: a file there is left as it is; a mapped path is
 * printed rewritten, its missing file made with create_missing and used
 * as it is the next time */
static void
test_migrate(void)
{
    g_autofree char *dest = g_build_filename(root, "dest", NULL);
    g_autofree char *made = g_build_filename(dest, "vm9.img", NULL);
    g_autofree char *extra = g_strdup_printf("create_missing=true\n"
                                             "path_map=%s/src=%s\n",
                                             root, dest);
    g_autoptr(DaxfileConf) plain = conf_new("");
    g_autoptr(DaxfileConf) mapped = conf_new(extra);
    g_autofree char *reg = NULL;
    struct stat st;

    replay(plain, &(Replay){"migrate-no-rewrite", "migrate"});
    replay(plain, &(Replay){"migrate-missing-no-create", "migrate",
                            .code = DAXFILE_ERROR_NOT_FOUND});
    g_assert_cmpint(g_mkdir_with_parents(dest, 0755), ==, 0);
    replay(mapped, &(Replay){"migrate-rewrite-create", "migrate"});
    g_assert_cmpint(stat(made, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 8 * M);
    replay(mapped, &(Replay){"restore-rewrite-existing", "restore",
                             .input = "migrate-rewrite-create"});
    reg = registry();
    g_assert_cmpstr(reg, ==, "");
}

/* Operations other than the seven are left alone whatever comes with
 * them; the seven parse the XML */
static void
test_ops(void)
{
    static const struct {
        const char *op;
        const char *subop;
        gboolean acts;
    } ops[] = {
        /* clang-format off */
        {"prepare", "begin", TRUE}, {"started", "begin", TRUE},
        {"stopped", "end", TRUE}, {"release", "end", TRUE},
        {"reconnect", "begin", TRUE}, {"migrate", "begin", TRUE},
        {"restore", "begin", TRUE},
        {"prepare", "end", FALSE}, {"started", "end", FALSE},
        {"stopped", "begin", FALSE}, {"release", "begin", FALSE},
        {"reconnect", "end", FALSE}, {"migrate", "end", FALSE},
        {"restore", "end", FALSE}, {"frobnicate", "begin", FALSE},
        {"PREPARE", "begin", FALSE}, {NULL, "begin", FALSE},
        {"prepare", NULL, FALSE},
        /* clang-format on */
    };
    g_autoptr(DaxfileConf) conf = conf_new("");
    guint i;

    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        g_autofree char *out = NULL;
        g_autofree char *notes = NULL;
        g_autoptr(GError) error = NULL;
        gboolean ok = hook(conf, ops[i].op, ops[i].subop, "<domain", &out,
                           &notes, &error);

        g_assert_null(out);
        if (!ops[i].acts) {
            g_assert_no_error(error);
            g_assert_true(ok);
            continue;
        }
        g_assert_false(ok);
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_true(
            g_str_has_prefix(error->message, "Cannot parse the domain XML: "));
    }
}

/* With nothing managed (no root, no device_dax) every domain is left
 * alone, even one that is not XML; device_dax alone manages */
static void
test_nothing_managed(void)
{
    static const char *const ops[][2] = {
        {"prepare", "begin"},
        {"started", "begin"},
        {"stopped", "end"},
        {"migrate", "begin"},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileConf) none =
        daxfile_conf_load_data("", 0, "/x.conf", &error);
    g_autoptr(DaxfileConf) devdax = daxfile_conf_load_data(
        "[hook]\ndevice_dax=true\n", strlen("[hook]\ndevice_dax=true\n"),
        "/x.conf", &error);
    guint i;

    g_assert_no_error(error);
    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        g_autofree char *out = NULL;
        g_autofree char *notes = NULL;

        g_assert_true(
            hook(none, ops[i][0], ops[i][1], "garbage", &out, &notes, &error));
        g_assert_no_error(error);
        g_assert_null(out);
        g_assert_false(hook(devdax, ops[i][0], ops[i][1], "garbage", &out,
                            &notes, &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_clear_error(&error);
    }
}

/* The device checks that attach shares: a device as the committed
 * inputs have it passes, and each of its settings matters */
static void
test_check_device(void)
{
    static const char *const good[] = {"prepare-ok", "prepare-virtio-pmem-ok"};
    guint i;

    for (i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autofree char *xml = data_file(good[i], ".xml");
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileDomain) dom =
            daxfile_domain_parse(xml, strlen(xml), &error);
        DaxfileNvdimm *nv;
        DaxfileNvdimm bad;

        g_assert_no_error(error);
        g_assert_cmpuint(dom->nvdimms->len, ==, 1);
        nv = g_ptr_array_index(dom->nvdimms, 0);
        g_assert_true(daxfile_nvdimm_check(nv, &error));
        g_assert_no_error(error);
        bad = *nv;
        bad.size = 0;
        g_assert_false(daxfile_nvdimm_check(&bad, &error));
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_clear_error(&error);
        bad = *nv;
        bad.access = NULL;
        g_assert_false(daxfile_nvdimm_check(&bad, NULL));
        /* a label of exactly QEMU's minimum leaves the guest room */
        bad = *nv;
        bad.label_size = 128 << 10;
        g_assert_true(daxfile_nvdimm_check(&bad, NULL));
    }
}

/* The files the cases name (as tests/hooks/test-hook.py makes them) */
static void
world_new(void)
{
    static const char *const files[] = {"vm1.img", "spelt.img", "shared.img",
                                        "mig.img"};
    DaxfileCreateParams params = {
        .size = 8 * M, .align = 4096, .allow_non_dax = TRUE};
    g_autofree char *state = g_build_filename(tmp, "state", NULL);
    g_autofree char *link = g_build_filename(tmp, "outside-link.img", NULL);
    g_autofree char *shared = g_build_filename(root, "shared.img", NULL);
    guint i;

    g_assert_cmpint(g_mkdir_with_parents(root, 0755), ==, 0);
    g_setenv("DAXFILE_STATE_DIR", state, TRUE);
    for (i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = g_build_filename(root, files[i], NULL);
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileReport) report =
            daxfile_create(path, &params, NULL, &error);

        g_assert_no_error(error);
    }
    g_assert_cmpint(symlink(shared, link), ==, 0);
}

int
main(int argc, char **argv)
{
    g_autofree char *managed = NULL;
    guint i;

    g_test_init(&argc, &argv, NULL);
    tmp = daxfile_test_scratch("hook");
    managed = g_build_filename(tmp, "pmem", NULL);
    root = managed;
    world_new();
    g_test_add_func("/hook/ops", test_ops);
    g_test_add_func("/hook/nothing-managed", test_nothing_managed);
    g_test_add_func("/hook/check-device", test_check_device);
    for (i = 0; i < G_N_ELEMENTS(stateless); i++) {
        g_autofree char *path =
            g_strdup_printf("/hook/replay/%s", stateless[i].name);

        g_test_add_data_func(path, &stateless[i], test_replay);
    }
    g_test_add_func("/hook/replay-lifecycle", test_lifecycle);
    g_test_add_func("/hook/replay-migrate", test_migrate);
    g_test_add_func("/hook/wipe-owed", test_wipe_owed);
    return daxfile_test_run();
}
