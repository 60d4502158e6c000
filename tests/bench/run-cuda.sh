#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The CUDA benchmark: what the accounting of a device allocation costs,
# memacctd's against a model of HAMi-core's (tests/bench/bench-cuda-hami.c),
# side by side in one run (docs/performance.md). Builds nothing: it uses
# BUILDDIR's bench-cuda, bench-core, memacctd (or $MEMACCTD), memacctctl,
# libmemacct-cuda.so, the stand-in driver and cuda-prog.
#
# It starts its own memacctd on a socket in a temporary directory,
# registers the GPU region nvidia/0000:3b:00.0/vidmem (capacity 4G) and
# the group /bench-cuda, writes the interposer's settings file (root's,
# mode 644: the interposer reads no other) and then measures, for
# BENCH_ROUNDS rounds (default 5) with the order of the points rotated
# every round, with 1 and 2 processes allocating and freeing at once:
#   - libmemacct's stocked pair in the region (memacct_charge_stocked() +
#     memacct_uncharge_stocked() of memacct_stock_region()'s item);
#   - cuMemAlloc_v2+cuMemFree_v2 on the stand-in alone, and through the
#     interposer (LD_PRELOAD) in front of it;
#   - the HAMi model, seqlock and semaphore variants, with 1, 16 and
#     1,024 slots in the shared file (2 slots at least for 2 processes):
#     the accounting alone, against the stocked pair, and around the
#     stand-in's calls ("+driver"), against the interposer.
# Then: the cold stock (the first allocation of fresh processes through
# the interposer, against a plain memacct_charge() round trip), and
# cuda-prog's loop of BENCH_LOOP (1,000,000) small allocations with and
# without the interposer. The floor of the machine (bench-core --only
# floor) and what the HAMi pair is made of (bench-cuda parts) come first.
# It prints figures and ratios; it never passes or fails on speed (a run
# with errors is flagged, never dropped).
#
# Usage: run-cuda.sh [BUILDDIR]
#   BENCH_ROUNDS=5 BENCH_DURATION=500 (ms per point) BENCH_COLD_SAMPLES=30
#   BENCH_RT_SAMPLES=2000 BENCH_LOOP=1000000 BENCH_BYTES=4096
#   MEMACCTD=/path/to/memacctd   BENCH_RAW=FILE keeps every raw line
set -eu

build=${1:-build}
rounds=${BENCH_ROUNDS:-5}
duration=${BENCH_DURATION:-500}
cold_samples=${BENCH_COLD_SAMPLES:-30}
rt_samples=${BENCH_RT_SAMPLES:-2000}
loop_n=${BENCH_LOOP:-1000000}
bytes=${BENCH_BYTES:-4096}
daemon=${MEMACCTD:-$build/daemon/memacctd}
ctl=$build/client/memacctctl
bench=$build/tests/bench/bench-cuda
core=$build/tests/bench/bench-core
prog=$build/tests/cuda/cuda-prog
interposer=$build/client/cuda/libmemacct-cuda.so
standin=$build/tests/cuda/libcuda
gpu0=nvidia/0000:3b:00.0/vidmem
group=/bench-cuda

for f in "$daemon" "$ctl" "$bench" "$core" "$prog" "$interposer" "$standin/libcuda.so.1"; do
        if [ ! -e "$f" ]; then
                echo "run-cuda.sh: $f not found; build with meson setup -Dbench=true (tests on)" >&2
                exit 1
        fi
done
case $interposer in /*) ;; *) interposer=$PWD/$interposer ;; esac
case $standin in /*) ;; *) standin=$PWD/$standin ;; esac

tmp=$(mktemp -d)
dpid=
cleanup() {
        if [ -n "$dpid" ]; then
                kill "$dpid" 2>/dev/null || true
                wait "$dpid" 2>/dev/null || true
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

sock=$tmp/memacctd.sock
mkdir "$tmp/state"
: >"$tmp/memacctd.conf"
"$daemon" --socket "$sock" --state-dir "$tmp/state" --config "$tmp/memacctd.conf" >"$tmp/memacctd.log" 2>&1 &
dpid=$!
i=0
while [ ! -S "$sock" ]; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$dpid" 2>/dev/null; then
                echo "run-cuda.sh: $daemon did not start" >&2
                cat "$tmp/memacctd.log" >&2
                exit 1
        fi
        sleep 0.1
done
"$ctl" --socket "$sock" region add "$gpu0" capacity=4G
"$ctl" --socket "$sock" create "$group"

# The interposer reads its settings only from a file of root's that no
# one else may write (libmemacct-cuda(8)); as another user it would fall
# back to the system socket, so its lines are left out.
preload=1
if [ "$(id -u)" -ne 0 ]; then
        echo "run-cuda.sh: not root: the interposer would not trust a settings file of ours;" \
             "its lines are left out" >&2
        preload=0
fi
printf '[interposer]\nsocket = %s\n' "$sock" >"$tmp/cuda.conf"
chmod 644 "$tmp/cuda.conf"
export LD_LIBRARY_PATH="$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pre() {
        env LD_PRELOAD="$interposer" MEMACCT_CUDA_CONFIG="$tmp/cuda.conf" MEMACCT_GROUP="$group" "$@"
}

opt=$(sed -n 's/.*"name": "optimization", "value": "\([^"]*\)".*/\1/p' \
        "$build/meson-info/intro-buildoptions.json" 2>/dev/null || true)
if [ "${opt:-0}" = 0 ] || [ "${opt:-0}" = g ]; then
        echo "run-cuda.sh: warning: $build is not optimised (optimization=${opt:-unknown}): the daemon," \
             "libmemacct and the interposer are measured as compiled" >&2
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$tmp/raw
: >"$raw"

# measure ROUND CMD...: one line of bench-cuda, tagged with its round.
measure() {
        r=$1
        shift
        if ! out=$("$@" 2>"$tmp/err"); then
                echo "run-cuda.sh: failed: $* -> $out $(cat "$tmp/err")" >&2
        fi
        printf '%s\n' "$out" | sed "s/^/round=$r /" >>"$raw"
}

"$core" --only floor >"$tmp/floor"
"$bench" parts >"$tmp/parts"

# The points of one process count, one a line: the bench-cuda arguments.
points() {
        p=$1
        echo "S pair --scheme stock --procs $p --socket $sock"
        echo "S pair --scheme cuda --procs $p"
        [ "$preload" = 1 ] && echo "P pair --scheme cuda --procs $p"
        for n in 1 16 1024; do
                for s in hami-seqlock hami-sem; do
                        echo "S pair --scheme $s --procs $p --slots $n"
                        echo "S pair --scheme $s --procs $p --slots $n --driver"
                done
        done
}

for r in $(seq 1 "$rounds"); do
        for p in 1 2; do
                points "$p" >"$tmp/points"
                n=$(wc -l <"$tmp/points")
                # Rotated by the round, so that no point always runs first.
                k=$(( (r - 1) % n ))
                { tail -n +$((k + 1)) "$tmp/points"; head -n "$k" "$tmp/points"; } |
                while read -r how args; do
                        # shellcheck disable=SC2086 # the arguments are words
                        if [ "$how" = P ]; then
                                measure "$r" pre "$bench" $args --duration "$duration" --bytes "$bytes"
                        else
                                measure "$r" "$bench" $args --duration "$duration" --bytes "$bytes"
                        fi
                done
        done
done

# The cold stock and the round trips: one request in flight, so each is
# measured twice, unpinned, and with the daemon (every thread) and the
# client on CPU 0, where a round trip is not a cross-CPU wake-up
# (docs/performance.md, "Why one-request-in-flight points are pinned").
cold_all() {
        tag=$1
        shift
        measure "$tag" "$@" "$bench" cold --samples "$cold_samples" --bytes "$bytes"
        if [ "$preload" = 1 ]; then
                measure "$tag" pre "$@" "$bench" cold --samples "$cold_samples" --bytes "$bytes"
                measure "$tag" pre "$@" "$bench" cold --connected --samples "$cold_samples" --bytes "$bytes"
        fi
        measure "$tag" "$@" "$bench" roundtrip --socket "$sock" --samples "$rt_samples" --bytes "$bytes"
}
cold_all unpinned
if command -v taskset >/dev/null 2>&1; then
        cpus=$(taskset -c -p $$ | sed 's/.*: *//')
        taskset -a -c -p 0 "$dpid" >/dev/null
        cold_all pinned taskset -c 0
        taskset -a -c -p "$cpus" "$dpid" >/dev/null
fi

for r in $(seq 1 "$rounds"); do
        # Alternated, the first swapped every round.
        if [ $((r % 2)) = 1 ] || [ "$preload" = 0 ]; then order="bare pre"; else order="pre bare"; fi
        for how in $order; do
                [ "$how" = pre ] && [ "$preload" = 0 ] && continue
                if [ "$how" = pre ]; then
                        out=$(pre "$prog" loop "$loop_n" "$bytes" 2>&1 || true)
                else
                        out=$("$prog" loop "$loop_n" "$bytes" 2>&1 || true)
                fi
                echo "round=$r loop $how $out" >>"$raw"
        done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

if [ -n "${BENCH_RAW:-}" ]; then
        cp "$raw" "$BENCH_RAW"
fi

echo "# run-cuda.sh: build optimization ${opt:-unknown}, $rounds rounds of ${duration} ms, $bytes-byte allocations;" \
     "load $load0 at the start, $load1 at the end ($(nproc) CPUs)"
awk -v bytes="$bytes" -v loop_n="$loop_n" -f - "$tmp/floor" "$tmp/parts" "$raw" <<'EOF'
function median(list,    n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
        if (n == 0)
                return ""
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function spread(list,    n, a, i, lo, hi, m) {
        n = split(list, a, " ")
        if (n < 2)
                return ""
        lo = hi = a[1]
        for (i = 2; i <= n; i++) {
                if (a[i] + 0 < lo + 0) lo = a[i]
                if (a[i] + 0 > hi + 0) hi = a[i]
        }
        m = median(list)
        return m > 0 ? sprintf("%.0f%%", 100 * (hi - lo) / m) : ""
}
function kv(name,    i) {
        for (i = 1; i <= NF; i++)
                if (index($i, name "=") == 1)
                        return substr($i, length(name) + 2)
        return ""
}
# A cell: the median ns over rounds and its spread.
function cell(key, p,    l) {
        l = vals[key, p]
        return l == "" ? sprintf("%16s", "-") : sprintf("%10.1f %5s", median(l), spread(l))
}
# The median over rounds of each round's ratio @a / @b.
function ratio(a, b, p,    r, l) {
        l = ""
        for (r = 1; r <= maxround; r++)
                if ((a, p, r) in byround && (b, p, r) in byround && byround[b, p, r] > 0)
                        l = l " " byround[a, p, r] / byround[b, p, r]
        return l == "" ? sprintf("%12s", "-") : sprintf("%11.2fx", median(l))
}
function minus(a, b, p,    r, l) {
        l = ""
        for (r = 1; r <= maxround; r++)
                if ((a, p, r) in byround && (b, p, r) in byround)
                        l = l " " byround[a, p, r] - byround[b, p, r]
        return l == "" ? sprintf("%12s", "-") : sprintf("%12.0f", median(l))
}
FILENAME ~ /floor$/ { floor[$1, $2] = $3; next }
FILENAME ~ /parts$/ { part[$2] = $3; next }
$2 == "pair" {
        r = substr($1, 7); key = $3; p = $4; slots = $5
        if (key == "cuda" && kv("via") == "libmemacct-cuda.so")
                key = "interposer"
        # The 1-slot point of 2 processes has 2 slots, one each: its row is the 1-slot row.
        if (slots != "-")
                key = key " " (slots == p && p > 1 ? 1 : slots)
        vals[key, p] = vals[key, p] " " $6
        byround[key, p, r] = $6
        if (r > maxround) maxround = r
        if (kv("errors") != "0" || kv("verify") != "ok")
                bad = bad "\n  " $0
        # Only the semaphore sleeps: elsewhere, CPU time well below the
        # elapsed time means another program had the CPU.
        if (key !~ /^hami-sem/ && kv("cpu") + 0 < 0.8 * $6)
                disturbed = disturbed "\n  " $0
        next
}
$2 == "cold" { cold[substr($1, 7), $3, kv("via")] = $0; if (kv("errors") != "0") bad = bad "\n  " $0; next }
$2 == "roundtrip" {
        rt[substr($1, 7), $3] = $4 " (min " kv("min") ")"
        if (kv("errors") != "0")
                bad = bad "\n  " $0
        next
}
$2 == "loop" {
        r = substr($1, 7)
        v = kv("ns_per_pair")
        if (v == "") { bad = bad "\n  " $0; next }
        loop[$3] = loop[$3] " " v
        loopr[$3, r] = v
        next
}
END {
        printf "floor (bench-core --only floor, CPU ns): atomic add %s; 2 threads on one line %s (ratio %s);" \
               " a line's hand-off %s; clock_gettime %s\n", floor["floor_atomic", 1], floor["floor_atomic", 2],
               floor["floor_atomic_ratio", 2], floor["floor_transfer", 2], floor["floor_clock", 1]
        printf "HAMi's parts (bench-cuda parts, ns): getpid() %s; mutex lock+unlock %s; malloc+free %s;" \
               " sem_wait+sem_post %s; sum of 1,024 slots: seqlocked %s, under the semaphore %s\n\n",
               part["getpid"], part["mutex_lock_unlock"], part["malloc_free"], part["sem_wait_post"],
               part["sum_1024_slots_seqlock"], part["sum_1024_slots_semaphore"]

        printf "alloc+free pair of %d bytes, ns per pair and process (median over rounds, spread)\n", bytes
        printf "%-44s %16s %16s\n", "", "1 process", "2 processes"
        n = split("stock|memacctd: stocked pair in the region;" \
                  "hami-seqlock 1|HAMi model, seqlock, 1 slot (2 for 2 procs);" \
                  "hami-seqlock 16|HAMi model, seqlock, 16 slots;" \
                  "hami-seqlock 1024|HAMi model, seqlock, 1,024 slots;" \
                  "hami-sem 1|HAMi model, semaphore, 1 slot (2);" \
                  "hami-sem 16|HAMi model, semaphore, 16 slots;" \
                  "hami-sem 1024|HAMi model, semaphore, 1,024 slots;" \
                  "cuda|stand-in driver alone;" \
                  "interposer|interposer + stand-in;" \
                  "hami-seqlock+driver 1|HAMi seqlock + stand-in, 1 slot (2);" \
                  "hami-seqlock+driver 16|HAMi seqlock + stand-in, 16 slots;" \
                  "hami-seqlock+driver 1024|HAMi seqlock + stand-in, 1,024 slots;" \
                  "hami-sem+driver 1|HAMi semaphore + stand-in, 1 slot (2);" \
                  "hami-sem+driver 16|HAMi semaphore + stand-in, 16 slots;" \
                  "hami-sem+driver 1024|HAMi semaphore + stand-in, 1,024 slots", rows, ";")
        for (i = 1; i <= n; i++) {
                split(rows[i], f, "|")
                printf "%-44s %s %s\n", f[2], cell(f[1], 1), cell(f[1], 2)
        }

        printf "\nratios: the median over rounds of each round's ratio\n"
        printf "%-44s %16s %16s\n", "", "1 process", "2 processes"
        split("1 16 1024", sl, " ")
        for (v = 1; v <= 2; v++) {
                s = v == 1 ? "hami-seqlock" : "hami-sem"
                for (j = 1; j <= 3; j++)
                        printf "%-44s %16s %16s\n", s " " sl[j] " / stock", ratio(s " " sl[j], "stock", 1),
                               ratio(s " " sl[j], "stock", 2)
        }
        for (v = 1; v <= 2; v++) {
                s = v == 1 ? "hami-seqlock+driver" : "hami-sem+driver"
                for (j = 1; j <= 3; j++)
                        printf "%-44s %16s %16s\n", s " " sl[j] " / interposer",
                               ratio(s " " sl[j], "interposer", 1), ratio(s " " sl[j], "interposer", 2)
        }
        printf "%-44s %16s %16s\n", "interposer - stand-in alone (ns)", minus("interposer", "cuda", 1),
               minus("interposer", "cuda", 2)
        printf "%-44s %16s %16s\n", "HAMi seqlock+driver 16 - stand-in alone (ns)",
               minus("hami-seqlock+driver 16", "cuda", 1), minus("hami-seqlock+driver 16", "cuda", 2)

        split("session|libcuda.so.1|stand-in alone, fresh process;" \
              "session|libmemacct-cuda.so|interposer, fresh process (connects on it);" \
              "connected|libmemacct-cuda.so|interposer, session set up before (cuMemGetInfo)", ck, ";")
        split("memacct_charge|memacct_charge() round trip, anon;" \
              "memacct_charge_region|memacct_charge_region() round trip;" \
              "charge_stocked_after_drain|memacct_charge_stocked() after memacct_stock_drain();" \
              "charge_stocked_first_of_session|a new session's first memacct_charge_stocked()", rk, ";")
        for (t = 1; t <= 2; t++) {
                tag = t == 1 ? "unpinned" : "pinned"
                printf "\nthe cold stock, %s: one allocation, ns (medians)\n", \
                       t == 1 ? "unpinned" : "the daemon and the client on CPU 0"
                for (i = 1; i <= 3; i++) {
                        split(ck[i], f, "|")
                        if (!((tag, f[1], f[2]) in cold))
                                continue
                        $0 = cold[tag, f[1], f[2]]
                        printf "  %-54s first %7s (min %s), second %5s, 64 MiB %6s, %s processes\n", f[3],
                               kv("first"), kv("first_min"), kv("second"), kv("big"), kv("samples")
                }
                for (i = 1; i <= 4; i++) {
                        split(rk[i], f, "|")
                        if ((tag, f[1]) in rt)
                                printf "  %-54s %s\n", f[2], rt[tag, f[1]]
                }
        }

        printf "\ncuda-prog loop %d %d (ns_per_pair, median over rounds)\n", loop_n, bytes
        l = ""
        for (r = 1; r <= 100; r++)
                if ((("pre", r) in loopr) && (("bare", r) in loopr))
                        l = l " " loopr["pre", r] / loopr["bare", r]
        printf "  without the interposer %s, with it %s: %s (paired)\n", median(loop["bare"]),
               median(loop["pre"]) == "" ? "-" : median(loop["pre"]),
               l == "" ? "-" : sprintf("%.3fx", median(l))
        if (disturbed != "")
                printf "\npoints off their CPU more than 20%% of the time (another program had it; the" \
                       " semaphore's points, which sleep, are not judged; kept above):%s\n", disturbed
        if (bad != "")
                printf "\nruns with errors (kept above):%s\n", bad
}
EOF
