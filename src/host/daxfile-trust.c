/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-fd.h"
#include "daxfile-file.h"
#include "daxfile-trust.h"
#include "daxfile-util.h"

#define MAX_LINKS 40
#define MAX_DATA (1 << 20)

static gboolean
trusted_uid(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* Where the lookup is, for messages: "/", "/etc", "/etc/daxfile" */
typedef struct {
    GString *at;
    const char *want; /* the path asked for */
} Walk;

static void
walk_push(Walk *w, const char *comp)
{
    if (STREQ(comp, "..")) {
        char *slash = strrchr(w->at->str, '/');

        g_string_truncate(w->at, slash && slash != w->at->str
                                     ? (gsize)(slash - w->at->str)
                                     : 1);
        return;
    }
    if (w->at->len > 1)
        g_string_append_c(w->at, '/');
    g_string_append(w->at, comp);
}

static gboolean
untrusted(const Walk *w, const char *what, const char *fix, GError **error)
{
    g_autofree char *want = daxfile_escape(w->want);
    g_autofree char *at = daxfile_escape(w->at->str);

    if (STREQ(w->at->str, w->want))
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' %s, so someone other than root could have written it, and daxfile obeys only configuration that only root can change; fix: %s '%s'",
            want, what, fix, at);
    else
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' is reached through '%s', which %s, so someone other than root could replace it, and daxfile obeys only configuration that only root can change; fix: %s '%s'",
            want, at, what, fix, at);
    return FALSE;
}

/* The node at w->at: owned by a trusted user, and not writable by group
 * or others (a sticky directory excepted: its entries are checked too). */
static gboolean
check_node(const Walk *w, const struct stat *st, GError **error)
{
    g_autofree char *owner = NULL;
    g_autofree char *fix = NULL;

    if (!trusted_uid(st->st_uid)) {
        owner = g_strdup_printf("is owned by uid %u", (unsigned)st->st_uid);
        fix = geteuid() == 0 ? g_strdup("chown root")
                             : g_strdup_printf("chown %u", (unsigned)geteuid());
        return untrusted(w, owner, fix, error);
    }
    if (S_ISLNK(st->st_mode))
        return TRUE;
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
        !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
        return untrusted(w, "is writable by group or others", "chmod go-w",
                         error);
    return TRUE;
}

/* @comps (a queue of path components) with the link target @target in
 * front of what is left */
static void
splice_link(GQueue *comps, const char *target)
{
    g_auto(GStrv) parts = g_strsplit(target, "/", -1);
    gint i;

    for (i = (gint)g_strv_length(parts) - 1; i >= 0; i--) {
        if (*parts[i] && STRNEQ(parts[i], "."))
            g_queue_push_head(comps, g_strdup(parts[i]));
    }
}

/* A queue of path components that owns them */
typedef GQueue Components;

static void
components_free(Components *q)
{
    g_queue_free_full(q, g_free);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Components, components_free)

static int
missing_or_error(const Walk *w, GError **error)
{
    g_autofree char *at = daxfile_escape(w->at->str);

    if (errno == ENOENT || errno == ENOTDIR)
        return -1;
    daxfile_set_error_errno(error, errno, "Cannot open '%s'", at);
    return -1;
}

/* Follow a symbolic link at @fd: check its owner, restart from "/" for an
 * absolute target or go back to the link's directory for a relative one. */
static gboolean
follow_link(Walk *w, int fd, int *cur, GQueue *comps, guint *links,
            GError **error)
{
    char target[PATH_MAX];
    ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
    g_autofree char *at = daxfile_escape(w->at->str);

    if (n < 0 || ++*links > MAX_LINKS) {
        daxfile_set_error_errno(error, n < 0 ? errno : ELOOP,
                                "Cannot follow '%s'", at);
        return FALSE;
    }
    target[n] = '\0';
    if (target[0] == '/') {
        close(*cur);
        *cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_string_assign(w->at, "/");
    } else {
        walk_push(w, "..");
    }
    splice_link(comps, target);
    return *cur >= 0;
}

/* daxfile_trusted_open(); with @check_last FALSE the node @path names is
 * not checked (its owner may be anyone): the caller checks what it
 * opens in it */
static DaxfileFile *
trusted_open(const char *path, gboolean want_dir, gboolean check_last,
             GError **error)
{
    g_autoptr(DaxfileFile) f = NULL;
    g_autofree char *abs = g_canonicalize_filename(path, NULL);
    g_autoptr(GString) at = g_string_new("/");
    Walk w = {at, abs};
    g_autoptr(Components) comps = g_queue_new();
    g_auto(DaxfileFd) cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    guint links = 0;
    struct stat st;
    char *comp;

    splice_link(comps, abs);
    while (cur >= 0 && (comp = g_queue_pop_head(comps))) {
        g_autofree char *c = comp;
        g_auto(DaxfileFd) next = -1;

        if (fstat(cur, &st) < 0 || !check_node(&w, &st, error))
            return NULL;
        next = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        walk_push(&w, c);
        if (next < 0 || fstat(next, &st) < 0) {
            missing_or_error(&w, error);
            return NULL;
        }
        if (S_ISLNK(st.st_mode)) {
            if (!check_node(&w, &st, error) ||
                !follow_link(&w, next, &cur, comps, &links, error))
                return NULL;
            continue;
        }
        close(cur);
        cur = g_steal_fd(&next);
    }
    if (cur < 0 || fstat(cur, &st) < 0) {
        missing_or_error(&w, error);
        return NULL;
    }
    f = daxfile_file_new_from_fd(g_steal_fd(&cur), path, error);
    if (!f)
        return NULL;
    if (want_dir ? !S_ISDIR(f->st.st_mode) : !S_ISREG(f->st.st_mode)) {
        g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                    "'%s' is not a %s", f->display,
                    want_dir ? "directory" : "regular file");
        return NULL;
    }
    if ((check_last && !check_node(&w, &f->st, error)) ||
        !daxfile_file_reopen(
            f, want_dir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK,
            error))
        return NULL;
    return g_steal_pointer(&f);
}

DaxfileFile *
daxfile_trusted_open(const char *path, gboolean want_dir, GError **error)
{
    return trusted_open(path, want_dir, TRUE, error);
}

/* All of @f (at most MAX_DATA), NUL-terminated, in *ret_data */
static gboolean
read_all(const DaxfileFile *f, char **ret_data, gsize *ret_len, GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[65536];
    ssize_t n;

    while ((n = read(f->fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            daxfile_set_error_errno(error, errno, "Cannot read '%s'",
                                    f->display);
            return FALSE;
        }
        if (buf->len + (gsize)n > MAX_DATA) {
            g_set_error(error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
                        "'%s' is larger than 1 MiB", f->display);
            return FALSE;
        }
        g_byte_array_append(buf, chunk, (guint)n);
    }
    *ret_len = buf->len;
    g_byte_array_append(buf, (const guint8 *)"", 1);
    *ret_data = (char *)g_byte_array_free(g_steal_pointer(&buf), FALSE);
    return TRUE;
}

gboolean
daxfile_trusted_read(const char *path, char **ret_data, gsize *ret_len,
                     GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileFile) f = daxfile_trusted_open(path, FALSE, &local);

    *ret_data = NULL;
    *ret_len = 0;
    if (!f) {
        if (!local)
            return TRUE;
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    return read_all(f, ret_data, ret_len, error);
}

gboolean
daxfile_trusted_read_entry(const char *dir, const char *name, char **ret_data,
                           gsize *ret_len, gboolean *ret_dir_foreign,
                           GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(DaxfileFile) d = trusted_open(dir, TRUE, FALSE, &local);
    g_autoptr(DaxfileFile) f = NULL;
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *shown = NULL;
    g_auto(DaxfileFd) fd = -1;
    const char *why = NULL;

    *ret_data = NULL;
    *ret_len = 0;
    *ret_dir_foreign = FALSE;
    if (!d) {
        if (!local)
            return TRUE;
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    shown = daxfile_escape(path);
    /* the directory's own owner may be anyone, but not a writer beside
     * it: group and others may not write it (unless it is sticky) */
    if ((d->st.st_mode & (S_IWGRP | S_IWOTH)) && !(d->st.st_mode & S_ISVTX)) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' is in '%s', which is writable by group or others, so anyone could replace it; fix: chmod go-w '%s'",
            shown, d->display, d->display);
        return FALSE;
    }
    fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return TRUE;
    if (fd < 0) {
        daxfile_set_error_errno(error, errno, "Cannot open '%s'", shown);
        return FALSE;
    }
    if (!(f = daxfile_file_new_from_fd(g_steal_fd(&fd), path, error)))
        return FALSE;
    *ret_dir_foreign = !trusted_uid(d->st.st_uid);
    /* in a directory someone else owns, that someone can rename any of
     * its files over @name, or make a new one: only a file a trusted user
     * made, linked nowhere else, is accepted (and the caller checks what
     * it names) */
    if (!S_ISREG(f->st.st_mode))
        why = "is not a regular file";
    else if (!trusted_uid(f->st.st_uid))
        why = "is not owned by root";
    else if (f->st.st_mode & (S_IWGRP | S_IWOTH))
        why = "is writable by group or others";
    else if (*ret_dir_foreign && f->st.st_nlink != 1)
        why = "has more than one link";
    if (why) {
        g_set_error(
            error, DAXFILE_ERROR, DAXFILE_ERROR_PERMISSION,
            "'%s' %s, so someone other than root could have written it, and daxfile obeys only what only root can change; fix: let libvirt write it again (restart the domain)",
            shown, why);
        return FALSE;
    }
    return read_all(f, ret_data, ret_len, error);
}
