/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mem_path_check(): which group paths the core accepts, and why it
 * refuses the others (MemPathError). Paths are absolute, made of non-empty
 * components of [A-Za-z0-9._:@-] that are not "." or "..", each at most
 * MEM_NAME_MAX bytes, the whole at most MEM_PATH_MAX bytes and max_depth
 * components. A pure function: no core is needed.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core-test.h"
#include "group.h"

/* ---- mem_path_check ---------------------------------------------------- */

static void assert_path(const char *path, unsigned max_depth, int expect_r,
                        MemPathError expect_reason) {
        MemPathError reason = _MEM_PATH_ERROR_MAX;

        assert_int_equal(mem_path_check(path, max_depth, &reason), expect_r);
        assert_int_equal(reason, expect_reason);
        /* The reason is optional, and does not change the answer. */
        assert_int_equal(mem_path_check(path, max_depth, NULL), expect_r);
        assert_non_null(mem_path_error_to_string(reason));
}

static void test_path_check_accepts_valid_paths(void **state) {
        (void) state;

        assert_path("/", 32, 0, MEM_PATH_OK);
        assert_path("/a", 32, 1, MEM_PATH_OK);
        assert_path("/system.slice/db.service", 32, 2, MEM_PATH_OK);
        /* Every allowed character class, and names that only look like dots. */
        assert_path("/AZaz09._:@-", 32, 1, MEM_PATH_OK);
        assert_path("/.../.a/a./..b", 32, 4, MEM_PATH_OK);
}

static void test_path_check_refuses_relative_path(void **state) {
        (void) state;

        assert_path("", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path("a", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path("a/b", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path(" /a", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
}

static void test_path_check_refuses_empty_component(void **state) {
        (void) state;

        assert_path("//", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a//b", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a/", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a/b/", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
}

static void test_path_check_refuses_dot_components(void **state) {
        (void) state;

        assert_path("/.", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/..", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/a/./b", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/a/..", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
}

static void test_path_check_refuses_bad_characters(void **state) {
        (void) state;

        assert_path("/a b", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a*", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a\tb", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a/b\\c", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/caf\xc3\xa9", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a\nb", 32, -EINVAL, MEM_PATH_BAD_CHAR);
}

static void test_path_check_limits_component_to_255_bytes(void **state) {
        char path[1 + 256 + 1];

        (void) state;

        path[0] = '/';
        memset(path + 1, 'n', 255);
        path[256] = 0;
        assert_int_equal(strlen(path), 1 + MEM_NAME_MAX);
        assert_path(path, 32, 1, MEM_PATH_OK);

        path[256] = 'n';
        path[257] = 0;
        assert_path(path, 32, -ENAMETOOLONG, MEM_PATH_NAME_TOO_LONG);
}

static void test_path_check_limits_whole_path_to_path_max(void **state) {
        char path[MEM_PATH_MAX + 2];
        size_t n = 0;

        (void) state;

        /* 16 components of "/" + 255 bytes: 16 * 256 = 4096 = MEM_PATH_MAX. */
        for (unsigned i = 0; i < 16; i++) {
                path[n++] = '/';
                memset(path + n, (int) ('a' + i), 255);
                n += 255;
        }
        path[n] = 0;
        assert_int_equal(strlen(path), MEM_PATH_MAX);
        assert_path(path, 32, 16, MEM_PATH_OK);

        /* 15 such components (3840) + "/" + 254 (4095) + "/a" = 4097 bytes,
         * 17 components: within depth 32 and each name short enough. */
        n = 15 * 256;
        path[n++] = '/';
        memset(path + n, 'z', 254);
        n += 254;
        path[n++] = '/';
        path[n++] = 'a';
        path[n] = 0;
        assert_int_equal(strlen(path), MEM_PATH_MAX + 1);
        assert_path(path, 32, -ENAMETOOLONG, MEM_PATH_TOO_LONG);
}

static void test_path_check_limits_components_to_max_depth(void **state) {
        char path[256];

        (void) state;

        assert_path("/a/b/c", 3, 3, MEM_PATH_OK);
        assert_path("/a/b/c/d", 3, -EMLINK, MEM_PATH_TOO_DEEP);
        assert_path("/a", 1, 1, MEM_PATH_OK);
        assert_path("/a/b", 1, -EMLINK, MEM_PATH_TOO_DEEP);

        deep_path(path, sizeof(path), 32);
        assert_path(path, 32, 32, MEM_PATH_OK);
        deep_path(path, sizeof(path), 33);
        assert_path(path, 32, -EMLINK, MEM_PATH_TOO_DEEP);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path_check_accepts_valid_paths),
                cmocka_unit_test(test_path_check_refuses_relative_path),
                cmocka_unit_test(test_path_check_refuses_empty_component),
                cmocka_unit_test(test_path_check_refuses_dot_components),
                cmocka_unit_test(test_path_check_refuses_bad_characters),
                cmocka_unit_test(test_path_check_limits_component_to_255_bytes),
                cmocka_unit_test(test_path_check_limits_whole_path_to_path_max),
                cmocka_unit_test(test_path_check_limits_components_to_max_depth),
        };

        return cmocka_run_group_tests_name("core-group-paths", tests, NULL, NULL);
}
