#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Every benchmark of issue 12's targets in one run, and one summary table:
#
#   target | measured (median) | spread | goal | met?
#
# It runs, each for BENCH_ROUNDS interleaved rounds (default 3; 2 with
# --quick):
#   1. run-core.sh (bench-core and bench-core-before, alternately, every
#      measurement of --list, the machine's floor among them);
#   2. bench-core --only million (1M groups, 2 registered threads);
#   3. with BENCH_PEER=OTHER_BUILDDIR, bench-core --only flush_sparse of
#      this build and of the peer's, alternately: the "before" of a flush
#      rewrite (without it the full flush is compared with
#      bench-core-before, which has the same flush code);
#   4. the state of BENCH_GROUPS (default 1,000,000) groups: bench-persist
#      (persist_save() and persist_restore() timed in-process), then the
#      daemon started on the state it left: from exec to its first answer
#      (the load), then SIGTERM, and from there to the state file being
#      replaced (its last save, the whole state) and to its exit;
#   5. run-sock.sh (memacctd against redis INCRBY at 1, 8 and 64
#      connections, depth 1 and 16; the client's stock).
# The scripts' own tables go to stderr as they finish; the summary table
# alone goes to stdout. Figures come from BENCH_RAW of run-core.sh and
# run-sock.sh, every round kept: a ratio is taken per round between two
# measurements that ran back to back, then the median over the rounds.
# spread: (max - min) / median of the rounds' values, in %.
#
# Usage: run-all.sh [BUILDDIR] [--quick]
#   BENCH_ROUNDS=3  BENCH_GROUPS=1000000  BENCH_PEER=OTHER_BUILDDIR
#   BENCH_DIR=/var/tmp (the state files: a disk, where fsync costs
#   something)  BENCH_SYNC=yes (the daemon's default, sync = yes)
#   BENCH_SKIP="sock persist million core peer" (parts left out)
#   BENCH_KEEP=DIR: keep every raw line in DIR/raw
# --quick: run-core.sh --quick, shorter socket points (500 ms), 1000
# idle sessions, no unpinned point: about 3 minutes (about 8 without).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
quick=0
for a in "$@"; do
        case $a in
        --quick) quick=1 ;;
        *) echo "run-all.sh: unknown argument $a" >&2; exit 1 ;;
        esac
done
if [ "$quick" = 1 ]; then rounds=${BENCH_ROUNDS:-2}; else rounds=${BENCH_ROUNDS:-3}; fi
groups=${BENCH_GROUPS:-1000000}
sync=${BENCH_SYNC:-yes}
skip=" ${BENCH_SKIP:-} "
dir=$build/tests/bench
daemon=${MEMACCTD:-$build/daemon/memacctd}
ctl=$build/client/memacctctl

skipped() {
        case $skip in *" $1 "*) return 0 ;; esac
        return 1
}

for exe in "$dir/bench-core" "$dir/bench-core-before" "$dir/bench-persist" "$daemon" "$ctl"; do
        if [ ! -x "$exe" ]; then
                echo "run-all.sh: $exe not found; build it with ninja -C $build" >&2
                exit 1
        fi
done

tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/memacct-bench.XXXXXX")
dpid=
cleanup() {
        if [ -n "$dpid" ]; then
                kill "$dpid" 2>/dev/null || true
                wait "$dpid" 2>/dev/null || true
        fi
        if [ -n "${BENCH_KEEP:-}" ]; then
                if mkdir -p "$BENCH_KEEP"; then
                        cp "$tmp/raw" "$BENCH_KEEP/raw" || true
                fi
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
: >"$tmp/raw"
notes=
note() {
        notes="$notes$*
"
}

now() {
        date +%s%N
}

start=$(now)
echo "run-all.sh: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds," \
     "quick=$quick, $groups groups, state in $tmp" >&2

# ---- 1. the core: fast paths, siblings, flush ----------------------------
if ! skipped core; then
        q=
        [ "$quick" = 1 ] && q=--quick
        echo "run-all.sh: run-core.sh" >&2
        BENCH_ROUNDS=$rounds BENCH_RAW=$tmp/core.raw "$here/run-core.sh" "$build" $q >&2
        sed 's/^/core /' "$tmp/core.raw" >>"$tmp/raw"
fi

# ---- 2. a million groups --------------------------------------------------
if ! skipped million; then
        r=1
        while [ "$r" -le "$rounds" ]; do
                echo "run-all.sh: million, round $r/$rounds" >&2
                "$dir/bench-core" --only million --million-groups "$groups" >"$tmp/out"
                sed 's/^/million /' "$tmp/out" >>"$tmp/raw"
                r=$((r + 1))
        done
fi

# ---- 3. the flush against another build ----------------------------------
if [ -n "${BENCH_PEER:-}" ] && ! skipped peer; then
        peer=$BENCH_PEER/tests/bench/bench-core
        if [ -x "$peer" ] && "$peer" --list | grep -qx flush_sparse; then
                r=1
                while [ "$r" -le "$rounds" ]; do
                        echo "run-all.sh: flush against $BENCH_PEER, round $r/$rounds" >&2
                        if [ $((r % 2)) -eq 1 ]; then order="self peer"; else order="peer self"; fi
                        for v in $order; do
                                if [ "$v" = self ]; then exe=$dir/bench-core; else exe=$peer; fi
                                "$exe" --only flush_sparse >"$tmp/out"
                                sed "s/^/peer $v /" "$tmp/out" >>"$tmp/raw"
                        done
                        r=$((r + 1))
                done
        else
                note "BENCH_PEER: $peer has no flush_sparse; the full flush is compared with bench-core-before"
        fi
fi

# ---- 4. the state of many groups: saved and loaded -----------------------
# One round: bench-persist times persist_save() and persist_restore()
# in-process and leaves the state; the daemon then starts on it. Its load
# runs from exec to the first answer to `memacctctl info` (the whole
# start: config, restore, the reservation for the next save, the
# listener). Its first save (whole: the journal is folded in) runs right
# after the start; once info counts it, SIGTERM starts the last save, also
# of the whole state: done when the state file is another inode (the
# rename that ends persist_save()).
ms_since() {
        echo $(( ($(now) - $1) / 1000000 ))
}

persist_round() {
        d=$tmp/persist
        rm -rf "$d"
        mkdir -p "$d/state"
        set -- --dir "$d/state" --groups "$groups" --keep
        [ "$sync" = yes ] && set -- "$@" --sync
        "$dir/bench-persist" "$@" >"$tmp/out"
        sed 's/^/persist /' "$tmp/out" >>"$tmp/raw"
        printf '[daemon]\nsync = %s\n[limits]\ngroups = %s\n' "$sync" $((groups * 2)) >"$d/conf"

        t0=$(now)
        "$daemon" --socket "$d/sock" --state-dir "$d/state" --config "$d/conf" >"$d/log" 2>&1 &
        dpid=$!
        until "$ctl" --socket "$d/sock" info >/dev/null 2>&1; do
                if ! kill -0 "$dpid" 2>/dev/null || [ "$(ms_since "$t0")" -gt 120000 ]; then
                        cat "$d/log" >&2
                        echo "run-all.sh: memacctd did not answer on a state of $groups groups" >&2
                        exit 1
                fi
                sleep 0.01
        done
        echo "daemon daemon_load $groups $(($(now) - t0))" >>"$tmp/raw"
        t0=$(now)
        until "$ctl" --socket "$d/sock" --json info | grep -q '"saves":[1-9]'; do
                if [ "$(ms_since "$t0")" -gt 120000 ]; then
                        echo "run-all.sh: memacctd's first save did not end" >&2
                        exit 1
                fi
                sleep 0.05
        done
        ino=$(stat -c %i "$d/state/state")
        t0=$(now)
        kill -TERM "$dpid"
        while [ "$(stat -c %i "$d/state/state" 2>/dev/null)" = "$ino" ] && kill -0 "$dpid" 2>/dev/null; do
                sleep 0.005
        done
        t1=$(now)
        wait "$dpid" || {
                cat "$d/log" >&2
                echo "run-all.sh: memacctd failed at its exit" >&2
                exit 1
        }
        dpid=
        t2=$(now)
        if [ "$(stat -c %i "$d/state/state")" = "$ino" ]; then
                note "daemon: the state file was not replaced at SIGTERM: no save time"
        else
                echo "daemon daemon_save $groups $((t1 - t0))" >>"$tmp/raw"
        fi
        echo "daemon daemon_stop $groups $((t2 - t0))" >>"$tmp/raw"
        rm -rf "$d"
}

if ! skipped persist; then
        r=1
        while [ "$r" -le "$rounds" ]; do
                echo "run-all.sh: state save and load, round $r/$rounds" >&2
                persist_round
                r=$((r + 1))
        done
fi

# ---- 5. the socket against redis; the stock ------------------------------
if ! skipped sock; then
        if command -v redis-server >/dev/null 2>&1; then
                echo "run-all.sh: run-sock.sh" >&2
                if [ "$quick" = 1 ]; then
                        BENCH_DURATION=${BENCH_DURATION:-500} BENCH_WARMUP=${BENCH_WARMUP:-100} \
                        BENCH_STOCK_DURATION=${BENCH_STOCK_DURATION:-300} \
                        BENCH_IDLE=${BENCH_IDLE:-1000} BENCH_UNPINNED=${BENCH_UNPINNED:-0} \
                        BENCH_ROUNDS=$rounds BENCH_RAW=$tmp/sock.raw "$here/run-sock.sh" "$build" >&2
                else
                        BENCH_ROUNDS=$rounds BENCH_RAW=$tmp/sock.raw "$here/run-sock.sh" "$build" >&2
                fi
                cat "$tmp/sock.raw" >>"$tmp/raw"
        else
                note "redis-server not found: no socket or stock figures"
        fi
fi

echo "run-all.sh: done in $(ms_since "$start") ms" >&2
echo >&2

peer_what="bench-core-before (same flush code)"
[ -n "${BENCH_PEER:-}" ] && grep -q '^peer ' "$tmp/raw" && peer_what="BENCH_PEER $BENCH_PEER"
awk -v rounds="$rounds" -v groups="$groups" -v peer_what="$peer_what" -v sync="$sync" \
    -f "$here/run-all-summary.awk" "$tmp/raw"
if [ -n "$notes" ]; then
        printf '\n%s' "$notes"
fi
