#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The generated man pages render without a warning from man/groff
# (MANWIDTH=80 man --warnings -l PAGE), and name every daxfile command.
# usage: test-man.sh PAGE... (prints TAP)
set -u
# the TAP helpers (dx_*)
# shellcheck source=../../tools/harness/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/harness/guest-lib.sh"
if ! command -v man >/dev/null; then
    dx_skip_all "man is not installed (man-db)"
fi
ok() { # STATUS NAME [DIAG]
    if [ "$1" -eq 0 ]; then
        dx_ok "$2"
    else
        dx_not_ok "$2" ${3:+"$3"}
    fi
}
for page in "$@"; do
    name=$(basename "$page")
    warnings=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 \
        >/dev/null)
    [ -z "$warnings" ]
    ok $? "$name renders without warnings" "$warnings"
    if [ "$name" = daxfile.8 ]; then
        text=$(MANWIDTH=80 man -l "$page" 2>/dev/null)
        missing=""
        for cmd in create check status enable disable run list repair \
            selftest attach detach domain-xml wipe watch; do
            grep -q "^       $cmd\b" <<<"$text" || missing+=" $cmd"
        done
        [ -z "$missing" ]
        ok $? "daxfile.8 describes every command" "missing:$missing"
    fi
done
dx_done
