/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "daxfile-attest.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fs.h"
#include "daxfile-size.h"
#include "daxfile-trust.h"
#include "daxfile-util.h"

void
daxfile_attestation_clear(DaxfileAttestation *a)
{
    g_clear_pointer(&a->problem, g_free);
}

/* The guest name in QEMU's "-name" argument @arg as libvirt writes it,
 * "guest=NAME,debug-threads=on" (a ',' in NAME doubled), or the whole
 * argument in the old form "-name NAME" */
static char *
qemu_guest_name(const char *arg)
{
    GString *out = g_string_new(NULL);
    const char *p = arg;

    if (g_str_has_prefix(p, "guest="))
        p += strlen("guest=");
    else if (strchr(p, '='))
        return g_string_free(out, TRUE); /* other options, no guest= */
    for (; *p; p++) {
        if (*p == ',' && p[1] != ',')
            break;
        if (*p == ',')
            p++;
        g_string_append_c(out, *p);
    }
    return g_string_free(out, FALSE);
}

/* TRUE when process @pid is the QEMU of @domain: its command line has
 * "-name guest=@domain". A pid file in a directory that is not root's
 * (libvirt 10 and later give /run/libvirt/qemu to the QEMU user) could
 * have been renamed there from another domain's: this is what it must
 * name. */
static gboolean
is_domain_qemu(pid_t pid, const char *domain, const char *file, GError **error)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/cmdline", (int)pid);
    g_autofree char *cmdline = NULL;
    g_autofree char *found = NULL;
    g_autofree char *shown = NULL;
    g_autofree char *name = NULL;
    gsize len = 0;
    gsize i;

    if (g_file_get_contents(path, &cmdline, &len, NULL)) {
        for (i = 0; i < len && !found;) {
            const char *arg = cmdline + i;
            gsize n = strnlen(arg, len - i);

            if (STREQ(arg, "-name") && i + n + 1 < len)
                found = qemu_guest_name(arg + n + 1);
            i += n + 1;
        }
    }
    if (found && STREQ(found, domain))
        return TRUE;
    shown = daxfile_escape(file);
    name = daxfile_escape(domain);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
        "'%s' names process %d, which is not domain '%s''s QEMU (its -name is %s%s%s), and that directory is not root's, so the file may have been put there; fix: restart the domain",
        shown, (int)pid, name, found ? "'" : "", found ? found : "missing",
        found ? "'" : "");
    return FALSE;
}

pid_t
daxfile_attest_qemu_pid(const char *pid_dir, const char *domain,
                        const char *conf_path, GError **error)
{
    g_autofree char *name = daxfile_escape(domain);
    g_autofree char *base = NULL;
    g_autofree char *file = NULL;
    g_autofree char *shown = NULL;
    g_autofree char *text = NULL;
    gboolean foreign = FALSE;
    guint64 pid = 0;
    gsize len = 0;

    /* "NAME.pid" in @pid_dir: only a '/' could lead elsewhere; a name
     * that starts with '.' is a name like any other (libvirt allows it,
     * and "..pid" is a file in @pid_dir) */
    if (!*domain || strchr(domain, '/')) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "domain name '%s' cannot name a pid file", name);
        return -1;
    }
    base = g_strdup_printf("%s.pid", domain);
    file = g_build_filename(pid_dir, base, NULL);
    if (!daxfile_trusted_read_entry(pid_dir, base, &text, &len, &foreign,
                                    error))
        return -1;
    if (text &&
        g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXINT32, &pid,
                                   NULL) &&
        daxfile_proc_alive((pid_t)pid)) {
        if (foreign && !is_domain_qemu((pid_t)pid, domain, file, error))
            return -1;
        return (pid_t)pid;
    }
    shown = daxfile_escape(file);
    g_set_error(
        error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
        "no running QEMU for domain '%s': '%s' %s; fix: set qemu_pid_dir in '%s' if libvirt keeps its pid files elsewhere",
        name, shown, text ? "names no live process" : "does not exist",
        conf_path);
    return -1;
}

static gboolean fail(DaxfileAttestation *ret, GError **error, const char *fmt,
                     ...) G_GNUC_PRINTF(3, 4);

static gboolean
fail(DaxfileAttestation *ret, GError **error, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ret->problem = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        ret->problem);
    return FALSE;
}

char *
daxfile_attest_read_smaps(pid_t pid, GError **error)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/smaps", (int)pid);
    g_autoptr(GError) local = NULL;
    char *smaps = NULL;

    if (!g_file_get_contents(path, &smaps, NULL, &local)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_NOT_FOUND,
                    "Cannot read the mappings of process %d: %s", (int)pid,
                    local->message);
        return NULL;
    }
    return smaps;
}

gboolean
daxfile_attest(pid_t pid, const char *smaps, const DaxfileFile *f, guint64 size,
               guint64 align, gboolean need_sync, DaxfileAttestation *ret,
               GError **error)
{
    const struct stat *st = &f->st;
    const char *name = f->display;
    g_autofree char *own = NULL;
    g_autofree char *have = NULL;
    g_autofree char *want = NULL;
    g_autoptr(GError) local = NULL;
    DaxfileProcMap *map = &ret->map;
    int p = (int)pid;

    memset(ret, 0, sizeof(*ret));
    ret->pid = pid;
    /* DAX as enable judged it (report.c): on a kernel without
     * STATX_ATTR_DAX, a file that takes MAP_SYNC is DAX, and QEMU's
     * mapping of it must have VM_SYNC */
    ret->dax = daxfile_fd_dax_effective(f->fd);
    ret->need_sync = need_sync;
    if (!smaps && !(smaps = own = daxfile_attest_read_smaps(pid, &local)))
        return fail(ret, error, "%s", local->message);
    ret->mapped = daxfile_smaps_find(smaps, st->st_dev, st->st_ino, map);
    if (!ret->mapped)
        return fail(
            ret, error,
            "QEMU (pid %d) has not mapped '%s'; fix: see the domain's log in /var/log/libvirt/qemu/",
            p, name);
    if (map->others > 0)
        return fail(
            ret, error,
            "QEMU (pid %d) maps '%s' %u times, and only the device's own backend may map it; fix: remove the other reference to it from the domain (a <qemu:commandline> argument, a device attached at run time)",
            p, name, map->others + 1);
    if (!map->shared)
        return fail(
            ret, error,
            "QEMU (pid %d) mapped '%s' private, so guest writes never reach the file; fix: <memory access='shared'> and a QEMU that honours it",
            p, name);
    if (map->offset != 0 || map->end - map->start < size) {
        have = daxfile_size_format(map->end - map->start);
        want = daxfile_size_format(size);
        return fail(
            ret, error,
            "QEMU (pid %d) mapped %s of '%s' from offset %" G_GUINT64_FORMAT
            ", not all %s of it; fix: <target><size> equal to the file's size",
            p, have, name, map->offset, want);
    }
    if (align && map->start % align) {
        want = daxfile_size_format(align);
        return fail(
            ret, error,
            "QEMU (pid %d) mapped '%s' at 0x%" G_GINT64_MODIFIER
            "x, not %s-aligned, so the guest gets no huge-page faults; fix: <alignsize> in <source> and a QEMU that honours it",
            p, name, map->start, want);
    }
    if (need_sync && ret->dax && !map->sync)
        return fail(
            ret, error,
            "QEMU (pid %d) mapped the DAX file '%s' without MAP_SYNC, so guest writes are not durable until the host syncs the file (QEMU warns of it in the domain's log); fix: <pmem/> in <source> and a QEMU built with libpmem",
            p, name);
    ret->attested = TRUE;
    return TRUE;
}
