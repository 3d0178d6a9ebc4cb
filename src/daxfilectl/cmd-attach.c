/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile attach DOMAIN PATH [--create --size S] ...: wire a file as an nvdimm
 *                                 (or, --model virtio-pmem, a virtio-pmem device)
 * daxfile detach DOMAIN PATH: remove it from the definition
 * daxfile domain-xml PATH ...: print the device XML, no libvirt involved
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daxfile-create.h"
#include "daxfile-devdax.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-nvdimm.h"
#include "daxfile-size.h"
#include "daxfile-virt.h"
#include "daxfile-wipe.h"
#include "daxfilectl.h"

static char *arg_model;
static char *arg_size;
static char *arg_align;
static char *arg_label;
static gint arg_node;
static char *arg_uri;
static gboolean arg_create;
static gboolean arg_readonly;
static gboolean arg_allow_non_dax;
static gboolean arg_no_check;

#define SPEC_OPTIONS                                                         \
    {"model", 0, 0, G_OPTION_ARG_STRING, &arg_model,                       \
     "Device model: nvdimm (default) or virtio-pmem", "MODEL"},              \
    {"size", 's', 0, G_OPTION_ARG_STRING, &arg_size,                         \
     "Device size, equal to the file's size (default: the file's size)",     \
     "SIZE"},                                                                \
    {"align", 'a', 0, G_OPTION_ARG_STRING, &arg_align,                       \
     "Device alignsize (nvdimm), and the page size the file must support "   \
     "(default 2M)",                                                         \
     "SIZE"},                                                                \
    {"label-size", 'l', 0, G_OPTION_ARG_STRING, &arg_label,                  \
     "NVDIMM label area at the end of the file (at least 128K; nvdimm "      \
     "only)", "SIZE"},                                                       \
    {"node", 'n', 0, G_OPTION_ARG_INT, &arg_node,                            \
     "Guest NUMA node (default 0; nvdimm only)", "N"},                       \
    {"readonly", 0, 0, G_OPTION_ARG_NONE, &arg_readonly,                     \
     "Give the guest a read-only nvdimm (nvdimm only)", NULL}

static const GOptionEntry attach_options[] = {
    SPEC_OPTIONS,
    {"uri", 'c', 0, G_OPTION_ARG_STRING, &arg_uri,
     "libvirt connection URI (default: libvirt's default)", "URI"},
    {"create", 0, 0, G_OPTION_ARG_NONE, &arg_create,
     "Create and provision the file first (needs --size)", NULL},
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Accept a file without DAX (development)", NULL},
    {NULL},
};

static const GOptionEntry xml_options[] = {
    SPEC_OPTIONS,
    {"allow-non-dax", 0, 0, G_OPTION_ARG_NONE, &arg_allow_non_dax,
     "Accept a file without DAX (development)", NULL},
    {"no-check", 0, 0, G_OPTION_ARG_NONE, &arg_no_check,
     "Do not check the file (it may not exist yet: give --size), only the "
     "options; attach and the hook check it later", NULL},
    {NULL},
};

static gboolean arg_wipe;

static const GOptionEntry detach_options[] = {
    {"uri", 'c', 0, G_OPTION_ARG_STRING, &arg_uri,
     "libvirt connection URI (default: libvirt's default)", "URI"},
    {"wipe", 0, 0, G_OPTION_ARG_NONE, &arg_wipe,
     "Then wipe the file as 'daxfile wipe' does (refused before anything "
     "changes while the file is held)", NULL},
    {NULL},
};

/* Fill @spec, the device daxfile makes for @path, from the options */
static gboolean
spec_from_options(const char *cmd, const char *path, DaxfileNvdimm *spec,
                  int *ret_exit)
{
    DaxfileDeviceModel model = DAXFILE_DEVICE_NVDIMM;

    if (arg_model && !daxfile_device_model_from_string(arg_model, &model)) {
        *ret_exit = cli_usage_error(cmd, "--model must be nvdimm or "
                                    "virtio-pmem, not '%s'", arg_model);
        return FALSE;
    }
    daxfile_nvdimm_init(spec, model, path);
    spec->node = arg_node;
    spec->readonly = arg_readonly;
    if (spec->model == DAXFILE_DEVICE_VIRTIO_PMEM &&
        (arg_label || arg_node || arg_readonly)) {
        /* libvirt would drop them without a word */
        *ret_exit = cli_usage_error(cmd, "a virtio-pmem device has no %s; "
                                    "drop it, or use --model nvdimm",
                                    arg_label ? "--label-size"
                                    : arg_node ? "--node" : "--readonly");
        return FALSE;
    }
    if (!cli_parse_align(cmd, arg_align, &spec->alignsize, ret_exit) ||
        (arg_size && !cli_parse_size(cmd, "size", arg_size, &spec->size,
                                     ret_exit)) ||
        (arg_label && !cli_parse_size(cmd, "label-size", arg_label,
                                      &spec->label_size, ret_exit)))
        return FALSE;
    if (arg_node < 0) {
        *ret_exit = cli_usage_error(cmd, "--node must not be negative");
        return FALSE;
    }
    return TRUE;
}

/* The device settings, checked as the hook will check them at start */
static gboolean
spec_check_settings(const DaxfileNvdimm *spec, GError **error)
{
    g_autofree char *name = daxfile_escape(spec->path);

    if (daxfile_nvdimm_check(spec, error))
        return TRUE;
    g_prefix_error(error, "'%s': ", name);
    return FALSE;
}

/* A device-dax device: its size, and its page size for <alignsize>
 * unless --align says (then they must agree), checked as the hook does */
static gboolean
spec_check_devdax(DaxfileNvdimm *spec, GError **error)
{
    g_autoptr(DaxfileDevdax) d = NULL;
    g_autoptr(DaxfileFile) f = daxfile_devdax_open(spec->path, &d, error);

    if (!f)
        return FALSE;
    if (spec->model != DAXFILE_DEVICE_NVDIMM || arg_create) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is a device-dax device (%s): it is given to a "
                    "guest as an nvdimm, and there is nothing to create; "
                    "fix: drop %s", f->display, d->name,
                    arg_create ? "--create" : "--model");
        return FALSE;
    }
    if (!arg_align && d->align)
        spec->alignsize = d->align;
    if (!spec->size)
        spec->size = d->size;
    if (!daxfile_devdax_check(d, f->display, spec->size, spec->alignsize,
                              error))
        return FALSE;
    return spec_check_settings(spec, error);
}

/* The file's size, checked against --size, and the device settings;
 * @created: the report of the file attach --create just made, or NULL */
static gboolean
spec_check_file(DaxfileNvdimm *spec, gboolean need_ready,
                const DaxfileReport *created, GError **error)
{
    g_autoptr(DaxfileReport) built = NULL;
    const DaxfileReport *report = created;
    g_autofree char *name = daxfile_escape(spec->path);
    g_autoptr(DaxfileFile) f = NULL;

    if (!created && daxfile_devdax_is(spec->path))
        return spec_check_devdax(spec, error);
    if (!created) {
        f = daxfile_file_open(spec->path, DAXFILE_OPEN_READ, error);
        if (!f)
            return FALSE;
        report = built = daxfile_report_build(f, spec->alignsize,
                                              arg_allow_non_dax, error);
    }
    if (!report || (need_ready && !daxfile_report_require_ready(report,
                                                                error)))
        return FALSE;
    if (spec->size && spec->size != report->size) {
        g_autofree char *have = daxfile_size_format(report->size);
        g_autofree char *want = daxfile_size_format(spec->size);

        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is %s, not %s; the device size must equal the "
                    "file's size (drop --size)", name, have, want);
        return FALSE;
    }
    spec->size = report->size;
    return spec_check_settings(spec, error);
}

/* --create: the file, and its report in *@ret_report (kept for
 * spec_check_file(), which need not build it again) */
static gboolean
maybe_create(const DaxfileNvdimm *spec, DaxfileReport **ret_report,
             GError **error)
{
    DaxfileCreateParams params = {.size = spec->size, .align = spec->alignsize,
                                  .allow_non_dax = arg_allow_non_dax};

    if (!arg_create || daxfile_devdax_is(spec->path))
        return TRUE; /* spec_check_devdax() refuses --create */
    *ret_report = daxfile_create(spec->path, &params, NULL, error);
    if (!*ret_report)
        return FALSE;
    fprintf(stderr, "created '%s'\n", (*ret_report)->path);
    return TRUE;
}

static int
cmd_attach(int argc, char **argv)
{
    g_auto(DaxfileNvdimm) spec = {0};
    g_auto(DaxfileAttachResult) result = {0};
    g_autoptr(DaxfileReport) created = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    int ret = CLI_EXIT_OK;

    if (arg_create && !arg_size)
        return cli_usage_error("attach", "--create needs --size");
    path = g_canonicalize_filename(argv[2], NULL);
    if (!spec_from_options("attach", path, &spec, &ret))
        return ret;
    if (!maybe_create(&spec, &created, &error) ||
        !spec_check_file(&spec, !arg_readonly, created, &error) ||
        !daxfile_virt_attach(arg_uri, argv[1], &spec, &result, &error))
        return cli_report_error(error);
    fprintf(stderr, "attached '%s' to domain '%s'%s%s%s\n", path, argv[1],
            result.live ? " (live and persistent)" : " (persistent)",
            result.note ? ": " : "", result.note ? result.note : "");
    return CLI_EXIT_OK;
}

static int
cmd_detach(int argc, char **argv)
{
    g_auto(DaxfileAttachResult) result = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    g_autoptr(DaxfileFile) f = NULL;

    path = g_canonicalize_filename(argv[2], NULL);
    if (arg_wipe) {
        /* opened once, by the name given, and checked before the domain
         * changes: a held file refuses both */
        f = daxfile_wipe_open(argv[2], FALSE, &error);
        if (!f || !daxfile_wipe_check(f, &error))
            return cli_report_error(error);
    }
    if (!daxfile_virt_detach(arg_uri, argv[1], path, &result, &error))
        return cli_report_error(error);
    fprintf(stderr, "detached '%s' from domain '%s'%s%s\n", path, argv[1],
            result.note ? ": " : "", result.note ? result.note : "");
    return arg_wipe ? cli_wipe(f, FALSE) : CLI_EXIT_OK;
}

static int
cmd_domain_xml(int argc, char **argv)
{
    g_auto(DaxfileNvdimm) spec = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *path = NULL;
    g_autofree char *name = NULL;
    g_autofree char *xml = NULL;
    struct stat st;
    int ret = CLI_EXIT_OK;

    path = g_canonicalize_filename(argv[1], NULL);
    name = daxfile_escape(path);
    if (!spec_from_options("domain-xml", path, &spec, &ret))
        return ret;
    if (arg_no_check) {
        if (!spec.size && stat(path, &st) == 0)
            spec.size = (guint64)st.st_size;
        if (!spec.size)
            return cli_usage_error("domain-xml", "'%s' does not exist; "
                                   "give --size", name);
        if (!spec_check_settings(&spec, &error))
            return cli_report_error(error);
        fprintf(stderr, "%s domain-xml: '%s' not checked (--no-check); "
                "attach and the hook will check it\n", cli_program(), name);
    } else {
        /* only for the hint: the open below fails on its own */
        if (lstat(path, &st) < 0 && errno == ENOENT)
            return cli_usage_error("domain-xml", "'%s' does not exist; "
                                   "make it with 'daxfile create', or give "
                                   "--no-check and --size for the XML of a "
                                   "file not made yet", name);
        if (!spec_check_file(&spec, !arg_readonly, NULL, &error))
            return cli_report_error(error);
    }
    xml = daxfile_nvdimm_format(&spec, &error);
    if (!xml)
        return cli_report_error(error);
    fputs(xml, stdout);
    return CLI_EXIT_OK;
}

const CliVerb cmd_attach_verb = {
    .name = "attach",
    .min_args = 2,
    .max_args = 2,
    .dispatch = cmd_attach,
    .summary = CMD_ATTACH_SUMMARY,
    .params = "DOMAIN PATH",
    .description = "Attach PATH to DOMAIN as an nvdimm or a virtio-pmem "
                   "device (persistent; also live when the running domain "
                   "can hot-plug one).",
    .options = attach_options,
    .too_few = "expected DOMAIN and PATH",
    .too_many = "expected DOMAIN and PATH",
};

const CliVerb cmd_detach_verb = {
    .name = "detach",
    .min_args = 2,
    .max_args = 2,
    .dispatch = cmd_detach,
    .summary = CMD_DETACH_SUMMARY,
    .params = "DOMAIN PATH",
    .description = "Remove the nvdimm backed by PATH from DOMAIN's "
                   "definition.",
    .options = detach_options,
    .too_few = "expected DOMAIN and PATH",
    .too_many = "expected DOMAIN and PATH",
};

const CliVerb cmd_domain_xml_verb = {
    .name = "domain-xml",
    .min_args = 1,
    .max_args = 1,
    .dispatch = cmd_domain_xml,
    .summary = CMD_DOMAIN_XML_SUMMARY,
    .params = "PATH",
    .description = "Print the <memory model='nvdimm'> (or 'virtio-pmem') "
                   "device XML for PATH (for virsh attach-device or a "
                   "domain definition), after the checks attach makes.",
    .options = xml_options,
    .too_few = "expected exactly one PATH",
    .too_many = "expected exactly one PATH",
};
