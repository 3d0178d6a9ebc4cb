/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Domain XML: the nvdimm reader, libvirt units, attach prerequisites,
 * generated device XML (golden) and path rewriting.
 */
#include <string.h>

#include "daxfile-domxml.h"
#include "daxfile-error.h"
#include "daxfile-test-util.h"

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)
#define G (G_GUINT64_CONSTANT(1) << 30)

/* A device as attach makes it (daxfile_nvdimm_init() and the options) */
#define DEVICE(p, sz, label, nd, ro, mdl)                                      \
    {                                                                          \
        .model = (mdl), .access = (char *)"shared", .path = (char *)(p),       \
        .alignsize = 2 * M, .pmem = (mdl) == DAXFILE_DEVICE_NVDIMM,            \
        .size = (sz), .node = (nd), .label_size = (label), .readonly = (ro)    \
    }
#define NVDIMM DAXFILE_DEVICE_NVDIMM
#define VIRTIO DAXFILE_DEVICE_VIRTIO_PMEM

static DaxfileDomain *
load(const char *name)
{
    g_autofree char *path =
        g_test_build_filename(G_TEST_DIST, "data", "domxml", name, NULL);
    g_autofree char *xml = NULL;
    gsize len = 0;
    g_autoptr(GError) error = NULL;
    DaxfileDomain *dom;

    g_assert_true(g_file_get_contents(path, &xml, &len, NULL));
    dom = daxfile_domain_parse(xml, len, &error);
    g_assert_no_error(error);
    return dom;
}

static void
test_parse(void)
{
    g_autoptr(DaxfileDomain) dom = load("nvdimm-domain.xml");
    const DaxfileNvdimm *a, *b;

    g_assert_cmpstr(dom->name, ==, "pmem-guest");
    g_assert_cmpstr(dom->uuid, ==, "c7a5fdbd-edaf-9455-926a-d65c16db1809");
    g_assert_cmpuint(dom->max_memory, ==, 8 * G);
    g_assert_cmpuint(dom->max_slots, ==, 4);
    g_assert_cmpuint(dom->memory, ==, 512 * M);
    g_assert_cmpuint(dom->numa_cells, ==, 2);
    g_assert_true(dom->acpi);
    g_assert_cmpuint(dom->memory_devices, ==, 3);
    g_assert_cmpuint(dom->devices_memory, ==, 256 * M + 1 * G + 512 * M);
    g_assert_cmpuint(dom->nvdimms->len, ==, 2);
    a = g_ptr_array_index(dom->nvdimms, 0);
    g_assert_cmpstr(a->path, ==, "/mnt/pmem/a.img");
    g_assert_cmpstr(a->access, ==, "shared");
    g_assert_cmpstr(a->alias, ==, "nvdimm0");
    g_assert_true(a->pmem);
    g_assert_false(a->readonly);
    g_assert_cmpuint(a->alignsize, ==, 2 * M);
    g_assert_cmpuint(a->size, ==, 1 * G);
    g_assert_cmpint(a->node, ==, 1);
    g_assert_cmpuint(a->label_size, ==, 128 * K);
    b = g_ptr_array_index(dom->nvdimms, 1);
    g_assert_cmpstr(b->path, ==, "/var/lib/other & b.img");
    g_assert_null(b->access);
    g_assert_false(b->pmem);
    g_assert_true(b->readonly);
    g_assert_cmpuint(b->alignsize, ==, 0);
    g_assert_cmpuint(b->size, ==, 512 * M);
    g_assert_cmpint(b->node, ==, 0);
    g_assert_cmpint(daxfile_domain_find_nvdimm(dom, "/mnt/pmem/a.img"), ==, 0);
    g_assert_cmpint(daxfile_domain_find_nvdimm(dom, "/nope"), ==, -1);
}

static void
test_parse_errors(void)
{
    static const char *bad[] = {
        "",
        "<domain>",
        "<notdomain><name>x</name></notdomain>",
        "<domain><devices/></domain>",
        "<!DOCTYPE domain><domain><name>x</name></domain>",
        "<domain><name>x</name><memory unit='furlong'>1</memory></domain>",
        "<domain><name>x</name><memory>-1</memory></domain>",
        "<domain><name>x</name><devices><memory model='nvdimm'><target><size unit='EiB'>99</size></target></memory></devices></domain>",
    };
    guint i;

    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(DaxfileDomain) dom =
            daxfile_domain_parse(bad[i], strlen(bad[i]), &error);

        g_test_message("case %u", i);
        g_assert_null(dom);
        g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
        g_assert_null(strchr(error->message, '\n'));
    }
}

static void
test_scale(void)
{
    static const struct {
        const char *value, *unit;
        guint64 want;
    } good[] = {
        {"1", NULL, 1024},
        {"1", "b", 1},
        {"1", "bytes", 1},
        {"1", "KB", 1000},
        {"1", "k", 1024},
        {"1", "KiB", 1024},
        {"2", "M", 2 * M},
        {"2", "mib", 2 * M},
        {"3", "MB", 3000000},
        {"1", "G", G},
        {" 7 ", "T", G_GUINT64_CONSTANT(7) << 40},
    };
    guint64 v = 0;
    guint i;

    for (i = 0; i < G_N_ELEMENTS(good); i++) {
        g_assert_true(
            daxfile_scale_parse(good[i].value, good[i].unit, 1024, &v, NULL));
        g_assert_cmpuint(v, ==, good[i].want);
    }
    g_assert_false(daxfile_scale_parse("1", "KiBi", 1024, &v, NULL));
    g_assert_false(daxfile_scale_parse("x", "KiB", 1024, &v, NULL));
    g_assert_false(daxfile_scale_parse("16777216", "T", 1024, &v, NULL));
    g_assert_false(daxfile_scale_parse(NULL, "KiB", 1024, &v, NULL));
}

static void
test_device_xml(void)
{
    DaxfileNvdimm spec =
        DEVICE("/mnt/pmem/a <&> b.img", G, 128 * K, 1, FALSE, NVDIMM);
    DaxfileNvdimm plain = DEVICE("/srv/vm.img", 512 * M, 0, 0, TRUE, NVDIMM);
    DaxfileNvdimm bad = DEVICE("/srv/\xff.img", 512 * M, 0, 0, FALSE, NVDIMM);
    g_autofree char *a = daxfile_nvdimm_format(&spec, NULL);
    g_autofree char *b = daxfile_nvdimm_format(&plain, NULL);
    g_autoptr(GError) error = NULL;
    g_autofree char *c = daxfile_nvdimm_format(&bad, &error);
    g_autofree char *both = g_strconcat(a, b, NULL);
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *wrapped = NULL;
    const DaxfileNvdimm *nv;

    daxfile_test_golden("domxml/device.xml", both);
    g_assert_null(c);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    /* what we generate reads back the same */
    wrapped = g_strdup_printf(
        "<domain><name>x</name><devices>%s</devices></domain>", a);
    dom = daxfile_domain_parse(wrapped, strlen(wrapped), NULL);
    g_assert_nonnull(dom);
    nv = g_ptr_array_index(dom->nvdimms, 0);
    g_assert_cmpstr(nv->path, ==, spec.path);
    g_assert_cmpuint(nv->size, ==, G);
    g_assert_cmpuint(nv->alignsize, ==, 2 * M);
    g_assert_cmpuint(nv->label_size, ==, 128 * K);
    g_assert_cmpint(nv->node, ==, 1);
    g_assert_true(nv->pmem);
    g_assert_cmpstr(nv->access, ==, "shared");
}

static void
expect_attach_error(const char *xml, const DaxfileNvdimm *spec,
                    const char *want)
{
    g_autoptr(DaxfileDomain) dom = daxfile_domain_parse(xml, strlen(xml), NULL);
    g_autoptr(GError) error = NULL;

    g_assert_nonnull(dom);
    g_assert_false(daxfile_domain_check_attach(dom, spec, &error));
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, want));
}

#define DOM(max, cells, acpi, devs)                                            \
    "<domain><name>vm</name><memory unit='MiB'>512</memory>" max               \
    "<features>" acpi "</features><cpu><numa>" cells "</numa></cpu>"           \
    "<devices>" devs "</devices></domain>"
#define MAXMEM "<maxMemory slots='2' unit='GiB'>2</maxMemory>"
#define CELL "<cell id='0' cpus='0' memory='512' unit='MiB'/>"
#define DIMM                                                                   \
    "<memory model='dimm'><target><size unit='MiB'>256</size>"                 \
    "</target></memory>"

static void
test_check_attach(void)
{
    DaxfileNvdimm spec =
        DEVICE("/mnt/pmem/a.img", 512 * M, 0, 0, FALSE, NVDIMM);
    DaxfileNvdimm node1 =
        DEVICE("/mnt/pmem/a.img", 512 * M, 0, 1, FALSE, NVDIMM);
    DaxfileNvdimm big = DEVICE("/mnt/pmem/a.img", 2 * G, 0, 0, FALSE, NVDIMM);
    DaxfileNvdimm again = DEVICE("/mnt/pmem/a.img", 1 * G, 0, 1, FALSE, NVDIMM);
    g_autoptr(DaxfileDomain) ok = NULL;
    const char *good = DOM(MAXMEM, CELL, "<acpi/>", "");

    expect_attach_error(DOM("", CELL, "<acpi/>", ""), &spec,
                        "no <maxMemory slots=...>");
    expect_attach_error(DOM(MAXMEM, "", "<acpi/>", ""), &spec, "no NUMA cell");
    expect_attach_error(DOM(MAXMEM, CELL, "", ""), &spec,
                        "no <features><acpi/>");
    expect_attach_error(good, &node1, "there is no node 1");
    expect_attach_error(DOM(MAXMEM, CELL, "<acpi/>", DIMM DIMM), &spec,
                        "uses all 2 memory slots");
    expect_attach_error(good, &big, "no room for 2 GiB more");
    ok = load("nvdimm-domain.xml");
    g_assert_false(daxfile_domain_check_attach(ok, &again, NULL));
    g_clear_pointer(&ok, daxfile_domain_free);
    ok = daxfile_domain_parse(good, strlen(good), NULL);
    g_assert_true(daxfile_domain_check_attach(ok, &spec, NULL));
}

/* A virtio-pmem device: only path and size in its XML, read back as one
 * of the domain's pmem devices (counted with the nvdimms), and attached
 * without ACPI, which only an nvdimm needs */
static void
test_virtio_pmem(void)
{
    DaxfileNvdimm spec =
        DEVICE("/mnt/pmem/v.img", 512 * M, 0, 0, FALSE, VIRTIO);
    DaxfileNvdimm nvdimm =
        DEVICE("/mnt/pmem/n.img", 512 * M, 0, 0, FALSE, NVDIMM);
    g_autofree char *xml = daxfile_nvdimm_format(&spec, NULL);
    g_autofree char *both = NULL;
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autoptr(DaxfileDomain) noacpi = NULL;
    const char *bare = DOM(MAXMEM, CELL, "", "");
    const DaxfileNvdimm *nv;
    DaxfileDeviceModel m;

    g_assert_nonnull(xml);
    daxfile_test_golden("domxml/device-virtio-pmem.xml", xml);
    both = g_strdup_printf(
        DOM(MAXMEM, CELL, "<acpi/>", "%s%s"), xml,
        "<memory model='nvdimm'><source><path>/n.img</path></source></memory>");
    dom = daxfile_domain_parse(both, strlen(both), NULL);
    g_assert_nonnull(dom);
    g_assert_cmpuint(dom->nvdimms->len, ==, 2);
    nv = g_ptr_array_index(dom->nvdimms, 0);
    g_assert_cmpint(nv->model, ==, DAXFILE_DEVICE_VIRTIO_PMEM);
    g_assert_cmpstr(nv->path, ==, spec.path);
    g_assert_cmpuint(nv->size, ==, 512 * M);
    g_assert_cmpuint(nv->alignsize, ==, 0);
    g_assert_cmpuint(daxfile_nvdimm_page(nv), ==, 2 * M);
    g_assert_cmpint(
        ((DaxfileNvdimm *)g_ptr_array_index(dom->nvdimms, 1))->model, ==,
        DAXFILE_DEVICE_NVDIMM);
    g_assert_cmpint(daxfile_domain_find_nvdimm(dom, "/n.img"), ==, 1);
    noacpi = daxfile_domain_parse(bare, strlen(bare), NULL);
    g_assert_true(daxfile_domain_check_attach(noacpi, &spec, NULL));
    expect_attach_error(bare, &nvdimm, "no <features><acpi/>");
    g_assert_true(daxfile_device_model_from_string("virtio-pmem", &m));
    g_assert_cmpint(m, ==, DAXFILE_DEVICE_VIRTIO_PMEM);
    g_assert_false(daxfile_device_model_from_string("dimm", &m));
    g_assert_false(daxfile_device_model_from_string(NULL, &m));
}

/* An nvdimm without <node> (libvirt takes it for a one-cell domain) */
static void
test_parse_no_node(void)
{
    const char *xml = DOM(
        MAXMEM, CELL, "<acpi/>",
        "<memory model='nvdimm'><source><path>/a.img</path></source><target><size unit='MiB'>512</size></target></memory>");
    g_autoptr(DaxfileDomain) dom = daxfile_domain_parse(xml, strlen(xml), NULL);

    g_assert_nonnull(dom);
    g_assert_cmpuint(dom->nvdimms->len, ==, 1);
    g_assert_cmpint(((DaxfileNvdimm *)g_ptr_array_index(dom->nvdimms, 0))->node,
                    ==, -1);
}

static void
test_rewrite(void)
{
    g_autoptr(DaxfileDomain) dom = load("nvdimm-domain.xml");
    g_autoptr(GHashTable) paths = g_hash_table_new(NULL, NULL);
    g_autofree char *out = NULL;
    g_autoptr(DaxfileDomain) again = NULL;

    g_hash_table_insert(paths, GUINT_TO_POINTER(1), (char *)"/dest/<b>.img");
    out = daxfile_domain_rewrite_paths(dom, paths, NULL);
    g_assert_nonnull(out);
    again = daxfile_domain_parse(out, strlen(out), NULL);
    g_assert_cmpstr(
        ((DaxfileNvdimm *)g_ptr_array_index(again->nvdimms, 0))->path, ==,
        "/mnt/pmem/a.img");
    g_assert_cmpstr(
        ((DaxfileNvdimm *)g_ptr_array_index(again->nvdimms, 1))->path, ==,
        "/dest/<b>.img");
}

/* Every element kind that names a file, an nvdimm's own path marked */
static void
test_file_refs(void)
{
    static const char xml[] =
        "<domain><name>x</name><os><kernel>/k</kernel><initrd>/i</initrd><dtb>/d</dtb><loader readonly='yes'>/l</loader><nvram template='/t'>/n</nvram></os><devices><emulator>/usr/bin/qemu</emulator><disk type='file'><source file='/a'/><target dev='vda'/><backingStore type='file'><source file='/b'/></backingStore></disk><disk type='block'><source dev='/dev/x'/><target dev='vdb'/></disk><memory model='nvdimm'><source><path>/nv</path></source></memory><memory model='virtio-pmem'><source><path>/vp</path></source></memory><serial type='file'><source path='/s'/><log file='/log'/></serial><rng model='virtio'><backend model='random'>/dev/urandom</backend></rng><tpm><backend type='passthrough'><device path='/tpm'/></backend></tpm></devices><qemu:commandline xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'><qemu:arg value='-drive'/><qemu:arg value='file=/q,if=none'/></qemu:commandline></domain>";
    static const char *const want[] = {
        "/domain/os/kernel=/k",
        "/domain/os/initrd=/i",
        "/domain/os/dtb=/d",
        "/domain/os/loader=/l",
        "/domain/os/nvram/@template=/t",
        "/domain/os/nvram=/n",
        "/domain/devices/emulator=/usr/bin/qemu",
        "/domain/devices/disk[1]/source/@file=/a",
        "/domain/devices/disk[1]/backingStore/source/@file=/b",
        "/domain/devices/disk[2]/source/@dev=/dev/x",
        "/domain/devices/memory[1]/source/path=/nv#0",
        "/domain/devices/memory[2]/source/path=/vp#1",
        "/domain/devices/serial/source/@path=/s",
        "/domain/devices/serial/log/@file=/log",
        "/domain/devices/rng/backend=/dev/urandom",
        "/domain/devices/tpm/backend/device/@path=/tpm",
        "/domain/qemu:commandline/qemu:arg[2]/@value=/q",
    };
    g_autoptr(DaxfileDomain) dom = daxfile_domain_parse(xml, strlen(xml), NULL);
    g_autoptr(GPtrArray) refs = NULL;
    guint i;

    g_assert_nonnull(dom);
    refs = daxfile_domain_file_refs(dom);
    g_assert_cmpuint(refs->len, ==, G_N_ELEMENTS(want));
    for (i = 0; i < refs->len; i++) {
        const DaxfileFileRef *r = g_ptr_array_index(refs, i);
        g_autofree char *got =
            r->nvdimm >= 0
                ? g_strdup_printf("%s=%s#%d", r->where, r->path, r->nvdimm)
                : g_strdup_printf("%s=%s", r->where, r->path);

        g_assert_cmpstr(got, ==, want[i]);
    }
}

/* <qemu:commandline>: files in QEMU's option syntax (',,' a comma, a
 * "json:" file name) and in its JSON, relative ones by their keys and by
 * the options that take a file; a -blockdev's "file" is a node name */
static void
test_file_refs_qemu(void)
{
    static const char xml[] =
        "<domain><name>x</name><qemu:commandline xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'><qemu:arg value='-blockdev'/><qemu:arg value='{\"driver\":\"file\",\"filename\":\"/j1\",\"node-name\":\"n1\"}'/><qemu:arg value='-object'/><qemu:arg value='{\"qom-type\":\"memory-backend-file\",\"id\":\"m\",\"mem-path\":\"rel/m2\",\"size\":1048576}'/><qemu:arg value='-blockdev'/><qemu:arg value='{\"driver\":\"qcow2\",\"node-name\":\"q\",\"file\":{\"driver\":\"file\",\"filename\":\"rel/q3\"}}'/><qemu:arg value='-blockdev'/><qemu:arg value='driver=qcow2,node-name=q2,file=n1'/><qemu:arg value='-drive'/><qemu:arg value='file=rel/a,,b,if=none'/><qemu:arg value='-drive'/><qemu:arg value='file=json:{\"driver\":\"file\",,\"filename\":\"/j4\"},if=none'/><qemu:arg value='--kernel'/><qemu:arg value='relk'/><qemu:arg value='-m'/><qemu:arg value='512'/><qemu:arg value='-name'/><qemu:arg value='guest=x,debug-threads=on'/></qemu:commandline></domain>";
    static const char *const want[] = {
        "2=/j1", "4=rel/m2", "6=rel/q3", "10=rel/a,b", "12=/j4", "14=relk",
    };
    g_autoptr(DaxfileDomain) dom = daxfile_domain_parse(xml, strlen(xml), NULL);
    g_autoptr(GPtrArray) refs = NULL;
    guint i;

    g_assert_nonnull(dom);
    refs = daxfile_domain_file_refs(dom);
    g_assert_cmpuint(refs->len, ==, G_N_ELEMENTS(want));
    for (i = 0; i < refs->len; i++) {
        const DaxfileFileRef *r = g_ptr_array_index(refs, i);
        g_autofree char *where =
            g_strdup_printf("/domain/qemu:commandline/qemu:arg[%.*s]/@value",
                            (int)strcspn(want[i], "="), want[i]);

        g_assert_cmpstr(r->where, ==, where);
        g_assert_cmpstr(r->path, ==, strchr(want[i], '=') + 1);
        g_assert_cmpint(r->nvdimm, ==, -1);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/domxml/parse", test_parse);
    g_test_add_func("/domxml/parse-errors", test_parse_errors);
    g_test_add_func("/domxml/parse-no-node", test_parse_no_node);
    g_test_add_func("/domxml/scale", test_scale);
    g_test_add_func("/domxml/device-xml", test_device_xml);
    g_test_add_func("/domxml/check-attach", test_check_attach);
    g_test_add_func("/domxml/virtio-pmem", test_virtio_pmem);
    g_test_add_func("/domxml/rewrite", test_rewrite);
    g_test_add_func("/domxml/file-refs", test_file_refs);
    g_test_add_func("/domxml/file-refs-qemu", test_file_refs_qemu);
    return g_test_run();
}
