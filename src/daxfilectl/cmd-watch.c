/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile watch [--connect URI]: follow libvirt's domains, make static
 * the pmem devices hot-plugged into running ones, and wipe what an
 * undefined domain leaves behind, where daxfile.conf asks for it
 * (wipe_on_undefine). libvirt has no hook at hot-plug or undefine, so
 * this is a client of its event API, run as a service
 * (daxfile-watch.service).
 */
#include <signal.h>
#include <stdio.h>

#include "daxfile-conf.h"
#include "daxfile-error.h"
#include "daxfile-escape.h"
#include "daxfile-size.h"
#include "daxfile-watch.h"
#include "daxfilectl.h"

/* nothing to do (EX_CONFIG): daxfile-watch.service takes it as success */
#define WATCH_EXIT_NOTHING 78

static char *arg_connect;
static volatile gint stop;

static const GOptionEntry watch_options[] = {
    {"connect", 'c', 0, G_OPTION_ARG_STRING, &arg_connect,
     "libvirt URI (default: libvirt's default, qemu:///system for root)",
     "URI"},
    {NULL},
};

static void
on_signal(int sig)
{
    g_atomic_int_set(&stop, 1);
}

/* An event about a wipe that 'daxfile wipe' began and did not finish
 * (no domain): the watch finishes those too */
static void
report_manual(const DaxfileWatchEvent *ev, const char *path)
{
    g_autofree char *size =
        ev->wipe ? daxfile_size_format(ev->wipe->size) : NULL;

    if (ev->kind == DAXFILE_WATCH_WIPED) {
        fprintf(
            stderr,
            "%s: finished the wipe of '%s' that had not finished: %s read back as zeros (sha256 %s)\n",
            cli_program(), path, size, ev->wipe->sha256);
    } else if (ev->kind == DAXFILE_WATCH_KEPT) {
        fprintf(stderr, "%s: dropped the wipe owed on '%s': %s\n",
                cli_program(), path, ev->why);
    } else {
        fprintf(
            stderr,
            "%s: cannot finish the wipe of '%s' yet: %s; the wipe stays owed and is tried again\n",
            cli_program(), path, ev->why);
    }
}

static void
report_failed(const DaxfileWatchEvent *ev, const char *path, const char *dom)
{
    if (!path)
        fprintf(stderr, "%s: cannot read the wipes owed: %s\n", cli_program(),
                ev->why);
    else if (ev->pending)
        fprintf(
            stderr,
            "%s: cannot wipe '%s' of undefined domain '%s' yet: %s; the wipe stays owed and is tried again\n",
            cli_program(), path, dom, ev->why);
    else
        fprintf(stderr, "%s: cannot wipe '%s' of undefined domain '%s': %s\n",
                cli_program(), path, dom, ev->why);
}

/* A device hot-plugged into a running domain */
static void
report_plug(const DaxfileWatchEvent *ev, const char *path, const char *dom)
{
    g_autofree char *dev = daxfile_escape(ev->device ? ev->device : "?");

    if (ev->kind == DAXFILE_WATCH_PLUGGED)
        fprintf(stderr,
                "%s: made '%s' static, hot-plugged into domain '%s' as %s\n",
                cli_program(), path, dom, dev);
    else if (ev->kind == DAXFILE_WATCH_UNGUARDED)
        fprintf(
            stderr,
            "%s: '%s' hot-plugged into domain '%s' as %s is NOT static: %s; it is held for the domain, unguarded, until it stops\n",
            cli_program(), path, dom, dev, ev->why);
    else
        fprintf(
            stderr,
            "%s: '%s' hot-plugged into domain '%s' as %s is NOT static: %s\n",
            cli_program(), path, dom, dev, ev->why);
}

/* One line on stderr per event: it is a log, stdout stays empty */
static void
report(const DaxfileWatchEvent *ev, gpointer data)
{
    g_autofree char *path = ev->path ? daxfile_escape(ev->path) : NULL;
    g_autofree char *dom = ev->domain ? daxfile_escape(ev->domain) : NULL;
    g_autofree char *size =
        ev->wipe ? daxfile_size_format(ev->wipe->size) : NULL;

    if (ev->kind == DAXFILE_WATCH_PLUGGED ||
        ev->kind == DAXFILE_WATCH_UNGUARDED ||
        ev->kind == DAXFILE_WATCH_PLUG_REFUSED)
        report_plug(ev, path ? path : "?", dom ? dom : "?");
    else if (path && !dom && ev->kind != DAXFILE_WATCH_READY)
        report_manual(ev, path);
    else if (ev->kind == DAXFILE_WATCH_READY)
        fprintf(
            stderr,
            "%s: watching %u defined domains (%u files to wipe when undefined)\n",
            cli_program(), ev->domains, ev->files);
    else if (ev->kind == DAXFILE_WATCH_WIPED)
        fprintf(
            stderr,
            "%s: wiped '%s' of undefined domain '%s': %s read back as zeros (sha256 %s)\n",
            cli_program(), path, dom, size, ev->wipe->sha256);
    else if (ev->kind == DAXFILE_WATCH_KEPT)
        fprintf(stderr, "%s: kept '%s' of undefined domain '%s': %s\n",
                cli_program(), path, dom, ev->why);
    else if (ev->kind == DAXFILE_WATCH_WAITING)
        fprintf(
            stderr,
            "%s: domain '%s' was undefined while it runs: its files are wiped when it stops\n",
            cli_program(), dom);
    else if (ev->kind == DAXFILE_WATCH_FAILED)
        report_failed(ev, path, dom);
    else if (ev->kind == DAXFILE_WATCH_UNREADABLE)
        fprintf(
            stderr,
            "%s: domain '%s' cannot be read (%s): it counts as defined, and nothing of it is wiped\n",
            cli_program(), dom, ev->why);
    else if (ev->kind == DAXFILE_WATCH_UNKNOWN)
        fprintf(
            stderr,
            "%s: domain '%s' was undefined before its definition could be read: which files it used is not known, and none was wiped; fix: 'daxfile wipe' its files if they are no one's\n",
            cli_program(), dom);
    else if (ev->kind == DAXFILE_WATCH_LOST)
        fprintf(stderr,
                "%s: lost the connection to libvirt (%s); reconnecting\n",
                cli_program(), ev->why);
    fflush(stderr);
}

/* The configuration manages something: hot-plugs to take up, and
 * maybe wipes */
static gboolean
manages(const DaxfileConf *conf)
{
    return conf->roots->len > 0 || conf->device_dax;
}

static int
cmd_watch(int argc, char **argv)
{
    g_autoptr(DaxfileConf) conf = NULL;
    g_autoptr(GError) error = NULL;
    struct sigaction sa = {.sa_handler = on_signal};

    conf = daxfile_conf_load(NULL, &error);
    if (!conf)
        return cli_report_error(error);
    if (!manages(conf)) {
        g_autofree char *name = daxfile_escape(conf->path);

        g_set_error(
            &error, DAXFILE_ERROR, DAXFILE_ERROR_INVALID,
            "Nothing to watch: '%s' names no managed root and no device_dax; fix: set managed_roots in its [hook] section or a drop-in (daxfile.conf(5))",
            name);
        cli_report_error(error);
        return WATCH_EXIT_NOTHING;
    }
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (!daxfile_virt_watch(arg_connect, conf, &stop, report, NULL, &error))
        return cli_report_error(error);
    return CLI_EXIT_OK;
}

const CliVerb cmd_watch_verb = {
    .name = "watch",
    .dispatch = cmd_watch,
    .summary = CMD_WATCH_SUMMARY,
    .params = "",
    .description =
        "Follow libvirt's domains: make static the pmem devices hot-plugged into running ones, and wipe the files of a domain that is undefined, under the managed roots with wipe_on_undefine=true, once no other domain uses them.",
    .options = watch_options,
    .too_many = "no arguments expected",
};
