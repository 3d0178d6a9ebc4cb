#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bash completion of daxfile (data/bash-completion/daxfile), unprivileged:
# sources bash-completion and the script, fills COMP_WORDS for a few command
# lines and compares COMPREPLY; and checks that every command completes the
# same long options as its --help lists. Prints TAP.
set -u
# the TAP helpers (dx_*)
# shellcheck source=../../tools/harness/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/harness/guest-lib.sh"
srcdir=${DAXFILE_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${DAXFILE_BUILDDIR:-$srcdir/build}
daxfile=$(realpath "${DAXFILE_BIN:-$builddir/src/daxfilectl/daxfile}")
bash_completion=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}

if [ ! -r "$bash_completion" ]; then
    dx_skip_all "bash-completion is not installed ($bash_completion)"
fi
# shellcheck source=/dev/null
. "$bash_completion"
# shellcheck source=../../data/bash-completion/daxfile
. "$srcdir/data/bash-completion/daxfile"

ok() { # COND-STATUS NAME [DIAG]
    if [ "$1" -eq 0 ]; then
        dx_ok "$2"
    else
        dx_not_ok "$2" ${3:+"$3"}
    fi
}

# complete WORD... : COMPREPLY, sorted, on one line (the last WORD is the
# one being completed; "" for an empty one)
complete_words() {
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _daxfile daxfile "${COMP_WORDS[COMP_CWORD]}" \
        "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
    printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u | tr '\n' ' ' |
        sed 's/ $//'
}

expect() { # WANT WORD...
    local want=$1 got
    shift
    got=$(complete_words "$@")
    [ "$got" = "$want" ]
    ok $? "complete '$*'" "got '$got', want '$want'"
}

expect_has() { # WANT WORD...: WANT is one of the completions
    local want=$1 got
    shift
    got=$(complete_words "$@")
    [[ " $got " == *" $want "* ]]
    ok $? "complete '$*' offers '$want'" "got '$got'"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
touch a.img b.img
mkdir sub

commands="attach check create detach disable domain-xml enable list repair"
commands+=" run selftest status watch wipe"
expect "--help --version $commands" daxfile ""
expect "status" daxfile st
expect "--align --allow-non-dax --help --json --size --version" \
    daxfile create --
expect "auto immutable-guard kernel verified-only" \
    daxfile enable --mechanism ""
expect "immutable-guard kernel verified-only" daxfile run -m ""
expect "a.img b.img sub" daxfile check --json ""
expect "sub" daxfile selftest ""
expect "--help --json --version" daxfile list --
expect "" daxfile repair ""
expect "" daxfile domain-xml --size ""
expect "a.img b.img sub" daxfile run --file ""
expect_has "true" daxfile run -f a.img -- tru
expect "a.img b.img sub" daxfile attach --uri test:///default dom ""
expect "qemu:///session qemu:///system" daxfile detach -c ""
expect "qemu:///session qemu:///system" daxfile watch --connect ""

# every command's long options, as its --help lists them
for cmd in create check status enable disable run attach detach domain-xml \
    list repair selftest wipe watch; do
    want=$("$daxfile" "$cmd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u |
        tr '\n' ' ' | sed 's/ $//')
    got=$(complete_words daxfile "$cmd" --)
    [ -n "$want" ] && [ "$got" = "$want" ]
    ok $? "'daxfile $cmd --' completes the options of 'daxfile $cmd --help'" \
        "got '$got', want '$want'"
done

dx_done
