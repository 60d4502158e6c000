/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory events and the limits that raise them (group.h, charge.h).
 *
 * As memcg_memory_event() in include/linux/memcontrol.h: an event counts
 * locally on the group it happened to (memory.events.local) and
 * hierarchically on that group and every ancestor (memory.events). A
 * refusal by max raises max and, unless the caller will retry
 * (MEM_CHARGE_NO_OOM), oom on the refusing group; a charge that leaves a
 * group above high raises high there and is throttled as
 * calculate_high_delay() in mm/memcontrol.c computes; forcing max below
 * usage raises oom. Unlike the kernel, the root counts hierarchical events
 * too: here it may carry limits (a node-wide budget).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "stats.h"

/* ---- max and oom --------------------------------------------------------- */

static void test_refusal_raises_max_and_oom_on_refusing_group(void **state) {
        MemCore *core = *state;
        MemGroupInfo ir, ia, ib;
        MemChargeResult res;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        assert_int_equal(group_set_max(a, 10 * KiB, false), 0);
        assert_int_equal(group_charge(core, b, 8 * KiB, MEM_STAT_ANON, 0, &res), 0);

        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);

        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        /* The refusing group: local and hierarchical. */
        assert_int_equal(ia.events_local[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.events[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.failcnt, 1);
        /* Its ancestors: hierarchical only. */
        assert_int_equal(ir.events[MEM_EVENT_MAX], 1);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_MAX], 0);
        assert_int_equal(ir.events_local[MEM_EVENT_OOM], 0);
        assert_int_equal(ir.failcnt, 0);
        /* The charged child is below the refusal: nothing at all. */
        assert_int_equal(ib.events_local[MEM_EVENT_MAX], 0);
        assert_int_equal(ib.events_local[MEM_EVENT_OOM], 0);
        assert_int_equal(ib.events[MEM_EVENT_MAX], 0);
        assert_int_equal(ib.events[MEM_EVENT_OOM], 0);
        assert_int_equal(ib.failcnt, 0);
        /* No other event moved. */
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 0);
        assert_int_equal(ia.events[MEM_EVENT_LOW], 0);

        /* A retried refusal (NO_OOM) counts max only. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, MEM_CHARGE_NO_OOM, &res),
                         -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.events_local[MEM_EVENT_MAX], 2);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events[MEM_EVENT_MAX], 2);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.failcnt, 2);

        assert_int_equal(usage_of(a), 8 * KiB);
        group_uncharge(core, b, 8 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

/* ---- high ---------------------------------------------------------------- */

static void test_charge_above_high_raises_high_and_throttles(void **state) {
        MemCore *core = *state;
        MemGroupInfo ir, ia, ib;
        MemChargeResult res;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");

        /* 105 MiB - 256 KiB with no high yet: no event, no hint. */
        assert_int_equal(group_charge(core, b, 105 * MiB - 256 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 0);
        assert_int_equal(res.throttle_usec, 0);

        /* high 100 MiB on /a, then 256 KiB (64 pages, factor 1) more: /a ends
         * at 105 MiB, 5 MiB over. Penalty as in test-counter.c:
         * overage = floor(5 * 2^20 / 100) = 52428; 52428^2 * 10^6 >> 34 = 159995. */
        group_set_high(a, 100 * MiB);
        assert_int_equal(group_charge(core, b, 256 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_null(res.refused);
        assert_false(res.over_max);
        assert_int_equal(res.over_high, 5 * MiB);
        assert_int_equal(res.throttle_usec, 159995);
        assert_int_equal(res.throttle_usec,
                         charge_high_delay_usec(105 * MiB, 100 * MiB, 256 * KiB));

        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.high, 100 * MiB);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ir.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_HIGH], 0);
        assert_int_equal(ib.events_local[MEM_EVENT_HIGH], 0);
        assert_int_equal(ib.events[MEM_EVENT_HIGH], 0);
        /* high never refuses: no max event, no failcnt. */
        assert_int_equal(ia.events[MEM_EVENT_MAX], 0);
        assert_int_equal(ia.failcnt, 0);

        /* A second charge while still above counts again; one below, not. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 5 * MiB + 4 * KiB);
        ia = read_info(core, a, false);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 2);
        group_uncharge(core, b, 6 * MiB, MEM_STAT_ANON);
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 0);
        assert_int_equal(res.throttle_usec, 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 2);

        group_uncharge(core, b, usage_of(b), MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

static void test_over_high_reports_worst_ancestor(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroupInfo ir, ia, ib;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        group_set_high(b, 10 * KiB);
        group_set_high(a, 4 * KiB);

        /* 12 KiB into b: b is 2 KiB over, a 8 KiB over; both count high. */
        assert_int_equal(group_charge(core, b, 12 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 8 * KiB);
        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        assert_int_equal(ib.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ib.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 2);
        assert_int_equal(ir.events[MEM_EVENT_HIGH], 2);

        group_uncharge(core, b, 12 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

/* ---- forced max and forced charges --------------------------------------- */

static void test_forced_max_below_usage_raises_oom(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ir;
        MemGroup *root, *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        assert_int_equal(group_charge(core, a, 8 * KiB, MEM_STAT_ANON, 0, NULL), 0);

        /* Not forced: refused, limit unchanged, no event. */
        assert_int_equal(group_set_max(a, 4 * KiB, false), -EBUSY);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, UINT64_MAX);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 0);

        /* Forced: taken, 1, and an oom event (local + up). */
        assert_int_equal(group_set_max(a, 4 * KiB, true), 1);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.max, 4 * KiB);
        assert_int_equal(ia.current, 8 * KiB);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_OOM], 0);

        /* Forced but not below usage: 0, no new event. */
        assert_int_equal(group_set_max(a, 8 * KiB, true), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, 8 * KiB);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);

        /* "No limit" again. */
        assert_int_equal(group_set_max(a, UINT64_MAX, false), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, UINT64_MAX);

        group_uncharge(core, a, 8 * KiB, MEM_STAT_ANON);
        group_unref(a);
        group_unref(root);
}

static void test_forced_charge_over_max_succeeds_and_says_so(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroupInfo ia, ib;
        MemGroup *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        assert_int_equal(group_set_max(a, 8 * KiB, false), 0);

        /* Within max: a forced charge is an ordinary one. */
        assert_int_equal(group_charge(core, b, 8 * KiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &res), 0);
        assert_false(res.over_max);
        assert_null(res.refused);

        /* Past max: charged anyway, and the caller is told. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &res), 0);
        assert_true(res.over_max);
        assert_null(res.refused);
        ia = read_info(core, a, true);
        ib = read_info(core, b, true);
        assert_int_equal(ia.current, 12 * KiB);
        assert_int_equal(ib.current, 12 * KiB);
        assert_int_equal(ia.peak, 12 * KiB);
        assert_int_equal(ia.failcnt, 0);
        assert_int_equal(ia.stat[MEM_STAT_ANON], 12 * KiB);
        /* Not an oom: nothing was refused. */
        assert_int_equal(ia.events[MEM_EVENT_OOM], 0);

        /* An unforced charge is now refused by a. */
        assert_int_equal(group_charge(core, b, 1, MEM_STAT_ANON, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);

        group_uncharge(core, b, 12 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
}

/*
 * high applies to every charge that is admitted, forced or not: a forced
 * charge within max is an ordinary charge (try_charge_memcg()'s force path
 * ends in the same high handling), and one past max is too. The same
 * charges, unforced and forced, give the same events, over_high and
 * throttle hint.
 */
static void test_forced_charge_is_throttled_above_high_as_any_charge(void **state) {
        MemCore *core = *state;
        MemChargeResult plain, forced;
        MemGroup *a, *b;
        uint64_t high = 64 * KiB, big = 256 * KiB;
        MemGroupInfo ia;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        group_set_high(a, high);
        assert_int_equal(group_set_max(a, 1 * MiB, false), 0);

        /* Above high, within max: unforced, then the same forced. */
        assert_int_equal(group_charge(core, b, big, MEM_STAT_ANON, 0, &plain), 0);
        group_uncharge(core, b, big, MEM_STAT_ANON);
        assert_int_equal(group_charge(core, b, big, MEM_STAT_ANON, MEM_CHARGE_FORCE, &forced), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 2);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 2);
        assert_int_equal(forced.over_high, big - high);
        assert_int_equal(forced.over_high, plain.over_high);
        assert_int_equal(forced.throttle_usec, charge_high_delay_usec((int64_t) big, (int64_t) high, big));
        assert_true(forced.throttle_usec > 0);
        assert_int_equal(forced.throttle_usec, plain.throttle_usec);
        assert_false(forced.over_max);
        assert_int_equal(ia.events[MEM_EVENT_MAX], 0);

        /* Past max, forced: over max and over high, both said. */
        assert_int_equal(group_charge(core, b, 1 * MiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &forced), 0);
        ia = read_info(core, a, false);
        assert_true(forced.over_max);
        assert_int_equal(ia.events[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 3);
        assert_int_equal(forced.over_high, big + 1 * MiB - high);
        assert_true(forced.throttle_usec > 0);

        /* Below high nothing is said, forced or not. */
        group_uncharge(core, b, big + 1 * MiB, MEM_STAT_ANON);
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &forced), 0);
        assert_int_equal(forced.over_high, 0);
        assert_int_equal(forced.throttle_usec, 0);
        assert_int_equal(read_info(core, a, false).events[MEM_EVENT_HIGH], 3);

        group_uncharge(core, b, 4 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_refusal_raises_max_and_oom_on_refusing_group),
                CORE_TEST(test_charge_above_high_raises_high_and_throttles),
                CORE_TEST(test_over_high_reports_worst_ancestor),
                CORE_TEST(test_forced_max_below_usage_raises_oom),
                CORE_TEST(test_forced_charge_over_max_succeeds_and_says_so),
                CORE_TEST(test_forced_charge_is_throttled_above_high_as_any_charge),
        };

        return cmocka_run_group_tests_name("core-group-events", tests, NULL, NULL);
}
