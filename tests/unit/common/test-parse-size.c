/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "parse-size.h"

static void expect_size(const char *s, uint64_t want) {
        uint64_t v = 0;

        assert_int_equal(parse_size(s, &v), 0);
        assert_true(v == want);
}

static void test_parse_size_accepts_suffixes_and_max(void **state) {
        (void) state;
        expect_size("0", 0);
        expect_size("4096", 4096);
        expect_size("512K", 512 * 1024);
        expect_size("512k", 512 * 1024);
        expect_size("3M", 3 * 1024 * 1024);
        expect_size("1G", 1ULL << 30);
        expect_size("16T", 16ULL << 40);
        expect_size("2P", 2ULL << 50);
        expect_size("15e", 15ULL << 60);
        expect_size("max", UINT64_MAX);
        expect_size("infinity", UINT64_MAX);
        expect_size("  7\n", 7);
        /* No octal: a leading zero is decimal. */
        expect_size("010", 10);
        expect_size("18446744073709551615", UINT64_MAX);
}

static void test_parse_size_refuses_garbage_and_overflow(void **state) {
        uint64_t v = 42;

        (void) state;
        assert_int_equal(parse_size("", &v), -EINVAL);
        assert_int_equal(parse_size("K", &v), -EINVAL);
        assert_int_equal(parse_size("1.5G", &v), -EINVAL);
        assert_int_equal(parse_size("0x10", &v), -EINVAL);
        assert_int_equal(parse_size("12Q", &v), -EINVAL);
        assert_int_equal(parse_size("1KB", &v), -EINVAL);
        assert_int_equal(parse_size("-1", &v), -EINVAL);
        assert_int_equal(parse_size("maxx", &v), -EINVAL);
        assert_int_equal(parse_size(NULL, &v), -EINVAL);
        assert_int_equal(parse_size("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_size("17179869184G", &v), -ERANGE);
        assert_int_equal(parse_size("16E", &v), -ERANGE);
        /* Nothing is written on failure. */
        assert_true(v == 42);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_size_accepts_suffixes_and_max),
                cmocka_unit_test(test_parse_size_refuses_garbage_and_overflow),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
