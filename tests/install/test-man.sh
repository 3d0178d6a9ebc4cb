#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The generated man pages render without a warning from man/groff
# (MANWIDTH=80 man --warnings -l PAGE), and name every daxfile command.
# usage: test-man.sh PAGE... (prints TAP)
set -u
if ! command -v man >/dev/null; then
    echo "1..0 # SKIP man is not installed (man-db)"
    exit 0
fi
n=0
failed=0
ok() { # STATUS NAME [DIAG]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        failed=$((failed + 1))
        echo "not ok $n - $2"
        [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
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
echo "1..$n"
exit $((failed > 0))
