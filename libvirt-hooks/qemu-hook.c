/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile's libvirt qemu hook (/etc/libvirt/hooks/qemu.d/daxfile)
 *
 * argv: DOMAIN OP SUBOP EXTRA; stdin: the domain XML. Exit 0 lets libvirt
 * go on; on failure one line on stderr (libvirt shows it) and exit 1.
 * stdout carries XML only when migrate/restore rewrote a path. This
 * program never talks to libvirt: libvirt is waiting for it.
 */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daxfile-conf.h"
#include "daxfile-domxml.h"
#include "daxfile-error.h"
#include "daxfile-hook.h"
#include "daxfile-proc.h"
#include "daxfile-util.h"

/* All of stdin, up to the XML size limit plus one byte to detect more */
static GByteArray *
read_stdin(GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[65536];

    for (;;) {
        ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            daxfile_set_error_errno(error, errno,
                                    "Cannot read the domain XML from stdin");
            return NULL;
        }
        if (n == 0)
            break;
        if (buf->len <= DAXFILE_DOMXML_MAX)
            g_byte_array_append(buf, chunk, (guint)n);
    }
    return g_steal_pointer(&buf);
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(DaxfileConf) conf = NULL;
    g_autoptr(GByteArray) xml = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *out = NULL;
    DaxfileHookCall call = {0};
    guint i;

    /* libvirtd, read before anything else: a reservation made at prepare
     * names it as the holder, and it may die while we run */
    call.parent = getppid();
    if (argc >= 4 && STREQ(argv[2], "prepare") && call.parent > 1)
        call.parent_start = daxfile_proc_start_time(call.parent);
    setlocale(LC_ALL, "");
    if (argc == 2 && STREQ(argv[1], "--version")) {
        printf("daxfile-hook %s\n", DAXFILE_VERSION);
        return 0;
    }
    if (argc == 2 && (STREQ(argv[1], "--help") || STREQ(argv[1], "-h"))) {
        printf(
            "Usage: daxfile-hook DOMAIN OP SUBOP [EXTRA] < domain.xml\n\n"
            "libvirt's qemu hook for daxfile (installed as /etc/libvirt/hooks/qemu.d/daxfile):\nvalidates, engages and releases static nvdimm backing files under the\n"
            "managed roots of /etc/daxfile/daxfile.conf. See daxfile-hook(8).\n");
        return 0;
    }
    if (argc < 4) {
        fprintf(
            stderr,
            "daxfile hook: expected DOMAIN OP SUBOP [EXTRA] as libvirt passes them (see daxfile-hook(8))\n");
        return 2;
    }
    call.object = argv[1];
    call.op = argv[2];
    call.subop = argv[3];
    xml = read_stdin(&error);
    if (xml) {
        call.xml = (const char *)xml->data;
        call.xml_len = xml->len;
        conf = daxfile_conf_load(NULL, &error);
    }
    if (conf)
        daxfile_hook_run(&call, conf, &out, notes, &error);
    for (i = 0; i < notes->len; i++)
        fprintf(stderr, "daxfile: note: %s\n",
                (const char *)g_ptr_array_index(notes, i));
    if (error) {
        fprintf(stderr, "daxfile: %s\n", error->message);
        return 1;
    }
    if (out)
        fputs(out, stdout);
    return 0;
}
