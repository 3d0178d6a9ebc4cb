# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /daxfile/lib/guest-lib.sh: helpers for daxfile-vm guest scripts (busybox sh).
#
#   . /daxfile/lib/guest-lib.sh
#   dx_plan 3
#   dx_fsdax
#   dx_run "ext4 dax mount" dx_mkfs ext4 /mnt/ext4
#   dx_is "answer" "$(echo 42)" 42
#   dx_done
#
# stdout is the TAP stream (the guest's ttyS1): print nothing else there.
# Everything a helper runs is echoed to stderr (the console, i.e. the serial
# log), prefixed with "+ ".  Set-up helpers return non-zero on failure and
# print why on stderr; wrap them in dx_run to turn them into test points.
#
# Its TAP section (dx_plan ... dx_done) is the one TAP emitter of the shell
# tests: the host-side ones (the install suite's shell tests) source this file too.
#
# Variables set by the helpers:
#   DX_NAMESPACE  namespaceN.M configured by dx_fsdax/dx_devdax/dx_raw
#   DX_PMEM       /dev/pmemN (dx_fsdax, dx_raw, dx_cxl_fsdax): default
#                 device of dx_mkfs
#   DX_DAX        /dev/daxN.M (dx_devdax)
#   DX_MNT        mount point of the last dx_mkfs/dx_mount
#   DX_MOUNTS     every mount point made by dx_mkfs/dx_mount (for dx_umount)
# dx__* functions and dx_val are this file's own: a script calls
# dx_json_get, dx_wait_dev and the others, and reads only the DX_ above.

DX_N=0
DX_FAILED=0
DX_PLANNED=
DX_MOUNTS=
DX_TRACE=/sys/kernel/tracing
DX_DEPTH=0
DX_NL='
'

# ---------------------------------------------------------------- TAP

dx__name() {
    # '#' starts a TAP directive and a newline ends the line: keep names safe.
    printf '%s' "$*" | tr '#\n' '_ '
}

dx__line() {
    # dx__line PREFIX NAME: one TAP line. Without a '#' or a newline in NAME
    # (nearly always) no process is started: under nested TCG each costs a
    # quarter of a second.
    case "$2" in
    *'#'* | *"$DX_NL"*) echo "$1 - $(dx__name "$2")" ;;
    *) echo "$1 - $2" ;;
    esac
}

dx_diag() {
    # dx_diag TEXT...: each line of TEXT as a TAP comment.
    printf '%s\n' "$*" | sed 's/^/# /'
}

dx_python() {
    # dx_python SCRIPT [ARG...]: exec the host's python3 on SCRIPT, a path
    # in the source tree, with the test modules on its PYTHONPATH as meson's
    # test environment has them (needs --hostroot)
    local script="$1"
    shift
    PYTHONPATH="$DAXFILE_SRCDIR/tools/harness:$DAXFILE_SRCDIR/tests/helpers:$DAXFILE_SRCDIR/tests/libvirt" \
        exec /usr/bin/python3 "$DAXFILE_SRCDIR/$script" "$@"
}

dx_rotate() {
    # dx_rotate N WORDS...: the words, starting at the N-th (0-based)
    local n="$1" i=0 head='' tail='' w
    shift
    for w in "$@"; do
        if [ $i -lt "$n" ]; then head="$head $w"; else tail="$tail $w"; fi
        i=$((i + 1))
    done
    # shellcheck disable=SC2086 # the words, once each, space-separated
    echo $tail $head
}

dx_plan() {
    # dx_plan N: print the plan first (recommended). Without it, dx_done
    # prints a late plan; a script that dies early then has no plan, and the
    # harness fails it for that.
    DX_PLANNED=$1
    echo "1..$1"
}

dx_skip_all() {
    # dx_skip_all WHY: the whole script does not apply; exits.
    echo "1..0 # SKIP $*"
    exit 0
}

dx_bail_out() {
    # dx_bail_out WHY: the run cannot go on; the harness fails it. The
    # caller decides how to exit.
    echo "Bail out! $*"
}

dx_ok() {
    DX_N=$((DX_N + 1))
    dx__line "ok $DX_N" "$1"
}

dx_not_ok() {
    # dx_not_ok NAME [DIAG...]
    local name="$1"
    shift
    DX_N=$((DX_N + 1))
    DX_FAILED=$((DX_FAILED + 1))
    dx__line "not ok $DX_N" "$name"
    [ $# -eq 0 ] || dx_diag "$@"
    echo "dx: FAILED $DX_N - $name" >&2
    return 1
}

dx_skip() {
    # dx_skip NAME WHY
    DX_N=$((DX_N + 1))
    echo "ok $DX_N - $(dx__name "$1") # SKIP $(dx__name "$2")"
}

dx_todo() {
    # dx_todo NAME WHY: a known failure that must not fail the run.
    DX_N=$((DX_N + 1))
    echo "not ok $DX_N - $(dx__name "$1") # TODO $(dx__name "$2")"
}

dx_is() {
    # dx_is NAME GOT WANT
    if [ "$2" = "$3" ]; then
        dx_ok "$1"
    else
        dx_not_ok "$1" "got:  '$2'" "want: '$3'"
    fi
}

dx_run() {
    # dx_run NAME CMD [ARG...]: ok iff CMD exits 0. CMD may be a shell
    # function; it runs in this shell, so variables it sets are kept. Its
    # output goes to the console, and also into the TAP as # lines on failure.
    # Shell builtins only around CMD (see dx__line); the output file of
    # each nesting depth is reused.
    local dx_run_name="$1" dx_run_out dx_run_rc dx_run_line
    shift
    DX_DEPTH=$((DX_DEPTH + 1))
    dx_run_out=/tmp/dx_run.$$.$DX_DEPTH
    "$@" >"$dx_run_out" 2>&1
    dx_run_rc=$?
    DX_DEPTH=$((DX_DEPTH - 1))
    while IFS= read -r dx_run_line || [ -n "$dx_run_line" ]; do
        printf '  | %s\n' "$dx_run_line"
    done <"$dx_run_out" >&2
    if [ $dx_run_rc -eq 0 ]; then
        dx_ok "$dx_run_name"
    else
        dx_not_ok "$dx_run_name" "exit status $dx_run_rc: $*"
        tail -n 40 "$dx_run_out" | sed 's/^/# /'
    fi
    return $dx_run_rc
}

dx_done() {
    # End of script: exit 1 if any test failed (the harness reports it too).
    [ -n "$DX_PLANNED" ] || echo "1..$DX_N"
    echo "dx: $DX_N tests, $DX_FAILED failed" >&2
    [ "$DX_FAILED" -eq 0 ] || exit 1
    exit 0
}

# ------------------------------------------------------------ helpers

dx_x() {
    # dx_x CMD...: echo the command to stderr, then run it.
    echo "+ $*" >&2
    "$@"
}

dx__json() {
    # dx__json KEY JSON: sets dx_val to the first string value of "KEY" in
    # JSON (ndctl/daxctl output), empty if none. Shell only: no process.
    dx_val=
    case "$2" in
    *"\"$1\":\""*)
        dx_val=${2#*\""$1"\":\"}
        dx_val=${dx_val%%\"*}
        ;;
    esac
}

dx_json_get() {
    # dx_json_get KEY JSON: print the first string value of "KEY" in JSON
    # (ndctl/daxctl output), an empty line if none
    dx__json "$1" "$2"
    printf '%s\n' "$dx_val"
}

dx__read() {
    # dx__read FILE: sets dx_val to FILE's first line (a sysfs attribute),
    # empty if it cannot be read. The shell's own read: no process.
    dx_val=
    [ -r "$1" ] && IFS= read -r dx_val <"$1"
    return 0
}

dx_wait_dev() {
    # dx_wait_dev PATH: wait up to 5 s for a device node to appear
    local i=0
    while [ ! -e "$1" ] && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -e "$1" ] || { echo "dx: $1 did not appear" >&2; return 1; }
}

dx__region() {
    # Sets dx_region, dx_nmem, dx_ns for region index $1.
    dx_region=region$1
    dx_ns=namespace$1.0
    if [ ! -d "/sys/bus/nd/devices/$dx_region" ]; then
        echo "dx: no $dx_region (is there an NVDIMM? --pmem none?)" >&2
        return 1
    fi
    dx__read "/sys/bus/nd/devices/$dx_region/mapping0"
    dx_nmem=${dx_val%%,*}
}

dx__fsdax_now() {
    # What `ndctl list -n $dx_ns` says of a namespace already in fsdax mode
    # (dev, mode, blockdev), read from sysfs; nothing if it is not. ndctl's
    # process start costs seconds under nested TCG (the chain suite).
    # No process is started here either (a quarter of a second each).
    local holder blk=
    dx__read "/sys/bus/nd/devices/$dx_ns/mode"
    [ "$dx_val" = memory ] || return 0
    dx__read "/sys/bus/nd/devices/$dx_ns/holder"
    holder=$dx_val
    case "$holder" in pfn*) ;; *) return 0 ;; esac
    for blk in "/sys/bus/nd/devices/$holder/block/"*; do
        [ -e "$blk" ] && blk=${blk##*/} && break
        blk=
    done
    [ -n "$blk" ] || return 0
    echo "{\"dev\":\"$dx_ns\",\"mode\":\"fsdax\",\"blockdev\":\"$blk\"}"
}

dx__namespace() {
    # dx__namespace MODE [--label] [--force] [INDEX]
    local mode="$1" label=0 force=0 idx=0 cur json
    shift
    while [ $# -gt 0 ]; do
        case "$1" in
        --label) label=1 ;;
        --force) force=1 ;;
        *) idx=$1 ;;
        esac
        shift
    done
    dx__region "$idx" || return 1
    if [ "$mode" = fsdax ]; then
        cur=$(dx__fsdax_now)
    else
        cur=$(ndctl list -n "$dx_ns" 2>/dev/null)
    fi
    if [ $force -eq 0 ] && echo "$cur" | grep -q "\"mode\":\"$mode\""; then
        # Already configured (a later boot on the same backing file): keep
        # it, its data is what a multi-boot test wants to see again.
        echo "dx: reusing $dx_ns in $mode mode" >&2
        json=$cur
    elif [ $label -eq 1 ]; then
        # Only label-backed namespaces have a uuid attribute in sysfs.
        if [ ! -e "/sys/bus/nd/devices/$dx_ns/uuid" ]; then
            # No labels yet: the recipe from dax-in-a-guest.md section 4.
            dx_x ndctl disable-region "$dx_region" >&2 &&
                dx_x ndctl init-labels -f "$dx_nmem" >&2 &&
                dx_x ndctl enable-region "$dx_region" >&2 || return 1
        else
            dx_x ndctl destroy-namespace -f -r "$dx_region" all >&2 || return 1
        fi
        json=$(dx_x ndctl create-namespace -r "$dx_region" -m "$mode") || return 1
    else
        json=$(dx_x ndctl create-namespace -f -e "$dx_ns" -m "$mode") || return 1
    fi
    echo "$json" >&2
    dx__json dev "$json"
    # shellcheck disable=SC2034 # for the scripts that source this
    DX_NAMESPACE=$dx_val
    dx_json=$json
}

dx_fsdax() {
    # dx_fsdax [--label] [--force] [INDEX]: namespace of region INDEX
    # (default 0) in fsdax mode; sets DX_PMEM. --label uses the label area
    # (the NVDIMM needs --pmem FILE,label=128K). An existing fsdax namespace
    # is kept unless --force.
    dx__namespace fsdax "$@" || return 1
    dx__fsdax_dev "$dx_json"
}

dx__fsdax_dev() {
    # dx__fsdax_dev JSON: DX_PMEM, the block device of the fsdax namespace
    # ndctl described in JSON, once it is there and DAX-capable
    dx__json blockdev "$1"
    DX_PMEM=/dev/$dx_val
    dx_wait_dev "$DX_PMEM" || return 1
    dx__read "/sys/block/${DX_PMEM#/dev/}/queue/dax"
    [ "$dx_val" = 1 ] || {
        echo "dx: $DX_PMEM has queue/dax=0" >&2
        return 1
    }
}

dx_dax_pair() {
    # dx_dax_pair: xfs on NVDIMM 0 at /mnt/xfs and ext4 on NVDIMM 1 at
    # /mnt/ext4, both mounted -o dax, for a script that then hands over to
    # a test program; if that fails, one failed result and the end.
    if ! { dx_fsdax 0 && dx_mkfs xfs /mnt/xfs && dx_fsdax 1 &&
           dx_mkfs ext4 /mnt/ext4; } >&2; then
        dx_plan 1
        dx_not_ok "set-up: fsdax namespaces, xfs and ext4 mounted -o dax"
        dx_done
    fi
}

dx_cxl_region() {
    # dx_cxl_region: the pmem capacity of the boot's one CXL memdev (mem0,
    # a --pmem model=cxl device) as CXL region0 under the root decoder
    # decoder0.0 (cxl create-region -t pmem), committed, decoded by
    # mem0's endpoint decoder in pmem mode. Regions do not survive a boot
    # (the decoders are reset): every boot makes it again.
    local out
    dx_x cxl create-region -t pmem -d decoder0.0 -m mem0 >&2 || return 1
    out=$(cxl list -R -r region0) && echo "$out" >&2 || return 1
    echo "$out" | grep -q '"decode_state":"commit"' || return 1
    out=$(cxl list -D -m mem0) && echo "$out" >&2 || return 1
    echo "$out" | grep -q '"region":"region0"' &&
        echo "$out" | grep -q '"mode":"pmem"'
}

dx_cxl_fsdax() {
    # dx_cxl_fsdax: one fsdax namespace over the nd region of CXL region0
    # (dx_cxl_region), on fresh labels: the labels an earlier boot wrote
    # carry an interleave-set cookie of 0, which the kernel refuses, so
    # they are initialised again (the same geometry: a filesystem after
    # the namespace's info block is left as it was); sets DX_PMEM
    local nmem json
    dx__read /sys/bus/nd/devices/region0/mapping0
    nmem=${dx_val%%,*}
    [ -n "$nmem" ] || { echo "dx: nd region0 has no mapping" >&2; return 1; }
    dx_x ndctl disable-region region0 >&2
    dx_x ndctl init-labels -f "$nmem" >&2 &&
        dx_x ndctl enable-region region0 >&2 || return 1
    json=$(dx_x ndctl create-namespace -m fsdax -r region0) || return 1
    echo "$json" >&2
    dx__fsdax_dev "$json"
}

dx_devdax() {
    # dx_devdax [--label] [--force] [INDEX]: devdax mode; sets DX_DAX.
    dx__namespace devdax "$@" || return 1
    dx__json chardev "$dx_json"
    DX_DAX=/dev/$dx_val
    dx_wait_dev "$DX_DAX"
}

dx_raw() {
    # dx_raw [--label] [--force] [INDEX]: raw mode (no DAX); sets DX_PMEM.
    dx__namespace raw "$@" || return 1
    dx__json blockdev "$dx_json"
    DX_PMEM=/dev/$dx_val
    dx_wait_dev "$DX_PMEM"
}

dx_mkfs() {
    # dx_mkfs TYPE MOUNTPOINT [--no-dax] [--dev DEV]
    #   ext4          mkfs.ext4 -b 4096 -E stride=512,stripe_width=512 (2 MiB-aligned extents)
    #   xfs           mkfs.xfs -m reflink=0 -d su=2m,sw=1 (2 MiB-aligned extents)
    #   xfs-reflink   mkfs.xfs -m reflink=1 -d su=2m,sw=1 (shared extents possible)
    #   ext4-default  mkfs.ext4 -b 4096 (extents usually NOT 2 MiB-aligned)
    #   xfs-default   mkfs.xfs -m reflink=0 (extents at 96 KiB mod 2 MiB)
    # then mount -o dax (or -o dax=never with --no-dax); sets DX_MNT.
    local type="$1" mnt="$2" dax=dax dev="$DX_PMEM" fs
    [ $# -ge 2 ] || { echo "dx_mkfs: TYPE MOUNTPOINT required" >&2; return 2; }
    shift 2
    while [ $# -gt 0 ]; do
        case "$1" in
        --no-dax) dax=dax=never ;;
        --dev) dev=$2; shift ;;
        *) echo "dx_mkfs: unknown option '$1'" >&2; return 2 ;;
        esac
        shift
    done
    [ -n "$dev" ] || { echo "dx_mkfs: no device; run dx_fsdax first" >&2; return 1; }
    case "$type" in
    ext4) fs=ext4; dx_x mkfs.ext4 -q -F -b 4096 -E lazy_journal_init=1,stride=512,stripe_width=512 "$dev" >&2 ;;
    ext4-default) fs=ext4; dx_x mkfs.ext4 -q -F -b 4096 -E lazy_journal_init=1 "$dev" >&2 ;;
    xfs) fs=xfs; dx_x mkfs.xfs -q -f -m reflink=0 -d su=2m,sw=1 "$dev" >&2 ;;
    xfs-reflink) fs=xfs; dx_x mkfs.xfs -q -f -m reflink=1 -d su=2m,sw=1 "$dev" >&2 ;;
    xfs-default) fs=xfs; dx_x mkfs.xfs -q -f -m reflink=0 "$dev" >&2 ;;
    *) echo "dx_mkfs: unknown type '$type'" >&2; return 2 ;;
    esac || return 1
    [ "$dax" = dax ] && dax= || dax=--no-dax
    dx_mount "$mnt" --dev "$dev" --type "$fs" $dax
}

dx_mount() {
    # dx_mount MOUNTPOINT [--no-dax] [--dev DEV] [--type ext4|xfs]: mount an
    # existing filesystem (e.g. on a later boot); sets DX_MNT.
    local mnt="$1" dax=dax dev="$DX_PMEM" type=
    shift
    while [ $# -gt 0 ]; do
        case "$1" in
        --no-dax) dax=dax=never ;;
        --dev) dev=$2; shift ;;
        --type) type=$2; shift ;;
        *) echo "dx_mount: unknown option '$1'" >&2; return 2 ;;
        esac
        shift
    done
    [ -d "$mnt" ] || mkdir -p "$mnt" || return 1
    dx_x mount ${type:+-t "$type"} -o "$dax" "$dev" "$mnt" >&2 || return 1
    # shellcheck disable=SC2034 # for the scripts that source this
    DX_MNT=$mnt
    DX_MOUNTS="$DX_MOUNTS $mnt"
}

dx_umount() {
    # dx_umount [MOUNTPOINT...]: default every dx_mkfs/dx_mount mount.
    local m rc=0 rest=
    # shellcheck disable=SC2086 # the mount points, a list
    [ $# -gt 0 ] || set -- $DX_MOUNTS
    for m in "$@"; do
        sync
        dx_x umount "$m" >&2 || rc=1
    done
    for m in $DX_MOUNTS; do
        case " $* " in *" $m "*) ;; *) rest="$rest $m" ;; esac
    done
    DX_MOUNTS=$rest
    return $rc
}

dx_extents_aligned() {
    # dx_extents_aligned FILE [BYTES]: true iff FILE has extents, none of
    # them unwritten, and each maps file offset to device offset with the
    # same remainder modulo BYTES (default 2 MiB): then every aligned 2 MiB
    # chunk inside an extent can be mapped by one PMD. Prints filefrag -v.
    local f="$1" align="${2:-2097152}" out
    out=$(filefrag -v "$f") || return 2
    echo "$out"
    echo "$out" | awk -v align="$align" '
        /^File size of .* blocks of [0-9]+ bytes/ {
            for (i = 1; i <= NF; i++) if ($i == "bytes)") bs = $(i - 1)
        }
        /^ *[0-9]+:/ {
            line = $0
            gsub(/[.:]+/, " ", line)
            split(line, f, " ")
            n++
            if ((f[4] - f[2]) * bs % align != 0) {
                print "misaligned: " $0; bad = 1
            }
            if ($0 ~ /unwritten/) { print "unwritten: " $0; bad = 1 }
        }
        END {
            if (!bs || !n) { print "no extents"; exit 1 }
            exit bad
        }'
}

# ------------------------------------------------------------ tracing

dx_have_event() {
    # dx_have_event SYSTEM/EVENT: true if tracefs offers that event.
    [ -d "$DX_TRACE/events/$1" ]
}

dx_trace_start() {
    # dx_trace_start SYSTEM/EVENT...: clear the buffer, enable the events.
    local e
    echo 0 >"$DX_TRACE/tracing_on" || return 1
    echo >"$DX_TRACE/trace"
    for e in "$@"; do
        echo 1 >"$DX_TRACE/events/$e/enable" || return 1
    done
    echo 1 >"$DX_TRACE/tracing_on"
}

dx_trace_stop() {
    # dx_trace_stop FILE: stop, disable all events, save the buffer to FILE.
    echo 0 >"$DX_TRACE/tracing_on"
    echo 0 >"$DX_TRACE/events/enable"
    grep -v '^#' "$DX_TRACE/trace" >"$1"
}
