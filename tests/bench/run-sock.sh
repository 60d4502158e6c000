#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The socket benchmark. Builds nothing: it uses BUILDDIR/daemon/memacctd
# (or $MEMACCTD) and BUILDDIR/tests/bench/bench-sock and bench-stock, and
# redis-server from $PATH.
#
# It starts its own memacctd and redis-server (no persistence) on sockets
# in a temporary directory, then, for 1, 8 and 64 connections at pipeline
# depth 1 and 16, measures in turn memacctd (charge/uncharge of 4 KiB, each
# a checked hierarchical charge), redis INCRBY/DECRBY and redis EVAL of a
# Lua script doing the same checked 3-level charge, BENCH_ROUNDS rounds
# (default 3) with the order of the three rotated every point, and prints
# the medians and ratios in one table. The 1-connection depth-1 point pins
# the server (all its threads) and the client to CPU 0 for all three
# systems: with one request in flight an unpinned run measures cross-CPU
# wake-ups (docs/performance.md); the same point unpinned follows as
# "1 1 -" (skip it with BENCH_UNPINNED=0). Then bench-stock (ns per
# stocked 4 KiB charge,
# 1 and 2 threads), then the daemon's RSS with BENCH_IDLE (default
# 10000) idle sessions, each after a Hello.
#
# Every answer is checked by bench-sock; a run with errors, or whose usage
# is not back to 0 at its end, is listed under the table, never dropped.
# A second table gives the server's CPU time per request (all its threads,
# from schedstat), which other load on the machine disturbs much less than
# the rates; the stock lines give elapsed and CPU time likewise. About
# 2 min 45 s with the defaults.
#
# Usage: run-sock.sh [BUILDDIR]
#   BENCH_ROUNDS=3 BENCH_DURATION=2000 (ms per point) BENCH_WARMUP=300
#   BENCH_STOCK_DURATION=1000 BENCH_IDLE=10000 BENCH_UNPINNED=1
#   MEMACCTD=/path/to/memacctd (e.g. an optimised build's)
#   BENCH_RAW=FILE keeps every run's line, in the order they ran:
#     "sock <pin> <system> <conns> <depth> <ops/s> errors=.. verify=..
#      server_ns_op=.. ..." and "stock stock_<mode> <threads> <ns/op>
#      cpu_ns_op=.. mops=.. ..."
set -eu

build=${1:-build}
rounds=${BENCH_ROUNDS:-3}
duration=${BENCH_DURATION:-2000}
warmup=${BENCH_WARMUP:-300}
stock_duration=${BENCH_STOCK_DURATION:-1000}
idle=${BENCH_IDLE:-10000}
unpinned=${BENCH_UNPINNED:-1}
dir=$build/tests/bench
daemon=${MEMACCTD:-$build/daemon/memacctd}

for exe in "$dir/bench-sock" "$dir/bench-stock" "$daemon"; do
        if [ ! -x "$exe" ]; then
                echo "run-sock.sh: $exe not found; build it with" \
                     "ninja -C $build tests/bench/bench-sock tests/bench/bench-stock daemon/memacctd" >&2
                exit 1
        fi
done
for prog in redis-server taskset; do
        if ! command -v "$prog" >/dev/null 2>&1; then
                echo "run-sock.sh: $prog not found" >&2
                exit 1
        fi
done

# 10,000 sessions need as many descriptors in the daemon and the client,
# which inherit this limit.
if ! ulimit -n 20000 2>/dev/null; then
        have=$(ulimit -n)
        echo "run-sock.sh: cannot raise RLIMIT_NOFILE to 20000 (have $have)" >&2
        if [ "$idle" -gt $((have - 100)) ]; then
                idle=$((have - 100))
                echo "run-sock.sh: idle sessions lowered to $idle" >&2
        fi
fi

tmp=$(mktemp -d)
dpid=
rpid=
ipid=
cleanup() {
        for p in $ipid $dpid $rpid; do
                kill "$p" 2>/dev/null || true
        done
        for p in $ipid $dpid $rpid; do
                wait "$p" 2>/dev/null || true
        done
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

msock=$tmp/memacctd.sock
rsock=$tmp/redis.sock
mkdir "$tmp/state"
: >"$tmp/memacctd.conf"

"$daemon" --socket "$msock" --state-dir "$tmp/state" --config "$tmp/memacctd.conf" \
        >"$tmp/memacctd.log" 2>&1 &
dpid=$!
redis-server --port 0 --unixsocket "$rsock" --unixsocketperm 700 --save '' --appendonly no \
        --dir "$tmp" --logfile "$tmp/redis.log" &
rpid=$!

i=0
while [ ! -S "$msock" ] || [ ! -S "$rsock" ]; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$dpid" 2>/dev/null || ! kill -0 "$rpid" 2>/dev/null; then
                echo "run-sock.sh: memacctd or redis-server did not start" >&2
                cat "$tmp/memacctd.log" "$tmp/redis.log" >&2 2>/dev/null || true
                exit 1
        fi
        sleep 0.1
done

opt=$(sed -n 's/.*"name": "optimization", "value": "\([^"]*\)".*/\1/p' \
        "$build/meson-info/intro-buildoptions.json" 2>/dev/null || true)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "${MEMACCTD:-}" ]; then
        what="\$MEMACCTD"
else
        what="build optimization ${opt:-unknown}"
fi
echo "run-sock.sh: $(nproc) CPUs, load average $load0; daemon $daemon ($what);" \
     "$rounds rounds of $duration ms" >&2
if [ -z "${MEMACCTD:-}" ] && [ "$opt" = 0 ]; then
        echo "run-sock.sh: warning: the daemon is built at -O0; redis-server is -O2." \
             "Use an optimised build for numbers that mean something." >&2
fi

mask_of() {
        taskset -p "$1" | sed 's/.*: //'
}
dmask=$(mask_of "$dpid")
rmask=$(mask_of "$rpid")

# run_point SYSTEM CONNS DEPTH PIN: one bench-sock run, its line to results.
run_point() {
        sys=$1 conns=$2 depth=$3 pin=$4
        if [ "$sys" = memacct ]; then sock=$msock pid=$dpid mask=$dmask; else sock=$rsock pid=$rpid mask=$rmask; fi
        set -- "$dir/bench-sock" --system "$sys" --socket "$sock" --conns "$conns" --depth "$depth" \
                --duration "$duration" --warmup "$warmup" --server-pid "$pid"
        if [ "$pin" = cpu0 ]; then
                taskset -a -p -c 0 "$pid" >/dev/null
                set -- taskset -c 0 "$@"
        fi
        if ! "$@" >"$tmp/run.out" 2>"$tmp/run.err"; then
                cat "$tmp/run.err" >&2
                echo "run-sock.sh: bench-sock --system $sys --conns $conns --depth $depth failed" >&2
                exit 1
        fi
        [ "$pin" = cpu0 ] && taskset -a -p "$mask" "$pid" >/dev/null
        cat "$tmp/run.err" >&2
        echo "$pin $(cat "$tmp/run.out")" >>"$tmp/results"
}

points="1:1:cpu0 1:16:- 8:1:- 8:16:- 64:1:- 64:16:-"
[ "$unpinned" = 1 ] && points="1:1:cpu0 1:1:- 1:16:- 8:1:- 8:16:- 64:1:- 64:16:-"
: >"$tmp/results"
turn=0
r=1
while [ "$r" -le "$rounds" ]; do
        echo "run-sock.sh: round $r/$rounds (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        for p in $points; do
                IFS=: read -r conns depth pin <<EOF
$p
EOF
                # Rotate the order so that no system always runs first.
                case $((turn % 3)) in
                0) order="memacct redis eval" ;;
                1) order="redis eval memacct" ;;
                *) order="eval memacct redis" ;;
                esac
                turn=$((turn + 1))
                for sys in $order; do
                        run_point "$sys" "$conns" "$depth" "$pin"
                done
        done
        r=$((r + 1))
done

# The stock: 1 and 2 threads, charge+uncharge pairs and charges only.
: >"$tmp/stock"
r=1
while [ "$r" -le "$rounds" ]; do
        for mode in pair charge; do
                for threads in 1 2; do
                        if ! "$dir/bench-stock" --socket "$msock" --threads "$threads" --mode "$mode" \
                                --duration "$stock_duration" >>"$tmp/stock" 2>"$tmp/run.err"; then
                                cat "$tmp/run.err" >&2
                                echo "run-sock.sh: bench-stock --threads $threads --mode $mode failed" >&2
                                exit 1
                        fi
                done
        done
        r=$((r + 1))
done

# Idle sessions: the daemon's RSS before and with them.
rss() {
        sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"
}
rss0=$(rss "$dpid")
"$dir/bench-sock" --system idle --socket "$msock" --conns "$idle" >"$tmp/idle.out" 2>"$tmp/idle.err" &
ipid=$!
i=0
while ! grep -q '^ready' "$tmp/idle.out" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 1200 ] || ! kill -0 "$ipid" 2>/dev/null; then
                cat "$tmp/idle.err" >&2
                echo "run-sock.sh: $idle idle sessions could not be opened" >&2
                exit 1
        fi
        sleep 0.05
done
sleep 0.5
rss1=$(rss "$dpid")
nfds=$(ls "/proc/$dpid/fd" | wc -l)
open_ms=$(cut -d' ' -f3 "$tmp/idle.out")
kill "$ipid" 2>/dev/null || true
wait "$ipid" 2>/dev/null || true
ipid=
sleep 0.5
rss2=$(rss "$dpid")

load1=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "${BENCH_RAW:-}" ]; then
        { sed 's/^/sock /' "$tmp/results"; sed 's/^/stock /' "$tmp/stock"; } >"$BENCH_RAW"
fi

awk -v rounds="$rounds" -v duration="$duration" -v load0="$load0" -v load1="$load1" \
    -v rss0="$rss0" -v rss1="$rss1" -v rss2="$rss2" -v idle="$idle" -v open_ms="$open_ms" \
    -v nfds="$nfds" '
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
FILENAME ~ /results$/ {
        # pin system conns depth ops/s errors=.. verify=.. server_ns_op=.. client_ns_op=..
        pt = $3 " " $4 " " $1
        if (!(pt in seen)) { seen[pt] = 1; order[++npt] = pt }
        k = pt SUBSEP $2
        cnt[k]++; val[k, cnt[k]] = $5
        ks = k SUBSEP "cpu"
        cnt[ks]++; val[ks, cnt[ks]] = field("server_ns_op")
        if (field("errors") != "0" || field("verify") != "ok")
                bad[++nbad] = $0
        next
}
{
        # stock_<mode> threads ns/op cpu_ns_op= mops= errors= verify= batch= ...
        k = $1 SUBSEP $2
        if (!(k in sseen)) { sseen[k] = 1; sorder[++ns] = k }
        cnt[k]++; val[k, cnt[k]] = $3
        kc = k SUBSEP "cpu"; cnt[kc]++; val[kc, cnt[kc]] = field("cpu_ns_op")
        km = k SUBSEP "mops"; cnt[km]++; val[km, cnt[km]] = field("mops")
        batch[k] = field("batch")
        if (field("errors") != "0" || field("verify") != "ok")
                bad[++nbad] = $0
}
END {
        printf "%5s %5s %4s %12s %12s %12s %9s %9s %7s\n", "conns", "depth", "pin",
               "memacctd/s", "INCRBY/s", "EVAL/s", "m/INCRBY", "m/EVAL", "spread%"
        for (i = 1; i <= npt; i++) {
                split(order[i], p, " ")
                m = median(order[i] SUBSEP "memacct"); sm = m > 0 ? (hi[order[i] SUBSEP "memacct"] - lo[order[i] SUBSEP "memacct"]) / m : 0
                r = median(order[i] SUBSEP "redis"); sr = r > 0 ? (hi[order[i] SUBSEP "redis"] - lo[order[i] SUBSEP "redis"]) / r : 0
                e = median(order[i] SUBSEP "eval"); se = e > 0 ? (hi[order[i] SUBSEP "eval"] - lo[order[i] SUBSEP "eval"]) / e : 0
                s = sm; if (sr > s) s = sr; if (se > s) s = se
                printf "%5s %5s %4s %12.0f %12.0f %12.0f %9.2f %9.2f %7.1f\n", p[1], p[2], p[3],
                       m, r, e, (r > 0 ? m / r : 0), (e > 0 ? m / e : 0), s * 100
        }
        print ""
        print "ops/s: requests answered per second (a charge or an uncharge of 4 KiB; INCRBY or"
        print "DECRBY; one EVAL), medians of " rounds " rounds of " duration " ms. pin cpu0: server"
        print "and client pinned to CPU 0. spread%: (max - min) / median, worst of the three."
        print ""
        printf "server CPU per request (ns, all server threads, medians):\n"
        printf "%5s %5s %4s %10s %10s %10s\n", "conns", "depth", "pin", "memacctd", "INCRBY", "EVAL"
        for (i = 1; i <= npt; i++) {
                split(order[i], p, " ")
                printf "%5s %5s %4s %10.0f %10.0f %10.0f\n", p[1], p[2], p[3],
                       median(order[i] SUBSEP "memacct" SUBSEP "cpu"),
                       median(order[i] SUBSEP "redis" SUBSEP "cpu"),
                       median(order[i] SUBSEP "eval" SUBSEP "cpu")
        }
        print ""
        for (i = 1; i <= ns; i++) {
                k = sorder[i]
                split(k, q, SUBSEP)
                mode = q[1]; sub(/^stock_/, "", mode)
                t = q[2]
                mops[k] = median(k SUBSEP "mops")
                printf "stock %-6s %s thread%s: %7.2f ns per %s (cpu %.2f), %7.2f M/s in all, batch %d KiB",
                       mode, t, (t > 1 ? "s" : " "), median(k), (mode == "pair" ? "charge+uncharge" : "charge"),
                       median(k SUBSEP "cpu"), mops[k], batch[k] / 1024
                # Scaling: aggregate rate against one thread, by elapsed
                # time and by CPU time (t threads at their CPU cost each:
                # what they would do with a CPU each, free of other load).
                k1 = q[1] SUBSEP 1
                if (t > 1 && (k1 in mops) && mops[k1] > 0)
                        printf ", %.2fx one thread (by CPU time %.2fx)", mops[k] / mops[k1],
                               t * median(k1 SUBSEP "cpu") / median(k SUBSEP "cpu")
                printf "\n"
        }
        print ""
        printf "daemon RSS: %.1f MiB before, %.1f MiB with %d idle sessions (%.2f KiB per session;" \
               " opened in %s ms; the daemon had %d descriptors open), %.1f MiB after they closed\n",
               rss0 / 1024, rss1 / 1024, idle, (rss1 - rss0) / idle, open_ms, nfds, rss2 / 1024
        print ""
        if (nbad == 0)
                print "every run: 0 errors, usage back to 0 at its end"
        else {
                print "RUNS WITH ERRORS OR A FAILED CHECK:"
                for (i = 1; i <= nbad; i++)
                        print "  " bad[i]
        }
        print "load average: " load0 " at the start, " load1 " at the end"
}' "$tmp/results" "$tmp/stock"
