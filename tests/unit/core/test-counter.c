/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the hierarchical counter (counter.h): charge, try_charge and
 * uncharge along a chain, set_max, the watermark and limit clamping.
 * Effective protection is in test-protection.c, the memory.high throttle
 * delay in test-high-delay.c.
 *
 * Every expected number is derived in a comment from the kernel algorithm
 * the core mirrors, never read back from the code under test: the page
 * counter's charge and limit walks of mm/page_counter.c.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "counter.h"

#define KiB ((int64_t) 1 << 10)
#define MiB ((int64_t) 1 << 20)

/* A chain top <- mid <- leaf, top being the root. */
typedef struct Chain {
        MemCounter top, mid, leaf;
} Chain;

static void chain_init(Chain *ch) {
        counter_init(&ch->top, NULL);
        counter_init(&ch->mid, &ch->top);
        counter_init(&ch->leaf, &ch->mid);
}

static int64_t failcnt(const MemCounter *c) {
        return (int64_t) atomic_load(&c->failcnt);
}

static int64_t watermark(const MemCounter *c) {
        return atomic_load(&c->watermark);
}

/* ---- counter_init ---------------------------------------------------- */

static void test_init_starts_empty_and_unlimited(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_ptr_equal(ch.leaf.parent, &ch.mid);
        assert_ptr_equal(ch.mid.parent, &ch.top);
        assert_null(ch.top.parent);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read_limit(&ch.leaf.max), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.leaf.max)), UINT64_MAX);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.leaf.high)), UINT64_MAX);
        assert_int_equal(counter_read_limit(&ch.leaf.min), 0);
        assert_int_equal(counter_read_limit(&ch.leaf.low), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
        assert_int_equal(watermark(&ch.leaf), 0);
}

/* ---- charge / try_charge / uncharge ----------------------------------- */

static void test_try_charge_charges_every_level(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 10 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 10 * KiB);
        assert_int_equal(counter_read(&ch.top), 10 * KiB);

        /* A charge to the middle is seen by it and the top, not the leaf. */
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 5 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 15 * KiB);
        assert_int_equal(counter_read(&ch.top), 15 * KiB);
        assert_null(fail);

        counter_uncharge(&ch.leaf, NULL, 4 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 6 * KiB);
        assert_int_equal(counter_read(&ch.mid), 11 * KiB);
        assert_int_equal(counter_read(&ch.top), 11 * KiB);

        counter_uncharge(&ch.mid, NULL, 5 * KiB);
        counter_uncharge(&ch.leaf, NULL, 6 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_try_charge_to_exactly_max_succeeds(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 100 * KiB), 0);

        /* 60 + 40 = 100 = max: "new > max" is false, so it is accepted. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 60 * KiB, &fail), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 40 * KiB, &fail), 0);
        assert_null(fail);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 100 * KiB);
        assert_int_equal(failcnt(&ch.top), 0);
}

static void test_try_charge_rolls_back_on_ancestor_limit(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 100 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100 * KiB, &fail), 0);

        /* One byte over the top's max: refused there, leaf and mid unwound. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.top);
        assert_int_equal(counter_read(&ch.leaf), 100 * KiB);
        assert_int_equal(counter_read(&ch.mid), 100 * KiB);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
        assert_int_equal(failcnt(&ch.top), 1);
        assert_int_equal(failcnt(&ch.mid), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
        /* The refusing level never takes the add, so its peak is unmoved
         * (the levels below may record it, as page_counter's do). */
        assert_int_equal(watermark(&ch.top), 100 * KiB);

        /* Each refusal counts once more. */
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 7, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.top);
        assert_int_equal(failcnt(&ch.top), 2);
        assert_int_equal(counter_read(&ch.mid), 100 * KiB);

        /* After an uncharge the same byte fits again. */
        counter_uncharge(&ch.leaf, NULL, 1);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), 0);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
}

static void test_try_charge_refused_by_middle_leaves_top_untouched(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.mid, 50 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 20 * KiB, &fail), 0);

        /* 20 + 31 = 51 > 50 at mid; the walk stops there, the top never sees it. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 31 * KiB, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
        assert_int_equal(counter_read(&ch.leaf), 20 * KiB);
        assert_int_equal(counter_read(&ch.mid), 20 * KiB);
        assert_int_equal(counter_read(&ch.top), 20 * KiB);
        assert_int_equal(watermark(&ch.top), 20 * KiB);
        assert_int_equal(failcnt(&ch.mid), 1);
        assert_int_equal(failcnt(&ch.top), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
}

static void test_try_charge_refused_by_first_level_charges_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.leaf, 8 * KiB), 0);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 8 * KiB + 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.leaf);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
        assert_int_equal(failcnt(&ch.leaf), 1);
        /* ret_fail is optional. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 9 * KiB, NULL), -EDQUOT);
        assert_int_equal(failcnt(&ch.leaf), 2);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_try_charge_with_stop_charges_only_below_stop(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        /* A top limit that would refuse: with stop == mid it is never consulted. */
        assert_int_equal(counter_set_max(&ch.top, 1 * KiB), 0);

        assert_int_equal(counter_try_charge(&ch.leaf, &ch.mid, 10 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
        assert_int_equal(failcnt(&ch.top), 0);

        /* stop == top: leaf and mid, not the top. */
        assert_int_equal(counter_try_charge(&ch.leaf, &ch.top, 3 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 13 * KiB);
        assert_int_equal(counter_read(&ch.mid), 3 * KiB);
        assert_int_equal(counter_read(&ch.top), 0);

        /* A limit below the stop still refuses, and is reported. */
        assert_int_equal(counter_set_max(&ch.mid, 4 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, &ch.top, 2 * KiB, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
        assert_int_equal(counter_read(&ch.leaf), 13 * KiB);
        assert_int_equal(counter_read(&ch.mid), 3 * KiB);

        /* Uncharge with the same stops gives everything back. */
        counter_uncharge(&ch.leaf, &ch.top, 3 * KiB);
        counter_uncharge(&ch.leaf, &ch.mid, 10 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_charge_ignores_max_and_reports_overage(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.mid, 10 * KiB), 0);

        assert_int_equal(counter_charge(&ch.leaf, 10 * KiB), 0); /* exactly max: not above */
        assert_int_equal(counter_charge(&ch.leaf, 5 * KiB), 1);  /* 15 > 10 at mid */
        assert_int_equal(counter_read(&ch.leaf), 15 * KiB);
        assert_int_equal(counter_read(&ch.mid), 15 * KiB);
        assert_int_equal(counter_read(&ch.top), 15 * KiB);
        assert_int_equal(watermark(&ch.mid), 15 * KiB);
        /* A forced charge is not a refusal. */
        assert_int_equal(failcnt(&ch.mid), 0);

        /* While above max, a try_charge is refused by mid. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
}

static void test_zero_byte_charge_changes_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 4 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 4 * KiB, &fail), 0);

        /* At max, 0 more bytes still fit (4 + 0 is not > 4). */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 0, &fail), 0);
        assert_null(fail);
        assert_int_equal(counter_charge(&ch.leaf, 0), 0);
        counter_uncharge(&ch.leaf, NULL, 0);
        assert_int_equal(counter_read(&ch.leaf), 4 * KiB);
        assert_int_equal(counter_read(&ch.mid), 4 * KiB);
        assert_int_equal(counter_read(&ch.top), 4 * KiB);
        assert_int_equal(failcnt(&ch.top), 0);
}

static void test_oversized_charge_is_overflow_and_charges_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1 * KiB, &fail), 0);

        assert_int_equal(counter_charge(&ch.leaf, UINT64_MAX), -EOVERFLOW);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, UINT64_MAX, &fail), -EOVERFLOW);
        assert_int_equal(counter_charge(&ch.leaf, MEM_CHARGE_MAX + 1), -EOVERFLOW);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, MEM_CHARGE_MAX + 1, &fail),
                         -EOVERFLOW);
        assert_int_equal(counter_read(&ch.leaf), 1 * KiB);
        assert_int_equal(counter_read(&ch.mid), 1 * KiB);
        assert_int_equal(counter_read(&ch.top), 1 * KiB);
        assert_int_equal(watermark(&ch.top), 1 * KiB);
        assert_int_equal(failcnt(&ch.leaf) + failcnt(&ch.mid) + failcnt(&ch.top), 0);

        /* MEM_CHARGE_MAX itself is a legal charge. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, MEM_CHARGE_MAX, &fail), 0);
        assert_int_equal(counter_read(&ch.top), (int64_t) MEM_CHARGE_MAX + 1 * KiB);
        counter_uncharge(&ch.leaf, NULL, MEM_CHARGE_MAX);
        assert_int_equal(counter_read(&ch.top), 1 * KiB);
}

static void test_charge_past_counter_max_is_overflow_and_unwinds(void **state) {
        unsigned n = (unsigned) ((uint64_t) MEM_COUNTER_MAX / MEM_CHARGE_MAX);
        Chain ch;

        (void) state;
        chain_init(&ch);

        /* 2^62 / 2^48 = 16384 charges of MEM_CHARGE_MAX fill mid (and top)
         * to exactly MEM_COUNTER_MAX, which is not above it. */
        assert_int_equal(n, 16384);
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(counter_charge(&ch.mid, MEM_CHARGE_MAX), 0);
        assert_int_equal(counter_read(&ch.mid), MEM_COUNTER_MAX);

        /* One byte more via the leaf: the leaf takes it, mid would pass
         * MEM_COUNTER_MAX, so the leaf is unwound and nothing is charged. */
        assert_int_equal(counter_charge(&ch.leaf, 1), -EOVERFLOW);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), MEM_COUNTER_MAX);
        assert_int_equal(counter_read(&ch.top), MEM_COUNTER_MAX);
}

static void test_uncharge_beyond_usage_clamps_at_zero(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_charge(&ch.leaf, 10), 0);
        assert_int_equal(counter_charge(&ch.mid, 30), 0);

        /* The caller is wrong by 10 at the leaf: it clamps to 0 there; the
         * ancestors hold enough and simply drop 20. */
        counter_uncharge(&ch.leaf, NULL, 20);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 20);
        assert_int_equal(counter_read(&ch.top), 20);
}

/* ---- set_max ------------------------------------------------------------ */

static void test_set_max_below_usage_is_busy(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);

        assert_int_equal(counter_set_max(&ch.mid, 99), -EBUSY);
        assert_int_equal(counter_read_limit(&ch.mid.max), MEM_COUNTER_MAX); /* unchanged */

        assert_int_equal(counter_set_max(&ch.mid, 100), 0); /* == usage is fine */
        assert_int_equal(counter_read_limit(&ch.mid.max), 100);
        assert_int_equal(counter_set_max(&ch.mid, 50), -EBUSY);
        assert_int_equal(counter_read_limit(&ch.mid.max), 100);

        /* Raising it back to "none" always works. */
        assert_int_equal(counter_set_max(&ch.mid, counter_clamp_limit(UINT64_MAX)), 0);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.mid.max)), UINT64_MAX);
}

static void test_set_max_force_below_usage_returns_one(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);

        assert_int_equal(counter_set_max_force(&ch.mid, 60), 1);
        assert_int_equal(counter_read_limit(&ch.mid.max), 60);
        assert_int_equal(counter_read(&ch.mid), 100); /* nothing is taken away */

        /* Now every try_charge through mid is refused by it. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);

        assert_int_equal(counter_set_max_force(&ch.mid, 100), 0); /* == usage */
        assert_int_equal(counter_set_max_force(&ch.mid, 1000), 0);
        assert_int_equal(counter_read_limit(&ch.mid.max), 1000);
}

/* ---- watermark ------------------------------------------------------------ */

static void test_watermark_tracks_peak_and_resets_to_usage(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 50, NULL), 0);
        counter_uncharge(&ch.leaf, NULL, 80);
        /* leaf peaked at 100, mid and top at 150; now leaf 20, mid/top 70. */
        assert_int_equal(watermark(&ch.leaf), 100);
        assert_int_equal(watermark(&ch.mid), 150);
        assert_int_equal(watermark(&ch.top), 150);

        counter_reset_watermark(&ch.mid);
        assert_int_equal(watermark(&ch.mid), 70);
        assert_int_equal(watermark(&ch.top), 150); /* a reset is per counter */
        assert_int_equal(watermark(&ch.leaf), 100);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 10, NULL), 0);
        assert_int_equal(watermark(&ch.mid), 80);
        assert_int_equal(watermark(&ch.leaf), 100); /* 30 < 100 */
        assert_int_equal(watermark(&ch.top), 150);
}

/* ---- limit clamping --------------------------------------------------------- */

static void test_clamp_limit_round_trips_no_limit(void **state) {
        (void) state;

        assert_int_equal(counter_clamp_limit(UINT64_MAX), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(counter_clamp_limit(UINT64_MAX)), UINT64_MAX);
        /* Anything at or above MEM_COUNTER_MAX means "none" as well. */
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX), MEM_COUNTER_MAX);
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX + 1), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(MEM_COUNTER_MAX), UINT64_MAX);
        /* Below it, values are exact both ways. */
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX - 1), MEM_COUNTER_MAX - 1);
        assert_int_equal(counter_limit_to_u64(MEM_COUNTER_MAX - 1), (uint64_t) MEM_COUNTER_MAX - 1);
        assert_int_equal(counter_clamp_limit(0), 0);
        assert_int_equal(counter_limit_to_u64(0), 0);
        assert_int_equal(counter_limit_to_u64(counter_clamp_limit(12345)), 12345);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_init_starts_empty_and_unlimited),
                cmocka_unit_test(test_try_charge_charges_every_level),
                cmocka_unit_test(test_try_charge_to_exactly_max_succeeds),
                cmocka_unit_test(test_try_charge_rolls_back_on_ancestor_limit),
                cmocka_unit_test(test_try_charge_refused_by_middle_leaves_top_untouched),
                cmocka_unit_test(test_try_charge_refused_by_first_level_charges_nothing),
                cmocka_unit_test(test_try_charge_with_stop_charges_only_below_stop),
                cmocka_unit_test(test_charge_ignores_max_and_reports_overage),
                cmocka_unit_test(test_zero_byte_charge_changes_nothing),
                cmocka_unit_test(test_oversized_charge_is_overflow_and_charges_nothing),
                cmocka_unit_test(test_charge_past_counter_max_is_overflow_and_unwinds),
                cmocka_unit_test(test_uncharge_beyond_usage_clamps_at_zero),
                cmocka_unit_test(test_set_max_below_usage_is_busy),
                cmocka_unit_test(test_set_max_force_below_usage_returns_one),
                cmocka_unit_test(test_watermark_tracks_peak_and_resets_to_usage),
                cmocka_unit_test(test_clamp_limit_round_trips_no_limit),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
