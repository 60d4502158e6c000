/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the memory.high throttle delay (charge.h).
 *
 * Every expected number is derived in a comment from the kernel algorithm
 * the core mirrors, never read back from the code under test:
 * calculate_high_delay() in mm/memcontrol.c.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "charge.h"

#define KiB ((int64_t) 1 << 10)
#define MiB ((int64_t) 1 << 20)

/* ---- charge_high_delay_usec() ---------------------------------------------- */

/*
 * The kernel's calculate_high_delay() in µs instead of jiffies:
 *   overage = ((usage - high) << 20) / high
 *   penalty = overage^2 * 1000000 >> 20 >> 14
 *   penalty = penalty * max(pages, 64) / 64, pages = bytes / 4096
 *   clamp to 2 s; 0 if <= 10000 µs.
 * With high = 100 MiB, (usage - high) = k MiB:
 *   overage = k * 2^20 * 2^20 / (100 * 2^20) = floor(k * 2^20 / 100).
 */
#define HIGH (100 * MiB)

static void test_high_delay_zero_at_or_below_high(void **state) {
        (void) state;

        assert_int_equal(charge_high_delay_usec(0, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH - 1, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH, HIGH, 64 * MiB), 0);
        /* No high set (MEM_COUNTER_MAX): never a delay. */
        assert_int_equal(charge_high_delay_usec(HIGH, MEM_COUNTER_MAX, 4096), 0);
}

static void test_high_delay_below_ten_ms_is_zero(void **state) {
        (void) state;

        /* 101 MiB: overage = floor(2^20 / 100) = 10485;
         * 10485^2 = 109935225; * 10^6 = 109935225000000; >> 34 = 6399 µs
         * (the kernel's ~6 ms): at or below 10 ms, so 0. */
        assert_int_equal(charge_high_delay_usec(101 * MiB, HIGH, 4096), 0);
        /* A few bytes over: also 0. */
        assert_int_equal(charge_high_delay_usec(HIGH + 1, HIGH, 4096), 0);
}

static void test_high_delay_matches_kernel_table(void **state) {
        (void) state;

        /* 102 MiB: overage = floor(2 * 2^20 / 100) = 20971;
         * 20971^2 = 439782841; * 10^6 >> 34 = 25598 µs. */
        assert_int_equal(charge_high_delay_usec(102 * MiB, HIGH, 4096), 25598);

        /* 105 MiB: overage = floor(5 * 2^20 / 100) = 52428;
         * 52428^2 = 2748695184; * 10^6 >> 34 = 159995 µs (the kernel's ~159 ms). */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 4096), 159995);

        /* 110 MiB: overage = floor(10 * 2^20 / 100) = 104857;
         * 104857^2 = 10994990449; * 10^6 >> 34 = 639992 µs (~639 ms). */
        assert_int_equal(charge_high_delay_usec(110 * MiB, HIGH, 4096), 639992);

        /* 117 MiB: overage = floor(17 * 2^20 / 100) = 178257;
         * 178257^2 = 31775558049; * 10^6 >> 34 = 1849580 µs, still below 2 s. */
        assert_int_equal(charge_high_delay_usec(117 * MiB, HIGH, 4096), 1849580);

        /* 118 MiB: overage = floor(18 * 2^20 / 100) = 188743;
         * 188743^2 = 35623920049; * 10^6 >> 34 = 2073585 µs -> capped at 2 s. */
        assert_int_equal(charge_high_delay_usec(118 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
        assert_int_equal(charge_high_delay_usec(150 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
}

static void test_high_delay_scales_with_charge_size(void **state) {
        (void) state;

        /* Up to 64 pages (256 KiB) the factor is 1: same as one page. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 0), 159995);
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 64 * 4096), 159995);

        /* 128 pages: 159995 * 128 / 64 = 319990. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 128 * 4096), 319990);

        /* 4 MiB = 1024 pages lifts the 101 MiB case over 10 ms:
         * 6399 * 1024 / 64 = 102384. */
        assert_int_equal(charge_high_delay_usec(101 * MiB, HIGH, 4 * MiB), 102384);

        /* 110 MiB with 256 pages: 639992 * 4 = 2559968 -> capped at 2 s. */
        assert_int_equal(charge_high_delay_usec(110 * MiB, HIGH, 256 * 4096),
                         MEM_HIGH_DELAY_MAX_USEC);
}

static void test_high_delay_huge_overage_is_capped(void **state) {
        (void) state;

        /* 10x high: overage = 9 * 2^20 = 9437184; overage^2 * 10^6 = 8.9e19
         * passes 2^64: the result must still be the cap, not a wrapped value. */
        assert_int_equal(charge_high_delay_usec(1000 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
        /* (usage - high) << 20 itself passes 2^64 here. */
        assert_int_equal(charge_high_delay_usec(MEM_COUNTER_MAX, 1 * MiB, 4096),
                         MEM_HIGH_DELAY_MAX_USEC);
        /* high 0 (the kernel uses max(high, 1)): any usage is far over. */
        assert_int_equal(charge_high_delay_usec(1 * MiB, 0, 4096), MEM_HIGH_DELAY_MAX_USEC);
        /* Huge charge size on a small overage: capped too. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, MEM_CHARGE_MAX),
                         MEM_HIGH_DELAY_MAX_USEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_high_delay_zero_at_or_below_high),
                cmocka_unit_test(test_high_delay_below_ten_ms_is_zero),
                cmocka_unit_test(test_high_delay_matches_kernel_table),
                cmocka_unit_test(test_high_delay_scales_with_charge_size),
                cmocka_unit_test(test_high_delay_huge_overage_is_capped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
