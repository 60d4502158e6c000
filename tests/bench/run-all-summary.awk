# SPDX-License-Identifier: LGPL-2.1-or-later
#
# run-all.sh's summary: one line per target of issue 12, from the raw
# lines of every benchmark of the run (run-all.sh says which). For each
# target, one value per round: a figure as measured, or the ratio of two
# figures measured back to back in that round. Printed: the median over
# the rounds, the spread (max - min) / median in %, the goal and whether
# the median meets it; "~" after yes or no when some rounds fall on the
# other side of the goal (the difference is within the noise).
#
# Variables: rounds, groups, peer_what, sync.

function field(name,    i) {
        for (i = 1; i <= NF; i++)
                if (index($i, name "=") == 1)
                        return substr($i, length(name) + 2)
        return ""
}

# Append the value of the line's field @vi under @key: its n-th
# occurrence is round n (every script appends in the order it ran).
function put(key, value) {
        val[key, ++cnt[key]] = value
}

function check_line(    e, s) {
        e = field("errors"); s = field("verify")
        if ((e != "" && e != "0") || (s != "" && s != "ok"))
                bad[++nbad] = $0
}

$1 == "core" || $1 == "peer" { put($1 SUBSEP $2 SUBSEP $3 SUBSEP $4, $5); next }
$1 == "million" { put("million" SUBSEP $2, $4); next }
$1 == "persist" || $1 == "daemon" {
        put($1 SUBSEP $2, $4)
        check_line()
        next
}
$1 == "sock" {
        # sock <pin> <system> <conns> <depth> <ops/s> ... server_ns_op=
        k = "sock" SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
        put(k, $6)
        put(k SUBSEP "cpu", field("server_ns_op"))
        check_line()
        next
}
$1 == "stock" {
        # stock stock_<mode> <threads> <ns/op> cpu_ns_op= mops= ...
        k = "stock" SUBSEP $2 SUBSEP $3
        put(k, $4)
        put(k SUBSEP "mops", field("mops"))
        check_line()
        next
}

# ---- targets ---------------------------------------------------------------

function sort_list(a, n,    i, j, t) {
        for (i = 2; i <= n; i++)        # insertion sort: a handful of rounds
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
}

function fmt(x, unit) {
        if (unit == "x")
                return sprintf("%.2fx", x)
        if (unit == "B")
                return sprintf("%.0f B", x)
        if (unit == "s")
                return sprintf("%.2f s", x)
        if (unit == "us")
                return sprintf("%.1f us", x)
        return sprintf("%.1f %s", x, unit)
}

# Print the target @label from the @n values in L[1..n]: @op is "<=" or
# ">=" against @goal, or "" for a line that informs (no goal).
function target(label, n, op, goal, unit,    i, m, lo, hi, sp, met, ok, nok) {
        if (n == 0) {
                printf "%-54s | %12s | %8s | %11s | %s\n", label, "-", "-",
                       (op == "" ? "-" : op " " fmt(goal, unit)), "n/a"
                return
        }
        sort_list(L, n)
        m = n % 2 ? L[(n + 1) / 2] : (L[n / 2] + L[n / 2 + 1]) / 2
        lo = L[1]; hi = L[n]
        sp = m != 0 ? sprintf("%.1f%%", (hi - lo) / (m < 0 ? -m : m) * 100) : "-"
        if (op == "") {
                met = "(info)"
        } else {
                nok = 0
                for (i = 1; i <= n; i++)
                        nok += (op == "<=" ? L[i] <= goal : L[i] >= goal)
                ok = op == "<=" ? m <= goal : m >= goal
                met = ok ? "yes" : "no"
                if ((ok && nok < n) || (!ok && nok > 0))
                        met = met " ~"
        }
        printf "%-54s | %12s | %8s | %11s | %s\n", label, fmt(m, unit), sp,
               (op == "" ? "-" : op " " fmt(goal, unit)), met
}

# L[] := the values of @key times @scale; returns how many.
function values(key, scale,    i) {
        delete L
        for (i = 1; i <= cnt[key]; i++)
                L[i] = val[key, i] * scale
        return cnt[key]
}

# L[] := the per-round ratios @a / @b; returns how many.
function ratios(a, b,    i, n) {
        delete L
        n = cnt[a] < cnt[b] ? cnt[a] : cnt[b]
        for (i = 1; i <= n; i++) {
                if (val[b, i] <= 0)
                        return 0
                L[i] = val[a, i] / val[b, i]
        }
        return n
}

function sock_point(conns, depth, pin, label, ops_goal, cpu_goal,    k) {
        k = "sock" SUBSEP pin SUBSEP "%s" SUBSEP conns SUBSEP depth
        target("socket " label ": memacctd ops/s / INCRBY's",
               ratios(sprintf(k, "memacct"), sprintf(k, "redis")), ">=", ops_goal, "x")
        cpuk[++ncpu] = k; cpul[ncpu] = label; cpug[ncpu] = cpu_goal
}

function header(title) {
        printf "%-54s | %12s | %8s | %11s | %s\n", title, "", "", "", ""
}

END {
        printf "%-54s | %12s | %8s | %11s | %s\n", "target", "measured", "spread", "goal", "met?"
        printf "%s\n", "-------------------------------------------------------+--------------+----------+-------------+-------"

        sock_point(1, 1, "cpu0", "1x1 pinned", 1.0, 1.0)
        sock_point(8, 1, "-", "8x1", 1.0, 1.0)
        sock_point(64, 1, "-", "64x1", 1.0, 1.0)
        sock_point(1, 16, "-", "1x16", 1.5, 0.5)
        sock_point(8, 16, "-", "8x16", 1.5, 0.5)
        sock_point(64, 16, "-", "64x16", 1.5, 0.5)
        for (i = 1; i <= ncpu; i++)
                target("socket " cpul[i] ": server CPU/request / INCRBY's",
                       ratios(sprintf(cpuk[i], "memacct") SUBSEP "cpu",
                              sprintf(cpuk[i], "redis") SUBSEP "cpu"), "<=", cpug[i], "x")

        target("stock: 4 KiB charge+uncharge, 1 thread (elapsed)",
               values("stock" SUBSEP "stock_pair" SUBSEP 1, 1), "<=", 20, "ns")
        target("stock: 2 threads' ops/s / 1 thread's",
               ratios("stock" SUBSEP "stock_pair" SUBSEP 2 SUBSEP "mops",
                      "stock" SUBSEP "stock_pair" SUBSEP 1 SUBSEP "mops"), ">=", 1.8, "x")
        target("stock: 4 KiB charge only (a refill per batch), 1 thr",
               values("stock" SUBSEP "stock_charge" SUBSEP 1, 1), "", 0, "ns")

        a = "core" SUBSEP "after" SUBSEP
        b = "core" SUBSEP "before" SUBSEP
        # The machine's floor (bench-core --only floor): the ns figures
        # around it read against it.
        target("floor: atomic add, a line of one's own",
               values(a "floor_atomic" SUBSEP 1, 1), "", 0, "ns")
        target("floor: atomic add, one line, 2 thr / 1 thr",
               values(a "floor_atomic_ratio" SUBSEP 2, 1), "", 0, "x")
        target("floor: a line handed between the 2 CPUs",
               values(a "floor_transfer" SUBSEP 2, 1), "", 0, "ns")
        target("floor: clock_gettime(CLOCK_MONOTONIC)",
               values(a "floor_clock" SUBSEP 1, 1), "", 0, "ns")
        target("core: 3-level charge+uncharge, 1 thread",
               values(a "charge_depth3" SUBSEP 1, 1), "<=", 50, "ns")
        target("core: 3-level siblings, 2 thr per-thread / 1 thr",
               values(a "siblings_ratio" SUBSEP 2, 1), "<=", 1.5, "x")
        target("  the same, fast paths reverted (before)",
               values(b "siblings_ratio" SUBSEP 2, 1), "", 0, "x")
        target("  2 threads: ns before / ns after (the fast paths)",
               ratios(b "siblings" SUBSEP 2, a "siblings" SUBSEP 2), "", 0, "x")
        target("core: siblings under min/low, 2 thr / 1 thr",
               values(a "protected_siblings_ratio" SUBSEP 2, 1), "<=", 1.5, "x")
        target("  the same, fast paths reverted (before)",
               values(b "protected_siblings_ratio" SUBSEP 2, 1), "", 0, "x")
        target("  2 threads: ns before / ns after (the fast paths)",
               ratios(b "protected_siblings" SUBSEP 2, a "protected_siblings" SUBSEP 2), "", 0, "x")

        gl = groups == 1000000 ? "1M groups" : groups " groups"
        # From run-core.sh, or else from the runs against BENCH_PEER.
        for (t = 1; t <= 2; t++) {
                k = a "flush_sparse" SUBSEP t
                if (!(k in cnt))
                        k = "peer" SUBSEP "self" SUBSEP "flush_sparse" SUBSEP t
                target("flush: 100 of 100k groups updated, " t " registered thr",
                       values(k, 1e-3), "<=", 100, "us")
        }
        for (t = 1; t <= 2; t++) {
                if (("peer" SUBSEP "self" SUBSEP "flush_full" SUBSEP t) in cnt)
                        n = ratios("peer" SUBSEP "self" SUBSEP "flush_full" SUBSEP t,
                                   "peer" SUBSEP "peer" SUBSEP "flush_full" SUBSEP t)
                else
                        n = ratios(a "flush_full" SUBSEP t, b "flush_full" SUBSEP t)
                target("flush: all of 100k updated, " t " thr: this / before", n, "<=", 1.0, "x")
        }

        target(gl ": heap per group, 2 registered threads",
               values("million" SUBSEP "million_mem_per_group", 1), "<=", 1024, "B")
        target(gl ": daemon's save at SIGTERM (whole state)",
               values("daemon" SUBSEP "daemon_save", 1e-9), "<=", 2, "s")
        target(gl ": persist_save() in-process",
               values("persist" SUBSEP "persist_save", 1e-9), "<=", 2, "s")
        target(gl ": daemon's load, exec to first answer",
               values("daemon" SUBSEP "daemon_load", 1e-9), "<=", 2, "s")
        target(gl ": persist_restore() in-process",
               values("persist" SUBSEP "persist_restore", 1e-9), "<=", 2, "s")

        print ""
        print "measured: the median over " rounds " rounds of a figure, or of the ratio of two"
        print "figures measured back to back in the same round; spread: (max - min) / median"
        print "of those values; met?: the median against the goal, \"~\" when some rounds fall"
        print "on the other side. socket: points conns x depth, ratios against redis INCRBY"
        print "in the same round; core: bench-core, CPU time per charge+uncharge and thread;"
        print "flush: ns per forced core_stats_flush(), full flush against " peer_what ";"
        print gl ": " groups " groups, state saved with sync=" sync "."
        if (nbad > 0) {
                print ""
                print "RUNS WITH ERRORS OR A FAILED CHECK:"
                for (i = 1; i <= nbad; i++)
                        print "  " bad[i]
        }
}
