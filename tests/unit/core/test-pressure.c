/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memory.pressure (daemon/core/pressure.c) with the clock driven by hand:
 * the totals, some against full, the group and its ancestors, and the
 * averages against their definition. Each average is an exponentially
 * weighted mean of the per-period stall percentage, sampled every 2 s,
 * each period decaying the last value by psi's constant for its time
 * constant T (10, 60 or 300 s): 1/exp(2s/T) in 11-bit fixed point
 * (kernel/sched/psi.c, EXP_10s ...), computed here from that definition.
 * After n periods at a steady p percent from 0 the average is
 * p * (1 - d^n), and m idle periods multiply it by d^m. The expected
 * values are computed so, in floating point; the implementation's
 * fixed-point steps stay within TOLERANCE of them.
 */

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core-test.h"
#include "group-internal.h"
#include "pressure.h"
#include "session.h"

#define SEC(x) ((uint64_t) ((x) * 1000000.0))
/* Hundredths of a percent: each fixed-point step rounds (psi's
 * calc_load()), and the printed figure is truncated. */
#define TOLERANCE 3

/* An arbitrary start: nothing may assume the clock starts at 0. */
static const uint64_t T0 = UINT64_C(1000) * 1000000;

static MemPressureFigures read_kind(MemCore *core, MemGroup *g, uint64_t now, MemPressureKind k) {
        MemPressureFigures f[_MEM_PRESSURE_MAX];

        pressure_read(core, g, now, f);
        return f[k];
}

/* psi's decay of one 2 s period for time constant @T seconds, as its constants define it. */
static double decay(double T) {
        return round(2048.0 * exp(-2.0 / T)) / 2048.0;
}

/* @p percent for @n periods, then @m idle ones, with time constant @T: in hundredths. */
static long expected(double p, int n, int m, double T) {
        return lround(100.0 * p * (1.0 - pow(decay(T), n)) * pow(decay(T), m));
}

static void assert_avgs(MemPressureFigures f, double p, int n, int m) {
        long e10 = expected(p, n, m, 10), e60 = expected(p, n, m, 60), e300 = expected(p, n, m, 300);

        print_message("avg10=%u (%ld) avg60=%u (%ld) avg300=%u (%ld)\n", f.avg10, e10, f.avg60, e60, f.avg300,
                      e300);
        assert_in_range(f.avg10, MAX(e10 - TOLERANCE, 0), e10 + TOLERANCE);
        assert_in_range(f.avg60, MAX(e60 - TOLERANCE, 0), e60 + TOLERANCE);
        assert_in_range(f.avg300, MAX(e300 - TOLERANCE, 0), e300 + TOLERANCE);
}

static void never_stalled_reads_zero(void **state) {
        MemCore *core = *state;
        MemGroup *g = make_group(core, "/quiet");
        MemPressureFigures f[_MEM_PRESSURE_MAX];

        pressure_read(core, g, T0, f);
        for (int s = 0; s < _MEM_PRESSURE_MAX; s++) {
                assert_int_equal(f[s].total_usec, 0);
                assert_int_equal(f[s].avg10 + f[s].avg60 + f[s].avg300, 0);
        }
        /* No record: a group that never stalls pays for the pointer only. */
        assert_null(atomic_load(&g->pressure));
        group_unref(g);
}

/* A stall below /a/b counts in /a/b, /a and /, not in the sibling /c. */
static void stall_counts_in_ancestors(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a"), *b = make_group(core, "/a/b"), *c = make_group(core, "/c");
        MemGroup *root = take_group(core, "/");
        unsigned refs = refs_of(b);

        assert_int_equal(pressure_stall_begin(core, b, T0), 0);
        /* The stall holds its path. */
        assert_int_equal(refs_of(b), refs + 1);
        /* A read in the middle of a stall includes the time so far. */
        assert_int_equal(read_kind(core, b, T0 + SEC(1.25), MEM_PRESSURE_SOME).total_usec, SEC(1.25));
        pressure_stall_end(core, b, T0 + SEC(3.5));
        assert_int_equal(refs_of(b), refs);

        for (MemGroup *g = b; g; g = g->parent)
                for (int s = 0; s < _MEM_PRESSURE_MAX; s++)
                        /* Nobody is attached: the one waiting charge is all of them. */
                        assert_int_equal(read_kind(core, g, T0 + SEC(10), s).total_usec, SEC(3.5));
        assert_int_equal(read_kind(core, c, T0 + SEC(10), MEM_PRESSURE_SOME).total_usec, 0);
        assert_null(atomic_load(&c->pressure));

        /* Two overlapping stalls count their union, not their sum. */
        assert_int_equal(pressure_stall_begin(core, b, T0 + SEC(20)), 0);
        assert_int_equal(pressure_stall_begin(core, a, T0 + SEC(21)), 0);
        pressure_stall_end(core, b, T0 + SEC(22));
        pressure_stall_end(core, a, T0 + SEC(24));
        assert_int_equal(read_kind(core, b, T0 + SEC(30), MEM_PRESSURE_SOME).total_usec, SEC(3.5 + 2));
        assert_int_equal(read_kind(core, a, T0 + SEC(30), MEM_PRESSURE_SOME).total_usec, SEC(3.5 + 4));
        assert_int_equal(read_kind(core, root, T0 + SEC(30), MEM_PRESSURE_SOME).total_usec, SEC(3.5 + 4));
        group_unref(root);
        group_unref(c);
        group_unref(b);
        group_unref(a);
}

/* full: every session attached in the subtree waits; some: at least one. */
static void some_without_full(void **state) {
        MemCore *core = *state;
        MemGroup *x = make_group(core, "/x"), *y = make_group(core, "/x/y"), *other = make_group(core, "/other");
        MemGroup *root = take_group(core, "/");
        _cleanup_(session_freep) MemSession *s1 = NULL, *s2 = NULL, *s3 = NULL;

        assert_int_equal(session_new(core, 1, 0, 0, &s1), 0);
        assert_int_equal(session_new(core, 2, 0, 0, &s2), 0);
        assert_int_equal(session_new(core, 3, 0, 0, &s3), 0);
        assert_int_equal(session_attach(s1, y), 0);
        assert_int_equal(session_attach(s3, other), 0);

        /* s1, alone in /x/y and in /x, waits for 2 s: full there; the root
         * has s3 too, running. */
        assert_int_equal(pressure_stall_begin(core, y, T0), 0);
        pressure_stall_end(core, y, T0 + SEC(2));
        assert_int_equal(read_kind(core, y, T0 + SEC(3), MEM_PRESSURE_FULL).total_usec, SEC(2));
        assert_int_equal(read_kind(core, x, T0 + SEC(3), MEM_PRESSURE_FULL).total_usec, SEC(2));
        assert_int_equal(read_kind(core, root, T0 + SEC(3), MEM_PRESSURE_SOME).total_usec, SEC(2));
        assert_int_equal(read_kind(core, root, T0 + SEC(3), MEM_PRESSURE_FULL).total_usec, 0);

        /* s2 attached to /x, idle: s1's next wait is some in /x, full in /x/y. */
        assert_int_equal(session_attach(s2, x), 0);
        assert_int_equal(pressure_stall_begin(core, y, T0 + SEC(4)), 0);
        pressure_stall_end(core, y, T0 + SEC(5));
        assert_int_equal(read_kind(core, x, T0 + SEC(6), MEM_PRESSURE_SOME).total_usec, SEC(3));
        assert_int_equal(read_kind(core, x, T0 + SEC(6), MEM_PRESSURE_FULL).total_usec, SEC(2));
        assert_int_equal(read_kind(core, y, T0 + SEC(6), MEM_PRESSURE_FULL).total_usec, SEC(3));

        /* Both wait (two stalls): full again in /x, from the second on. */
        assert_int_equal(pressure_stall_begin(core, y, T0 + SEC(7)), 0);
        assert_int_equal(pressure_stall_begin(core, x, T0 + SEC(8)), 0);
        pressure_stall_end(core, x, T0 + SEC(9.5));
        pressure_stall_end(core, y, T0 + SEC(10));
        assert_int_equal(read_kind(core, x, T0 + SEC(11), MEM_PRESSURE_SOME).total_usec, SEC(3 + 3));
        assert_int_equal(read_kind(core, x, T0 + SEC(11), MEM_PRESSURE_FULL).total_usec, SEC(2 + 1.5));

        group_unref(root);
        group_unref(other);
        group_unref(y);
        group_unref(x);
}

/* 10 s of stall from the record's first period: the 10 s average near 1 - 1/e of 100 %. */
static void averages_of_a_full_stall(void **state) {
        MemCore *core = *state;
        MemGroup *g = make_group(core, "/busy");

        assert_int_equal(pressure_stall_begin(core, g, T0), 0);
        assert_avgs(read_kind(core, g, T0 + SEC(10), MEM_PRESSURE_SOME), 100, 5, 0);
        /* And near the continuous curve, 100 (1 - e^-1) = 63.21 %. */
        assert_in_range(read_kind(core, g, T0 + SEC(10), MEM_PRESSURE_SOME).avg10, 6321 - 5, 6321 + 5);
        assert_avgs(read_kind(core, g, T0 + SEC(10), MEM_PRESSURE_FULL), 100, 5, 0);
        /* Within a period nothing moves: the next sample is at its end. */
        assert_avgs(read_kind(core, g, T0 + SEC(11.9), MEM_PRESSURE_SOME), 100, 5, 0);
        pressure_stall_end(core, g, T0 + SEC(60));
        assert_avgs(read_kind(core, g, T0 + SEC(60), MEM_PRESSURE_SOME), 100, 30, 0);
        group_unref(g);
}

/* Half of every period stalled: the averages tend to 50 %. */
static void averages_of_half_stalls(void **state) {
        MemCore *core = *state;
        MemGroup *g = make_group(core, "/half");

        for (int i = 0; i < 10; i++) {
                assert_int_equal(pressure_stall_begin(core, g, T0 + SEC(2 * i)), 0);
                pressure_stall_end(core, g, T0 + SEC(2 * i + 1));
        }
        /* The first stall began the grid: ten periods, each half stalled. */
        assert_avgs(read_kind(core, g, T0 + SEC(20), MEM_PRESSURE_SOME), 50, 10, 0);
        assert_int_equal(read_kind(core, g, T0 + SEC(20), MEM_PRESSURE_SOME).total_usec, SEC(10));
        group_unref(g);
}

/*
 * Periods nobody read decay at the next read, as psi's missed periods,
 * and a group read at every step ends where one read once does: within
 * the rounding by which fixed_power_int()'s one step differs from many.
 */
static void missed_periods_decay(void **state) {
        MemCore *core = *state;
        MemGroup *lazy = make_group(core, "/lazy"), *eager = make_group(core, "/eager");
        MemPressureFigures l, e;

        assert_int_equal(pressure_stall_begin(core, lazy, T0), 0);
        assert_int_equal(pressure_stall_begin(core, eager, T0), 0);
        for (uint64_t t = T0; t <= T0 + SEC(10); t += SEC(0.3))
                (void) read_kind(core, eager, t, MEM_PRESSURE_SOME);
        pressure_stall_end(core, lazy, T0 + SEC(10));
        pressure_stall_end(core, eager, T0 + SEC(10));
        for (uint64_t t = T0 + SEC(10); t <= T0 + SEC(40); t += SEC(0.7))
                (void) read_kind(core, eager, t, MEM_PRESSURE_SOME);

        l = read_kind(core, lazy, T0 + SEC(40), MEM_PRESSURE_SOME);
        e = read_kind(core, eager, T0 + SEC(40), MEM_PRESSURE_SOME);
        assert_avgs(l, 100, 5, 15);
        assert_avgs(e, 100, 5, 15);
        assert_in_range(l.avg10, e.avg10 - TOLERANCE, e.avg10 + TOLERANCE);
        assert_in_range(l.avg60, e.avg60 - TOLERANCE, e.avg60 + TOLERANCE);
        assert_in_range(l.avg300, e.avg300 - TOLERANCE, e.avg300 + TOLERANCE);
        assert_int_equal(l.total_usec, SEC(10));
        assert_int_equal(e.total_usec, SEC(10));

        /* Long enough idle, and everything has decayed to 0; totals stay. */
        l = read_kind(core, lazy, T0 + SEC(10 + 3600), MEM_PRESSURE_SOME);
        assert_int_equal(l.avg10 + l.avg60 + l.avg300, 0);
        assert_int_equal(l.total_usec, SEC(10));
        group_unref(eager);
        group_unref(lazy);
}

/* A clock read before another caller's took the lock does not run time backwards. */
static void earlier_time_is_not_negative(void **state) {
        MemCore *core = *state;
        MemGroup *g = make_group(core, "/clock");

        assert_int_equal(pressure_stall_begin(core, g, T0 + SEC(1)), 0);
        (void) read_kind(core, g, T0 + SEC(3), MEM_PRESSURE_SOME);
        pressure_stall_end(core, g, T0 + SEC(2));
        assert_int_equal(read_kind(core, g, T0 + SEC(4), MEM_PRESSURE_SOME).total_usec, SEC(2));
        group_unref(g);
}

/* A group with a record is freed with it (ASan: no leak); its parent's stays. */
static void record_freed_with_group(void **state) {
        MemCore *core = *state;
        MemGroup *p = make_group(core, "/gone"), *g = make_group(core, "/gone/child");

        assert_int_equal(pressure_stall_begin(core, g, T0), 0);
        pressure_stall_end(core, g, T0 + SEC(1));
        assert_non_null(atomic_load(&g->pressure));
        group_unref(g);
        assert_int_equal(group_remove(core, "/gone/child"), 0);
        assert_int_equal(read_kind(core, p, T0 + SEC(2), MEM_PRESSURE_SOME).total_usec, SEC(1));
        group_unref(p);
        assert_int_equal(group_remove(core, "/gone"), 0);
}

/* A stall on a group removed meanwhile (a kept charge's) ends safely, parent removed too. */
static void stall_outlives_removal(void **state) {
        MemCore *core = *state;
        MemGroup *p = make_group(core, "/kept"), *g = make_group(core, "/kept/child");

        group_unref(p);
        assert_int_equal(pressure_stall_begin(core, g, T0), 0);
        assert_int_equal(group_remove(core, "/kept/child"), 0);
        assert_int_equal(group_remove(core, "/kept"), 0);
        /* A removed group starts no stall. */
        assert_int_equal(pressure_stall_begin(core, g, T0 + SEC(0.5)), -ENOENT);
        pressure_stall_end(core, g, T0 + SEC(1));
        group_unref(g);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(never_stalled_reads_zero),
                CORE_TEST(stall_counts_in_ancestors),
                CORE_TEST(some_without_full),
                CORE_TEST(averages_of_a_full_stall),
                CORE_TEST(averages_of_half_stalls),
                CORE_TEST(missed_periods_decay),
                CORE_TEST(earlier_time_is_not_negative),
                CORE_TEST(record_freed_with_group),
                CORE_TEST(stall_outlives_removal),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
