/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What group_read() reports (group.h): a new group's defaults, its
 * settings read back (a limit of "none" as UINT64_MAX), usage and peak,
 * its children, and its effective protection from the core's recursive
 * protection mode, computed as effective_protection() in mm/page_counter.c.
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
#include "counter.h"
#include "group.h"
#include "stats.h"

/* ---- settings, usage and peak -------------------------------------------- */

static void test_read_reports_defaults_for_new_group(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 4242), 0);
        a = take_group(core, "/a");
        info = read_info(core, a, false);
        assert_int_equal(info.current, 0);
        assert_int_equal(info.peak, 0);
        assert_int_equal(info.max, UINT64_MAX);
        assert_int_equal(info.high, UINT64_MAX);
        assert_int_equal(info.low, 0);
        assert_int_equal(info.min, 0);
        assert_int_equal(info.effective_min, 0);
        assert_int_equal(info.effective_low, 0);
        assert_int_equal(info.failcnt, 0);
        assert_int_equal(info.nr_children, 0);
        assert_int_equal(info.nr_attached, 0);
        assert_int_equal(info.owner, 4242);
        for (int i = 0; i < _MEM_EVENT_MAX; i++) {
                assert_int_equal(info.events[i], 0);
                assert_int_equal(info.events_local[i], 0);
        }
        for (int i = 0; i < _MEM_STAT_MAX; i++) {
                assert_int_equal(info.stat[i], 0);
                assert_int_equal(info.stat_local[i], 0);
                assert_int_equal(info.kept[i], 0);
        }
}

static void test_read_reports_settings_usage_and_children(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/x", 0), 0);
        assert_int_equal(group_create(core, "/a/y", 0), 0);
        a = take_group(core, "/a");
        assert_int_equal(group_set_max(a, 64 * MiB, false), 0);
        group_set_high(a, 48 * MiB);
        group_set_low(a, 16 * MiB);
        group_set_min(a, 8 * MiB);
        assert_int_equal(group_charge(core, a, 12 * MiB, MEM_STAT_OTHER, 0, NULL), 0);

        info = read_info(core, a, false);
        assert_int_equal(info.current, 12 * MiB);
        assert_int_equal(info.peak, 12 * MiB);
        assert_int_equal(info.max, 64 * MiB);
        assert_int_equal(info.high, 48 * MiB);
        assert_int_equal(info.low, 16 * MiB);
        assert_int_equal(info.min, 8 * MiB);
        /* First level under the root: raw settings (rule 1 in protection.c). */
        assert_int_equal(info.effective_min, 8 * MiB);
        assert_int_equal(info.effective_low, 16 * MiB);
        assert_int_equal(info.nr_children, 2);

        /* Limits given as "none" read back as UINT64_MAX. */
        group_set_high(a, UINT64_MAX);
        group_set_low(a, UINT64_MAX);
        assert_int_equal(group_set_max(a, (uint64_t) MEM_COUNTER_MAX + 1, false), 0);
        info = read_info(core, a, false);
        assert_int_equal(info.high, UINT64_MAX);
        assert_int_equal(info.low, UINT64_MAX);
        assert_int_equal(info.max, UINT64_MAX);

        group_uncharge(core, a, 12 * MiB, MEM_STAT_OTHER);
        group_unref(a);
}

static void test_reset_peak_restarts_from_current(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ir;
        MemGroup *root, *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        assert_int_equal(group_charge(core, a, 8 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        group_uncharge(core, a, 6 * KiB, MEM_STAT_ANON);
        ia = read_info(core, a, false);
        assert_int_equal(ia.peak, 8 * KiB);
        assert_int_equal(ia.current, 2 * KiB);

        group_reset_peak(a);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.peak, 2 * KiB);
        assert_int_equal(ir.peak, 8 * KiB); /* per group */

        assert_int_equal(group_charge(core, a, 1 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.peak, 3 * KiB);

        group_uncharge(core, a, 3 * KiB, MEM_STAT_ANON);
        group_unref(a);
        group_unref(root);
}

/* ---- effective protection ------------------------------------------------ */

static void test_recursive_protection_switch_changes_effective_low(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ib, ic;
        MemGroup *a, *b, *c;

        /* / -> A (low 50) -> B (low 0, usage 60), C (low 20, usage 20), MiB.
         * A.usage = 80, A.children_low = min(60,0) + min(20,20) = 20. */
        assert_int_equal(group_create(core, "/A", 0), 0);
        assert_int_equal(group_create(core, "/A/B", 0), 0);
        assert_int_equal(group_create(core, "/A/C", 0), 0);
        a = take_group(core, "/A");
        b = take_group(core, "/A/B");
        c = take_group(core, "/A/C");
        group_set_low(a, 50 * MiB);
        group_set_low(c, 20 * MiB);
        assert_int_equal(group_charge(core, b, 60 * MiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge(core, c, 20 * MiB, MEM_STAT_ANON, 0, NULL), 0);

        /* Off: siblings 20 <= A.elow 50, undercommit; B = min(60,0) = 0,
         * C = min(20,20) = 20. A itself is first level: 50. */
        core_set_recursive_protection(core, false);
        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ic = read_info(core, c, false);
        assert_int_equal(ia.effective_low, 50 * MiB);
        assert_int_equal(ib.effective_low, 0);
        assert_int_equal(ic.effective_low, 20 * MiB);

        /* On: B gets (50 - 20) * (60 - 0) / (80 - 20) = 30 * 60 / 60 = 30;
         * C has no unprotected usage (20 == protected): stays 20. */
        core_set_recursive_protection(core, true);
        ib = read_info(core, b, false);
        ic = read_info(core, c, false);
        assert_int_equal(ib.effective_low, 30 * MiB);
        assert_int_equal(ic.effective_low, 20 * MiB);
        assert_int_equal(ib.effective_min, 0);

        /* With A as the reclaim root, B is first level: its raw 0. */
        group_read(core, b, a, false, &ib);
        assert_int_equal(ib.effective_low, 0);
        group_read(core, a, a, false, &ia);
        assert_int_equal(ia.effective_low, 0);

        core_set_recursive_protection(core, false);
        ib = read_info(core, b, false);
        assert_int_equal(ib.effective_low, 0);

        group_uncharge(core, b, 60 * MiB, MEM_STAT_ANON);
        group_uncharge(core, c, 20 * MiB, MEM_STAT_ANON);
        group_unref(c);
        group_unref(b);
        group_unref(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_read_reports_defaults_for_new_group),
                CORE_TEST(test_read_reports_settings_usage_and_children),
                CORE_TEST(test_reset_peak_restarts_from_current),
                CORE_TEST(test_recursive_protection_switch_changes_effective_low),
        };

        return cmocka_run_group_tests_name("core-group-read", tests, NULL, NULL);
}
