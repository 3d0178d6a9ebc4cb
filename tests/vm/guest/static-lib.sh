# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0-or-later
# static-lib.sh: the static-mode checks the guest scripts share (static,
# cxl), sourced after guest-lib.sh: a consumer (daxfile-consumer, the
# stand-in for QEMU) driven through a fifo, the layout operations static
# mode refuses, status and error checks. Needs --bin daxfile
# daxfile-consumer daxfile-layout-ops.
#
#   consumer_start FILE   start the consumer on FILE (MAP_SYNC); CPID is
#                         its pid; consumer_stop ends it (fd 7 and the
#                         files /tmp/cin, /tmp/cout are the fifo's)
#   cmd LINE, cmd_ok LINE one consumer command (its answer; "ok" or not)
#   refused FILE OP       the layout operation OP on FILE fails
#   status_has FILE TEXT...  daxfile status --json FILE has every TEXT
#   medium_has FILE ERE      status --json FILE's "medium" object, without
#                            blanks, matches ERE (anchored)
#   list_medium_has ERE      so does the "medium" of an entry of list --json
#   status_line FILE ERE     a line of daxfile status FILE matches ERE
#   region_persistence R     the nd region R's persistence_domain as ndctl
#                            lists it ("memory_controller", "unknown", ...)
#   expect_fail TEXT CMD...  CMD fails and says TEXT
#   expected_mechanism MNT   kernel, immutable-guard or verified-only

# shellcheck disable=SC2034 # MB, OPS, OPS_GUARD: for the scripts that source this
MB=1048576
# refused by every mechanism that enforces anything
# shellcheck disable=SC2034
OPS="truncate ftruncate open-trunc falloc-alloc falloc-keep falloc-punch
falloc-collapse falloc-insert falloc-zero clone clonerange dedupe copy-range
pwrite-extend rename unlink link"
# refused by the immutable guard (EPERM), allowed by the kernel mechanism,
# whose S_DAXFILE blocks layout and name changes only: writes inside the
# file are what a static file is for
# shellcheck disable=SC2034
OPS_GUARD="open-rdwr open-wronly pwrite-inside chmod"

# ------------------------------------------------------- the consumer
consumer_start() {
    rm -f /tmp/cin /tmp/cout
    mkfifo /tmp/cin
    # Create it here: the consumer's own >/tmp/cout happens only after its
    # </tmp/cin open returns, which may be after consumer_wait's first wc.
    : >/tmp/cout
    daxfile-consumer "$1" --sync </tmp/cin >/tmp/cout 2>&1 &
    CPID=$!
    exec 7>/tmp/cin
    consumer_wait 1 && grep -q '^mapped' /tmp/cout
}

consumer_wait() {
    # consumer_wait N: until the consumer has printed N lines
    local i=0
    while [ "$(wc -l </tmp/cout)" -lt "$1" ] && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    [ "$(wc -l </tmp/cout)" -ge "$1" ]
}

cmd() {
    # cmd LINE: send one command, print the consumer's answer
    local n
    n=$(wc -l </tmp/cout)
    echo "$*" >&7
    consumer_wait $((n + 1)) || { echo "no answer to '$*'"; return 1; }
    tail -n 1 /tmp/cout
}

cmd_ok() {
    local a
    a=$(cmd "$@")
    echo "$* -> $a"
    [ "$a" = ok ]
}

consumer_stop() {
    echo "exit 0" >&7
    exec 7>&-
    wait "$CPID"
}

# -------------------------------------------------------------- checks
status_has() {
    local f="$1"
    shift
    daxfile status --json "$f" >/tmp/st.json 2>&1
    cat /tmp/st.json
    for t in "$@"; do
        grep -q -- "$t" /tmp/st.json || { echo "missing: $t"; return 1; }
    done
}

# the "medium" objects in JSON text on stdin, one a line, without blanks
medium_objects() {
    tr -d ' \n' | grep -oE '"medium":\{[^{}]*(\{[^{}]*\})?[^{}]*\}'
}

medium_has() {
    local got
    got=$(daxfile status --json "$1" | medium_objects)
    echo "got:  $got"
    echo "want: $2"
    echo "$got" | grep -qxE -- "$2"
}

list_medium_has() {
    local got
    got=$(daxfile list --json | medium_objects)
    echo "got:  $got"
    echo "want: $1"
    echo "$got" | grep -qxE -- "$1"
}

status_line() {
    daxfile status "$1" >/tmp/st.txt 2>&1
    cat /tmp/st.txt
    grep -qE -- "$2" /tmp/st.txt
}

region_persistence() {
    ndctl list -R -r "$1" | grep -o '"persistence_domain":"[a-z_]*"' |
        cut -d'"' -f4
}

refused() {
    # refused FILE OP: the operation must not succeed
    local r
    r=$(daxfile-layout-ops "$1" "$2" "$1.src")
    echo "$2: $r"
    [ -n "$r" ] && [ "$r" != OK ]
}

expect_fail() {
    local want="$1" out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    echo "$out (exit $rc)"
    [ "$rc" -ne 0 ] && echo "$out" | grep -q -- "$want"
}

expected_mechanism() {
    # The kernel's daxctl() when it advertises it; else the guard, only
    # where the self-test proves it safe here.
    if [ -e /sys/kernel/mm/daxfile/syscall_nr ]; then
        echo kernel
    elif daxfile selftest "$1" >&2; then
        echo immutable-guard
    else
        echo verified-only
    fi
}
