#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The D-Bus benchmark. Builds nothing: it uses
# BUILDDIR/daemon/memacctd (or $MEMACCTD), BUILDDIR/tests/bench/bench-dbus
# and dbus-daemon from $PATH.
#
# It starts a private dbus-daemon (tests/bus-conf.sh open: a session-type
# bus on a socket in a temporary directory; the project's policy file
# units/org.memacct1.conf is included when it exists), memacctd on that
# bus, and bench-dbus --echo-server, a minimal sd-bus service whose Echo
# method has Charge's signature and returns at once. Then, for 1 and 16 calls in flight, it
# measures in turn memacctd (Charge and Uncharge of 4 KiB, alternating, a
# checked charge of four levels) and Echo, BENCH_ROUNDS rounds (default 5)
# with the order of the two swapped every point, and prints the medians,
# the ratio memacctd/echo and the CPU time per call of the server, of the
# bus daemon and of the caller.
#
# Pinning: the "1 cpu0" point pins the caller, the bus daemon and the
# server (all their threads) to CPU 0. With one call in flight every call
# is four wake-ups in a row across three processes, and unpinned the
# scheduler's cross-CPU wake-ups dominate and vary run to run
# (docs/performance.md); pinned, the figure is stable. The same point
# unpinned ("1 -") follows; skip it with BENCH_UNPINNED=0. The
# 16-in-flight point is unpinned.
#
# Every reply is checked by bench-dbus; a run with errors, or whose
# memacctd usage is not back to 0 at its end, is listed under the table.
#
# Usage: run-dbus.sh [BUILDDIR]
#   BENCH_ROUNDS=5 BENCH_DURATION=1500 (ms per point) BENCH_WARMUP=300
#   BENCH_UNPINNED=1 MEMACCTD=/path/to/memacctd (e.g. an optimised build's)
#   BENCH_RAW=1 (every run's line to stderr too)
set -eu

build=${1:-build}
rounds=${BENCH_ROUNDS:-5}
duration=${BENCH_DURATION:-1500}
warmup=${BENCH_WARMUP:-300}
unpinned=${BENCH_UNPINNED:-1}
dir=$build/tests/bench
daemon=${MEMACCTD:-$build/daemon/memacctd}
here=$(cd "$(dirname "$0")" && pwd)
policy=$here/../../units/org.memacct1.conf

for exe in "$dir/bench-dbus" "$daemon"; do
        if [ ! -x "$exe" ]; then
                echo "run-dbus.sh: $exe not found; build it with" \
                     "ninja -C $build tests/bench/bench-dbus daemon/memacctd" >&2
                exit 1
        fi
done
for prog in dbus-daemon taskset; do
        if ! command -v "$prog" >/dev/null 2>&1; then
                echo "run-dbus.sh: $prog not found" >&2
                exit 1
        fi
done
if ! "$daemon" --help 2>/dev/null | grep -- '--bus' >/dev/null; then
        echo "run-dbus.sh: $daemon has no --bus option" >&2
        exit 1
fi

tmp=$(mktemp -d)
bpid=
dpid=
epid=
cleanup() {
        # The daemon and the echo service first, then their bus.
        for p in $epid $dpid; do
                kill "$p" 2>/dev/null || true
        done
        for p in $epid $dpid; do
                wait "$p" 2>/dev/null || true
        done
        if [ -n "$bpid" ]; then
                kill "$bpid" 2>/dev/null || true
                wait "$bpid" 2>/dev/null || true
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

bus=unix:path=$tmp/bus.sock
sh "$here/../bus-conf.sh" open "$tmp/bus.sock" "$policy" >"$tmp/bus.conf"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile >"$tmp/bus.log" 2>&1 &
bpid=$!
i=0
while [ ! -S "$tmp/bus.sock" ]; do
        i=$((i + 1))
        if [ "$i" -gt 200 ] || ! kill -0 "$bpid" 2>/dev/null; then
                echo "run-dbus.sh: dbus-daemon did not start" >&2
                cat "$tmp/bus.log" >&2
                exit 1
        fi
        sleep 0.05
done

mkdir "$tmp/state"
: >"$tmp/memacctd.conf"
"$daemon" --socket "$tmp/memacctd.sock" --bus "$bus" --state-dir "$tmp/state" \
        --config "$tmp/memacctd.conf" >"$tmp/memacctd.log" 2>&1 &
dpid=$!
"$dir/bench-dbus" --address "$bus" --echo-server >"$tmp/echo.log" 2>&1 &
epid=$!
# bench-dbus waits (up to 10 s) for each name to appear on the bus.
sleep 0.2
for p in $dpid $epid; do
        if ! kill -0 "$p" 2>/dev/null; then
                echo "run-dbus.sh: memacctd or the echo service did not start" >&2
                cat "$tmp/memacctd.log" "$tmp/echo.log" >&2
                exit 1
        fi
done

opt=$(sed -n 's/.*"name": "optimization", "value": "\([^"]*\)".*/\1/p' \
        "$build/meson-info/intro-buildoptions.json" 2>/dev/null || true)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "${MEMACCTD:-}" ]; then
        what="\$MEMACCTD"
else
        what="build optimization ${opt:-unknown}"
fi
echo "run-dbus.sh: $(nproc) CPUs, load average $load0; daemon $daemon ($what);" \
     "$(dbus-daemon --version | head -n1); $rounds rounds of $duration ms" >&2
if [ -z "${MEMACCTD:-}" ] && [ "$opt" = 0 ]; then
        echo "run-dbus.sh: warning: the daemon is built at -O0; the echo service is -O2." \
             "Use an optimised build (MEMACCTD=...) for numbers that mean something." >&2
fi

mask_of() {
        taskset -p "$1" | sed 's/.*: //'
}
bmask=$(mask_of "$bpid")
dmask=$(mask_of "$dpid")
emask=$(mask_of "$epid")

# run_point TARGET DEPTH PIN: one bench-dbus run, its line to results.
run_point() {
        target=$1 depth=$2 pin=$3
        if [ "$target" = memacctd ]; then spid=$dpid smask=$dmask; else spid=$epid smask=$emask; fi
        set -- "$dir/bench-dbus" --address "$bus" --target "$target" --depth "$depth" \
                --duration "$duration" --warmup "$warmup" --server-pid "$spid" --bus-pid "$bpid"
        if [ "$pin" = cpu0 ]; then
                taskset -a -p -c 0 "$spid" >/dev/null
                taskset -a -p -c 0 "$bpid" >/dev/null
                set -- taskset -c 0 "$@"
        fi
        if ! "$@" >"$tmp/run.out" 2>"$tmp/run.err"; then
                cat "$tmp/run.err" >&2
                echo "run-dbus.sh: bench-dbus --target $target --depth $depth failed" >&2
                exit 1
        fi
        if [ "$pin" = cpu0 ]; then
                taskset -a -p "$smask" "$spid" >/dev/null
                taskset -a -p "$bmask" "$bpid" >/dev/null
        fi
        cat "$tmp/run.err" >&2
        echo "$pin $(cat "$tmp/run.out")" >>"$tmp/results"
}

points="1:cpu0 16:-"
[ "$unpinned" = 1 ] && points="1:cpu0 1:- 16:-"
: >"$tmp/results"
turn=0
r=1
while [ "$r" -le "$rounds" ]; do
        echo "run-dbus.sh: round $r/$rounds (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        for p in $points; do
                depth=${p%%:*}
                pin=${p#*:}
                # Swap the order every point so that neither always runs first.
                if [ $((turn % 2)) = 0 ]; then order="memacctd echo"; else order="echo memacctd"; fi
                turn=$((turn + 1))
                for target in $order; do
                        run_point "$target" "$depth" "$pin"
                done
        done
        r=$((r + 1))
done

load1=$(cut -d' ' -f1-3 /proc/loadavg)
[ "${BENCH_RAW:-0}" = 1 ] && cat "$tmp/results" >&2

awk -v rounds="$rounds" -v duration="$duration" -v load0="$load0" -v load1="$load1" '
function median(key,    n, i, j, t, a) {
        n = cnt[key]
        for (i = 1; i <= n; i++)
                a[i] = val[key, i]
        for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
        lo[key] = a[1]; hi[key] = a[n]
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function field(name,    i) {
        for (i = 1; i <= NF; i++)
                if (index($i, name "=") == 1)
                        return substr($i, length(name) + 2)
        return ""
}
{
        # pin target depth calls/s errors=.. verify=.. server_ns_call=.. bus_ns_call=.. client_ns_call=..
        pt = $3 " " $1
        if (!(pt in seen)) { seen[pt] = 1; order[++npt] = pt }
        k = pt SUBSEP $2
        cnt[k]++; val[k, cnt[k]] = $4
        split("server bus client", w, " ")
        for (x = 1; x <= 3; x++) {
                kw = k SUBSEP w[x]
                cnt[kw]++; val[kw, cnt[kw]] = field(w[x] "_ns_call")
        }
        if (field("errors") != "0" || field("verify") != "ok")
                bad[++nbad] = $0
        # The two runs of a point in a round come one after the other: their
        # ratio is taken while the machine is in the same state.
        if ((pt in pending) && pending_target[pt] != $2) {
                r = $2 == "memacctd" ? $4 / pending[pt] : pending[pt] / $4
                kr = pt SUBSEP "ratio"
                cnt[kr]++; val[kr, cnt[kr]] = r
                delete pending[pt]
        } else {
                pending[pt] = $4; pending_target[pt] = $2
        }
}
END {
        printf "%9s %4s %12s %12s %8s %9s %8s\n", "in-flight", "pin", "memacctd/s", "echo/s",
               "m/echo", "paired", "spread%"
        for (i = 1; i <= npt; i++) {
                split(order[i], p, " ")
                m = median(order[i] SUBSEP "memacctd")
                sm = m > 0 ? (hi[order[i] SUBSEP "memacctd"] - lo[order[i] SUBSEP "memacctd"]) / m : 0
                e = median(order[i] SUBSEP "echo")
                se = e > 0 ? (hi[order[i] SUBSEP "echo"] - lo[order[i] SUBSEP "echo"]) / e : 0
                s = sm > se ? sm : se
                pr = median(order[i] SUBSEP "ratio")
                printf "%9s %4s %12.0f %12.0f %8.2f %4.2f-%4.2f %8.1f\n", p[1], p[2], m, e,
                       (e > 0 ? m / e : 0), lo[order[i] SUBSEP "ratio"], hi[order[i] SUBSEP "ratio"],
                       s * 100
                paired[i] = pr
        }
        print ""
        print "calls/s: method calls answered per second (Charge and Uncharge of 4 KiB alternating,"
        print "or Echo with the same arguments), medians of " rounds " rounds of " duration " ms."
        print "m/echo: the ratio of the medians; paired: the range of the per-round ratios (the"
        printf "two runs of a round are back to back); their medians:"
        for (i = 1; i <= npt; i++)
                printf " %s", sprintf("%.2f", paired[i])
        print "."
        print "pin cpu0: caller, bus daemon and server pinned to CPU 0."
        print "spread%: (max - min) / median of calls/s, the worse of the two."
        print ""
        print "CPU time per call (us, medians): server, dbus-daemon, caller"
        printf "%9s %4s %24s %24s\n", "in-flight", "pin", "memacctd (srv bus cli)", "echo (srv bus cli)"
        for (i = 1; i <= npt; i++) {
                split(order[i], p, " ")
                km = order[i] SUBSEP "memacctd"; ke = order[i] SUBSEP "echo"
                printf "%9s %4s %8.1f %7.1f %7.1f %8.1f %7.1f %7.1f\n", p[1], p[2],
                       median(km SUBSEP "server") / 1000, median(km SUBSEP "bus") / 1000,
                       median(km SUBSEP "client") / 1000,
                       median(ke SUBSEP "server") / 1000, median(ke SUBSEP "bus") / 1000,
                       median(ke SUBSEP "client") / 1000
        }
        print ""
        if (nbad == 0)
                print "every run: 0 errors, memacctd usage back to 0 at its end"
        else {
                print "RUNS WITH ERRORS OR A FAILED CHECK:"
                for (i = 1; i <= nbad; i++)
                        print "  " bad[i]
        }
        print "load average: " load0 " at the start, " load1 " at the end"
}' "$tmp/results"
