#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Run bench-core (the fast paths) and bench-core-before (the same code with
# -DMEMACCT_BEFORE_PATCH) alternately for BENCH_ROUNDS rounds (default 3),
# one measurement at a time, and print the median of every (name, threads)
# of both side by side with their ratio. Extra arguments go to both
# binaries (--quick, --duration MSEC).
#
# Usage: run-core.sh [BUILDDIR [bench-core options...]]
#        BENCH_ROUNDS=5 run-core.sh build --quick
#        run-core.sh build --fifo    (as root, on a machine others share)
#        BENCH_RAW=FILE keeps every "<variant> <name> <threads> <value> [wall=..
#        cpu=..]" line.
#        BENCH_ONLY="siblings flush_sparse" runs only those (names of --list).
set -eu

build=${1:-build}
[ $# -gt 0 ] && shift
rounds=${BENCH_ROUNDS:-3}
dir=$build/tests/bench

for exe in bench-core bench-core-before; do
        if [ ! -x "$dir/$exe" ]; then
                echo "run-core.sh: $dir/$exe not found;" \
                        "build it with ninja -C $build tests/bench/$exe" >&2
                exit 1
        fi
done

out=$(mktemp)
trap 'rm -f "$out" "$out.run" "$out.err"' EXIT
trap 'exit 130' INT TERM

# Interleave finely: the host drifts (docs/performance.md), so each
# measurement of one variant runs right next to the same measurement of
# the other, the order swapped every time so that neither always runs
# second.
names=${BENCH_ONLY:-$("$dir/bench-core" --list)}
flip=0
r=1
while [ "$r" -le "$rounds" ]; do
        echo "run-core.sh: round $r/$rounds" >&2
        for name in $names; do
                # Bytes per group are the same every time; the 100k-group
                # setup is slow on a busy machine: once is enough.
                if [ "$name" = mem_per_group ] && [ "$r" -gt 1 ]; then
                        continue
                fi
                if [ "$flip" -eq 0 ]; then order="after before"; else order="before after"; fi
                flip=$((1 - flip))
                for v in $order; do
                        if [ "$v" = after ]; then exe=bench-core; else exe=bench-core-before; fi
                        "$dir/$exe" --only "$name" "$@" >"$out.run" 2>"$out.err" || {
                                cat "$out.err" >&2
                                echo "run-core.sh: $exe --only $name failed" >&2
                                exit 1
                        }
                        sed "s/^/$v /" "$out.run" >>"$out"
                        # Warnings of disturbed measurements, kept for the end.
                        sed "s/^/warn $v /" "$out.err" >>"$out"
                done
        done
        r=$((r + 1))
done
if [ -n "${BENCH_RAW:-}" ]; then
        grep -v '^warn ' "$out" >"$BENCH_RAW"
fi

awk '
function sort_median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++)        # insertion sort: a handful of rounds
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function median(key,    n, i, a, m) {
        n = cnt[key]
        for (i = 1; i <= n; i++)
                a[i] = val[key, i]
        m = sort_median(a, n)
        lo[key] = a[1]; hi[key] = a[n]
        return m
}
# The median of the ratio of each round: each pair ran back to back, so
# this one is immune to drift slower than a measurement.
function paired(k,    n, i, a) {
        n = cnt["after" SUBSEP k]
        if (cnt["before" SUBSEP k] < n)
                n = cnt["before" SUBSEP k]
        for (i = 1; i <= n; i++) {
                if (val["after" SUBSEP k, i] <= 0)
                        return "-"
                a[i] = val["before" SUBSEP k, i] / val["after" SUBSEP k, i]
        }
        return n > 0 ? sprintf("%.3f", sort_median(a, n)) : "-"
}
function spread(key, m) {
        return m > 0 ? (hi[key] - lo[key]) / m * 100 : 0
}
$1 == "warn" {
        if ($0 ~ /disturbed/) {
                sub(/%.*/, "%")
                warn[++nwarn] = $0
        } else
                print substr($0, 6) > "/dev/stderr"
        next
}
NF >= 4 {
        k = $2 SUBSEP $3
        if (!(k in seen)) {
                seen[k] = 1
                order[++nk] = k
        }
        key = $1 SUBSEP k
        val[key, ++cnt[key]] = $4
        # wall=NS: the elapsed time beside the CPU time the value is.
        for (i = 5; i <= NF; i++)
                if ($i ~ /^wall=/) {
                        wk = $1 "_wall" SUBSEP k
                        val[wk, ++cnt[wk]] = substr($i, 6)
                }
}
END {
        printf "%-24s %7s %14s %14s %13s %8s %8s %12s %12s\n", "name", "threads", "after",
               "before", "before/after", "paired", "spread%", "after wall", "before wall"
        for (i = 1; i <= nk; i++) {
                split(order[i], p, SUBSEP)
                a = ("after" SUBSEP order[i]) in cnt ? median("after" SUBSEP order[i]) : -1
                b = ("before" SUBSEP order[i]) in cnt ? median("before" SUBSEP order[i]) : -1
                s = 0
                if (a > 0) s = spread("after" SUBSEP order[i], a)
                if (b > 0 && spread("before" SUBSEP order[i], b) > s)
                        s = spread("before" SUBSEP order[i], b)
                ratio = (a > 0 && b >= 0) ? sprintf("%.3f", b / a) : "-"
                aw = ("after_wall" SUBSEP order[i]) in cnt ? \
                        sprintf("%.2f", median("after_wall" SUBSEP order[i])) : "-"
                bw = ("before_wall" SUBSEP order[i]) in cnt ? \
                        sprintf("%.2f", median("before_wall" SUBSEP order[i])) : "-"
                printf "%-24s %7s %14.2f %14.2f %13s %8s %8.1f %12s %12s\n", p[1], p[2], a, b,
                       ratio, paired(order[i]), s, aw, bw
        }
        print ""
        print "Values: ns per charge+uncharge pair and thread by the threads'"'"' CPU time,"
        print "medians of " rounds " rounds; wall: the same by elapsed time. *_ratio: the"
        print "2-thread cost per thread over the 1-thread cost, measured back to back;"
        print "flush_sparse, flush_full: ns per forced flush of 100k groups with 100 or"
        print "all of them updated. paired: the median of the rounds'"'"' ratios (each pair"
        print "ran back to back); spread%: (max - min) / median, the worse variant."
        print "Measured in the first round only: mem_per_group (heap bytes per group;"
        print "_4regions: every group using 4 device regions),"
        print "create_per_group (ns per group_create) and flush_100k (ns per forced flush"
        print "of 100k groups, one updated)."
        if (nwarn > 0) {
                print ""
                print "shared their CPUs with other load (best of the attempts kept; try --fifo):"
                for (i = 1; i <= nwarn; i++) {
                        n = split(warn[i], w, " ")
                        sub(/:$/, "", w[5])
                        sep = (i % 3 && i < nwarn) ? "" : "\n"
                        printf "  %-6s %-14s %s on CPU %4s%s", w[2], w[4], w[5], w[n], sep
                }
        }
}' rounds="$rounds" "$out"
