/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one pmem device definition: daxfile_nvdimm_check()'s refusals, one
 * by one with their messages, and the device attach makes, formatted,
 * read back by the domain XML parser and formatted again the same.
 */
#include <string.h>

#include "daxfile-domxml.h"
#include "daxfile-error.h"
#include "daxfile-nvdimm.h"
#include "daxfile-test-util.h"

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)
#define G (G_GUINT64_CONSTANT(1) << 30)

/* A device with the settings the check looks at */
#define DEV(mdl, acc, pm, align, sz, label)                                    \
    {                                                                          \
        .model = DAXFILE_DEVICE_##mdl, .access = (char *)(acc),                \
        .path = (char *)"/mnt/pmem/a.img", .pmem = (pm), .alignsize = (align), \
        .size = (sz), .node = 0, .label_size = (label)                         \
    }
/* one that passes: shared, <pmem/>, 2 MiB aligned, 1 GiB, no label */
#define GOOD DEV(NVDIMM, "shared", TRUE, 2 * M, G, 0)

typedef struct {
    const char *name;
    DaxfileNvdimm nv;
    const char *error; /* NULL: accepted */
} CheckCase;

static const CheckCase check_cases[] = {
    {"ok", GOOD, NULL},
    {"access-missing", DEV(NVDIMM, NULL, TRUE, 2 * M, G, 0),
     "access is 'unset (private)', so guest writes never reach the file; fix: <memory model='nvdimm' access='shared'>"},
    {"access-private", DEV(NVDIMM, "private", TRUE, 2 * M, G, 0),
     "access is 'private', so guest writes never reach the file; fix: <memory model='nvdimm' access='shared'>"},
    {"no-pmem", DEV(NVDIMM, "shared", FALSE, 2 * M, G, 0),
     "<source> has no <pmem/>, so QEMU maps the file without MAP_SYNC and libvirt preallocates it; fix: add <pmem/> to <source>"},
    {"no-alignsize", DEV(NVDIMM, "shared", TRUE, 0, G, 0),
     "<source> has no <alignsize>, so the mapping is not aligned for huge pages; fix: add <alignsize unit='KiB'>2048</alignsize> to <source>"},
    {"alignsize-not-power-of-two", DEV(NVDIMM, "shared", TRUE, 3 * K, G, 0),
     "<alignsize>: "},
    {"no-size", DEV(NVDIMM, "shared", TRUE, 2 * M, 0, 0),
     "<target> has no <size>; fix: set it to the file's size"},
    {"label-too-small", DEV(NVDIMM, "shared", TRUE, 2 * M, G, 4 * K),
     "label size 4 KiB is below QEMU's minimum of 128 KiB; fix: <label><size unit='KiB'>128</size></label>"},
    {"label-minimum", DEV(NVDIMM, "shared", TRUE, 2 * M, G, 128 * K), NULL},
    {"label-fills-device", DEV(NVDIMM, "shared", TRUE, 2 * M, 2 * M, 2 * M),
     "the guest would see 0 bytes (size 2 MiB minus label 2 MiB, aligned down to <alignsize>); fix: a larger file and <size>, or a smaller label"},
    {"label-leaves-less-than-alignsize",
     DEV(NVDIMM, "shared", TRUE, 2 * M, 2 * M, 128 * K),
     "the guest would see 0 bytes (size 2 MiB minus label 128 KiB, aligned down to <alignsize>); fix: a larger file and <size>, or a smaller label"},
    /* virtio-pmem: access and size only */
    {"virtio-pmem-ok", DEV(VIRTIO_PMEM, "shared", FALSE, 0, G, 4 * K), NULL},
    {"virtio-pmem-access-private", DEV(VIRTIO_PMEM, "private", FALSE, 0, G, 0),
     "access is 'private', so guest writes never reach the file; fix: <memory model='virtio-pmem' access='shared'>"},
    {"virtio-pmem-no-size", DEV(VIRTIO_PMEM, "shared", FALSE, 0, 0, 0),
     "<target> has no <size>; fix: set it to the file's size"},
};

static void
test_check(gconstpointer data)
{
    const CheckCase *c = data;
    g_autoptr(GError) error = NULL;
    gboolean ok = daxfile_nvdimm_check(&c->nv, &error);

    if (!c->error) {
        g_assert_no_error(error);
        g_assert_true(ok);
        return;
    }
    g_assert_false(ok);
    g_assert_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID);
    if (g_str_has_suffix(c->error, ": "))
        g_assert_true(g_str_has_prefix(error->message, c->error));
    else
        g_assert_cmpstr(error->message, ==, c->error);
    /* the caller may not want the error */
    g_assert_false(daxfile_nvdimm_check(&c->nv, NULL));
}

/* @made passes the check, is formatted, put into a domain and parsed
 * back: the device read (owned by *@ret_dom) has the same model, access,
 * path and size, passes the check too and formats the same again */
static const DaxfileNvdimm *
round_trip(const DaxfileNvdimm *made, DaxfileDomain **ret_dom, char **ret_xml)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *xml = daxfile_nvdimm_format(made, &error);
    g_autofree char *domain = NULL;
    g_autofree char *again = NULL;
    const DaxfileNvdimm *nv;

    g_assert_true(daxfile_nvdimm_check(made, NULL));
    g_assert_no_error(error);
    domain = g_strdup_printf(
        "<domain><name>x</name><devices>%s</devices></domain>", xml);
    *ret_dom = daxfile_domain_parse(domain, strlen(domain), &error);
    g_assert_no_error(error);
    g_assert_cmpuint((*ret_dom)->nvdimms->len, ==, 1);
    nv = g_ptr_array_index((*ret_dom)->nvdimms, 0);
    g_assert_cmpint(nv->model, ==, made->model);
    g_assert_cmpstr(nv->access, ==, made->access);
    g_assert_cmpstr(nv->path, ==, made->path);
    g_assert_cmpuint(nv->size, ==, made->size);
    g_assert_true(daxfile_nvdimm_check(nv, NULL));
    again = daxfile_nvdimm_format(nv, NULL);
    g_assert_cmpstr(again, ==, xml);
    *ret_xml = g_steal_pointer(&xml);
    return nv;
}

/* The device attach makes of @path with these options */
static void
made_init(DaxfileNvdimm *made, DaxfileDeviceModel model, const char *path,
          guint64 size, guint64 align, guint64 label, gint node)
{
    daxfile_nvdimm_init(made, model, path);
    made->size = size;
    made->alignsize = align;
    made->label_size = label;
    made->node = node;
}

/* The device attach makes: every field of its XML survives */
static void
test_round_trip_nvdimm(void)
{
    g_auto(DaxfileNvdimm) made = {0};
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *xml = NULL;
    const DaxfileNvdimm *nv;

    made_init(&made, DAXFILE_DEVICE_NVDIMM, "/mnt/pmem/a <&> b.img", G, 2 * M,
              128 * K, 1);
    made.readonly = TRUE;
    made.alias = g_strdup("ua-pmem0");
    nv = round_trip(&made, &dom, &xml);
    g_assert_cmpstr(nv->alias, ==, "ua-pmem0");
    g_assert_true(nv->pmem);
    g_assert_cmpuint(nv->alignsize, ==, 2 * M);
    g_assert_cmpint(nv->node, ==, 1);
    g_assert_cmpuint(nv->label_size, ==, 128 * K);
    g_assert_true(nv->readonly);
    g_assert_cmpuint(daxfile_nvdimm_page(nv), ==, 2 * M);
}

/* A virtio-pmem device keeps access, path and size only: the page size
 * attach checks its file for (alignsize) stays out of the XML */
static void
test_round_trip_virtio_pmem(void)
{
    g_auto(DaxfileNvdimm) made = {0};
    g_autoptr(DaxfileDomain) dom = NULL;
    g_autofree char *xml = NULL;
    const DaxfileNvdimm *nv;

    made_init(&made, DAXFILE_DEVICE_VIRTIO_PMEM, "/mnt/pmem/v.img", 512 * M,
              4 * K, 0, 0);
    g_assert_false(made.pmem);
    nv = round_trip(&made, &dom, &xml);
    g_assert_null(strstr(xml, "alignsize"));
    g_assert_null(strstr(xml, "node"));
    g_assert_cmpuint(nv->alignsize, ==, 0);
    g_assert_cmpint(nv->node, ==, -1);
    g_assert_false(nv->pmem);
    g_assert_cmpuint(daxfile_nvdimm_page(nv), ==, 2 * M);
}

/* What a parsed device lacks stays out of its XML (no defaults) */
static void
test_format_absent(void)
{
    DaxfileNvdimm bare = {.model = DAXFILE_DEVICE_NVDIMM, .node = -1};
    g_autofree char *xml = daxfile_nvdimm_format(&bare, NULL);

    g_assert_cmpstr(xml, ==,
                    "<memory model=\"nvdimm\">\n"
                    "  <source/>\n"
                    "  <target/>\n"
                    "</memory>\n");
}

static void
test_model_names(void)
{
    DaxfileDeviceModel m = DAXFILE_DEVICE_NVDIMM;

    g_assert_cmpstr(daxfile_device_model_to_string(DAXFILE_DEVICE_NVDIMM), ==,
                    "nvdimm");
    g_assert_true(daxfile_device_model_from_string("virtio-pmem", &m));
    g_assert_cmpint(m, ==, DAXFILE_DEVICE_VIRTIO_PMEM);
    g_assert_false(daxfile_device_model_from_string("dimm", &m));
    g_assert_false(daxfile_device_model_from_string(NULL, &m));
}

int
main(int argc, char **argv)
{
    guint i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < G_N_ELEMENTS(check_cases); i++) {
        g_autofree char *path =
            g_strdup_printf("/nvdimm/check/%s", check_cases[i].name);

        g_test_add_data_func(path, &check_cases[i], test_check);
    }
    g_test_add_func("/nvdimm/round-trip/nvdimm", test_round_trip_nvdimm);
    g_test_add_func("/nvdimm/round-trip/virtio-pmem",
                    test_round_trip_virtio_pmem);
    g_test_add_func("/nvdimm/format/absent", test_format_absent);
    g_test_add_func("/nvdimm/model-names", test_model_names);
    return daxfile_test_run();
}
