/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "daxfile-attest.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fs.h"
#include "daxfile-size.h"
#include "daxfile-trust.h"

void
daxfile_attestation_clear(DaxfileAttestation *a)
{
    g_clear_pointer(&a->problem, g_free);
}

pid_t
daxfile_attest_qemu_pid(const char *pid_dir, const char *domain,
                        const char *conf_path, GError **error)
{
    g_autofree char *name = daxfile_escape(domain);
    g_autofree char *file = NULL;
    g_autofree char *shown = NULL;
    g_autofree char *text = NULL;
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
    file = g_strdup_printf("%s/%s.pid", pid_dir, domain);
    if (!daxfile_trusted_read(file, &text, &len, error))
        return -1;
    if (text &&
        g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXINT32, &pid,
                                   NULL) &&
        daxfile_proc_alive((pid_t)pid))
        return (pid_t)pid;
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
