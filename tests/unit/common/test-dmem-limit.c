/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's dmem limit grammar (dmem-limit.h). Every case is one of
 * dmemcg_limit_write() in kernel/cgroup/dmem.c: lines split at "\n",
 * each strstrip()ed, empty ones skipped, the name taken by
 * strsep(" \t"), then the rest, which must not be empty, as "max" or
 * memparse(); and beyond the kernel, a share of the capacity.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dmem-limit.h"

#define GiB (UINT64_C(1) << 30)

static int parse(const char *text, DmemLimit *l, unsigned *line) {
        return dmem_limit_parse(text, l, 4, line);
}

static void test_one_region_as_the_kernel_takes_it(void **state) {
        DmemLimit l[4];

        (void) state;
        assert_int_equal(parse("drm/0000:03:00.0/vram0 8G", l, NULL), 1);
        assert_string_equal(l[0].region, "drm/0000:03:00.0/vram0");
        assert_int_equal(l[0].kind, DMEM_VALUE_BYTES);
        assert_true(l[0].bytes == 8 * GiB);
        /* strstrip(): white space around the line goes, newline included. */
        assert_int_equal(parse("  \tgpu0 512M \n", l, NULL), 1);
        assert_true(l[0].bytes == 512 << 20);
        /* The separator may be a tab. */
        assert_int_equal(parse("gpu0\t1k", l, NULL), 1);
        assert_true(l[0].bytes == 1024);
        assert_int_equal(parse("gpu0 max", l, NULL), 1);
        assert_int_equal(l[0].kind, DMEM_VALUE_MAX);
        /* memparse()'s suffixes, either case. */
        assert_int_equal(parse("gpu0 2t", l, NULL), 1);
        assert_true(l[0].bytes == UINT64_C(2) << 40);
        assert_int_equal(parse("gpu0 0", l, NULL), 1);
        assert_true(l[0].bytes == 0);
}

static void test_several_regions_in_one_write(void **state) {
        DmemLimit l[4];

        (void) state;
        assert_int_equal(parse("gpu0 1G\ngpu1 max\n\n   \nnvidia/0000:3b:00.0/vidmem 50%\n", l, NULL), 3);
        assert_string_equal(l[0].region, "gpu0");
        assert_string_equal(l[1].region, "gpu1");
        assert_int_equal(l[1].kind, DMEM_VALUE_MAX);
        assert_string_equal(l[2].region, "nvidia/0000:3b:00.0/vidmem");
        assert_int_equal(l[2].kind, DMEM_VALUE_PERCENT);
        assert_int_equal(l[2].permyriad, 5000);
        /* An empty write, or white space only, sets nothing. */
        assert_int_equal(parse("", l, NULL), 0);
        assert_int_equal(parse("\n \n\t\n", l, NULL), 0);
        assert_int_equal(dmem_limit_parse("a 1\nb 2\nc 3", l, 2, NULL), -E2BIG);
}

static void test_bad_lines_refuse_the_whole_write(void **state) {
        unsigned line = 0;
        DmemLimit l[4];

        (void) state;
        /* A name alone: the kernel's "!options || !*options". */
        assert_int_equal(parse("gpu0", l, &line), -EINVAL);
        assert_int_equal(line, 1);
        assert_int_equal(parse("gpu0   ", l, NULL), -EINVAL);
        /* One separator only: the rest is the value, and " 8G" is not one. */
        assert_int_equal(parse("gpu0  8G", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 \t8G", l, NULL), -EINVAL);
        /* A bad size, anywhere in the write: line 2 is named. */
        assert_int_equal(parse("gpu0 1G\ngpu1 lots\n", l, &line), -EINVAL);
        assert_int_equal(line, 2);
        assert_int_equal(parse("gpu0 1.5G", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 -1", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 8GB", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 infinity", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 1 2", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 99999999999999999999", l, NULL), -EINVAL);
        /* Shares: more than none and at most all, two decimals at most. */
        assert_int_equal(parse("gpu0 0%", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 101%", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 12.345%", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 %", l, NULL), -EINVAL);
        assert_int_equal(parse("gpu0 5.%", l, NULL), -EINVAL);
        {
                char name[80];

                memset(name, 'a', 64);
                strcpy(name + 64, " 1G");
                assert_int_equal(parse(name, l, NULL), -ENAMETOOLONG);
        }
}

static void test_shares_of_the_capacity(void **state) {
        DmemLimit l[4];
        uint64_t v;

        (void) state;
        assert_int_equal(parse("gpu0 12.5%", l, NULL), 1);
        assert_int_equal(l[0].permyriad, 1250);
        assert_int_equal(dmem_limit_bytes(&l[0], 80 * GiB, &v), 0);
        assert_true(v == 10 * GiB);
        assert_int_equal(parse("gpu0 100%", l, NULL), 1);
        assert_int_equal(dmem_limit_bytes(&l[0], 80 * GiB, &v), 0);
        assert_true(v == 80 * GiB);
        /* Rounded down: a third of 10 bytes is 3. */
        assert_int_equal(parse("gpu0 33.33%", l, NULL), 1);
        assert_int_equal(dmem_limit_bytes(&l[0], 10, &v), 0);
        assert_true(v == 3);
        /* A share of an unlimited region means nothing. */
        assert_int_equal(dmem_limit_bytes(&l[0], UINT64_MAX, &v), -EINVAL);
        assert_int_equal(parse("gpu0 max", l, NULL), 1);
        assert_int_equal(dmem_limit_bytes(&l[0], UINT64_MAX, &v), 0);
        assert_true(v == UINT64_MAX);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_region_as_the_kernel_takes_it),
                cmocka_unit_test(test_several_regions_in_one_write),
                cmocka_unit_test(test_bad_lines_refuse_the_whole_write),
                cmocka_unit_test(test_shares_of_the_capacity),
        };

        return cmocka_run_group_tests_name("common-dmem-limit", tests, NULL, NULL);
}
