/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions in the state file (state-regions.c): a core with
 * regions, limits and kept charges in them saves and restores into a
 * fresh core with the same regions and the same figures in every group;
 * a state from before regions still loads, and one without regions is
 * still written as such; every malformed region line or field is refused
 * with its line, and a refused state applies nothing.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/charge.h"
#include "core/core.h"
#include "core/counter.h"
#include "core/group.h"
#include "core/region.h"
#include "region-test.h"
#include "state/persist.h"

/* ---- a tree with regions ---- */

static const char *const tree_paths[] = { "/", "/a", "/a/b", "/d", "/d/x", "/z" };

static void build_tree(MemCore *core) {
        MemGroup *g;
        MemChargeResult res = {};

        rt_use(core);
        assert_true(core_region_add(core, GPU, 8 * GIB) > 0);
        assert_true(core_region_add(core, VRAM, UINT64_MAX) > 0);
        assert_true(core_region_add(core, DOTS, 1 * GIB) > 0);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        assert_int_equal(group_create(core, "/d", 1000), 0); /* a delegation root */
        assert_int_equal(group_create(core, "/d/x", 1000), 0);
        assert_int_equal(group_create(core, "/z", 0), 0);

        assert_int_equal(rt_set_limits(core, "/a", GPU,
                                    (MemLimits) { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN,
                                                  .max = 4 * GIB, .high = 3 * GIB, .low = 1 * GIB, .min = 512 * MIB }),
                         0);
        /* The root takes everything but a max, which is the capacity. */
        assert_int_equal(rt_set_limits(core, "/", GPU, (MemLimits) { .set = MEM_LIMIT_HIGH, .high = 7 * GIB }), 0);
        assert_int_equal(rt_set_limits(core, "/d", DOTS, (MemLimits) { .set = MEM_LIMIT_MAX, .max = 256 * MIB }), 0);
        assert_int_equal(rt_kept(core, "/a/b", GPU, 64 * MIB, 0), 0);
        assert_int_equal(rt_kept(core, "/a/b", VRAM, 1 * MIB, 0), 0);
        assert_int_equal(rt_kept(core, "/d", GPU, 6 * MIB, 0), 0);
        assert_int_equal(rt_kept(core, "/d", GPU, 4 * MIB, MEM_CHARGE_DELEGATOR), 0);
        /* Kept above a max lowered after it (forced, as a dmem.max write is). */
        assert_int_equal(rt_kept(core, "/z", VRAM, 5 * MIB, 0), 0);
        assert_int_equal(rt_set_limits(core, "/z", VRAM, (MemLimits) { .set = MEM_LIMIT_MAX, .max = 1 * MIB }), 1);
        /* Memory's own, beside them. */
        g = rt_group(core, "/a/b");
        assert_int_equal(group_charge_kept(core, g, 12 * KIB, MEM_STAT_FILE, 0, &res), 0);
        charge_result_done(&res);
        group_unref(g);
}

static void test_round_trip_restores_regions_limits_and_kept(void **state) {
        MemCore *core = rt_core_new(), *fresh;
        char *dir = rt_dir_new();
        MemRegionInfo ri;

        (void) state;
        build_tree(core);
        assert_int_equal(persist_save(core, dir, -1, false, NULL, NULL), 0);
        fresh = rt_core_new();
        assert_int_equal(persist_restore(fresh, dir), 0);
        assert_int_equal(core_group_count(fresh), core_group_count(core));
        rt_assert_same_region_list(core, fresh);
        for (size_t i = 0; i < sizeof(tree_paths) / sizeof(tree_paths[0]); i++)
                rt_assert_same_regions(core, fresh, tree_paths[i]);

        /* The figures themselves, from the formulas. */
        ri = rt_info(fresh, "/", GPU);
        assert_true(ri.capacity == 8 * GIB && ri.max == 8 * GIB && ri.high == 7 * GIB);
        assert_true(ri.current == 64 * MIB + 6 * MIB + 4 * MIB);
        ri = rt_info(fresh, "/a", GPU);
        assert_true(ri.max == 4 * GIB && ri.high == 3 * GIB && ri.low == 1 * GIB && ri.min == 512 * MIB);
        assert_true(ri.current == 64 * MIB && ri.kept == 0);
        ri = rt_info(fresh, "/d", GPU);
        assert_true(ri.kept == 10 * MIB);
        assert_true(rt_delegator(fresh, "/d", GPU) == 4 * MIB);
        ri = rt_info(fresh, "/z", VRAM);
        assert_true(ri.kept == 5 * MIB && ri.current == 5 * MIB && ri.max == 1 * MIB);
        ri = rt_info(fresh, "/d", DOTS);
        assert_true(ri.max == 256 * MIB);
        rt_core_free(fresh);
        rt_core_free(core);
        rt_dir_free(dir);
}

static void test_the_text_names_regions_once_and_fields_by_group(void **state) {
        MemCore *core = rt_core_new();
        char *text, *line, want[128];
        size_t n;

        (void) state;
        build_tree(core);
        assert_int_equal(persist_format(core, &text, &n), 0);
        assert_int_equal(strncmp(text, "memacctd-state 2\n", 17), 0);
        snprintf(want, sizeof(want), "\nregion " GPU " capacity=%llu\n", 8 * GIB);
        assert_non_null(strstr(text, want));
        assert_non_null(strstr(text, "\nregion " VRAM " capacity=max\n"));
        /* Region lines lead, before the first group. */
        assert_true(strstr(text, "\nregion " DOTS " ") < strstr(text, "\ngroup / "));
        /* The root's max is its capacity, never a field. */
        line = strstr(text, "\ngroup / ");
        assert_non_null(line);
        *strchr(line + 1, '\n') = 0;
        snprintf(want, sizeof(want), " dmem:" GPU ".high=%llu", 7 * GIB);
        assert_non_null(strstr(line, want));
        assert_null(strstr(line, ".max="));
        line[strlen(line)] = '\n';
        snprintf(want, sizeof(want), " dmem:" GPU ".kept=%llu dmem:" GPU ".kept-delegator=%llu", 10 * MIB, 4 * MIB);
        assert_non_null(strstr(strstr(text, "\ngroup /d "), want));
        snprintf(want, sizeof(want), " dmem:" DOTS ".max=%llu", 256 * MIB);
        assert_non_null(strstr(strstr(text, "\ngroup /d "), want));
        /* A group with nothing set in any region has no field. */
        line = strstr(text, "\ngroup /d/x ");
        assert_non_null(line);
        assert_true(strstr(line, "dmem:") == NULL || strstr(line, "dmem:") > strchr(line + 1, '\n'));
        assert_int_equal(persist_check(text, n, 32, 65536, NULL), 6);
        free(text);
        rt_core_free(core);
}

static void test_a_state_without_regions_stays_version_1(void **state) {
        static const char old[] = "memacctd-state 1\n"
                                  "group / owner=0 max=max high=max low=0 min=0\n"
                                  "group /a owner=7 max=4096 high=max low=0 min=0 kept.file=8192\n";
        MemCore *core = rt_core_new(), *fresh;
        char *text, trailer[64];
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        size_t n;

        (void) state;
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(persist_format(core, &text, &n), 0);
        assert_int_equal(strncmp(text, "memacctd-state 1\n", 17), 0);
        assert_null(strstr(text, "region"));
        assert_null(strstr(text, "dmem:"));
        free(text);
        rt_core_free(core);

        /* A file a daemon from before regions wrote loads as it did. */
        for (size_t i = 0; i < sizeof(old) - 1; i++)
                h = (h ^ (uint8_t) old[i]) * UINT64_C(0x100000001b3);
        snprintf(trailer, sizeof(trailer), "end 2 fnv1a64=%016llx\n", (unsigned long long) h);
        assert_non_null(text = malloc(sizeof(old) + strlen(trailer)));
        n = (size_t) sprintf(text, "%s%s", old, trailer);
        fresh = rt_restored(text, n, NULL, 0);
        assert_int_equal(core_group_count(fresh), 2);
        {
                MemRegionDesc d[MEM_REGION_MAX];
                MemGroup *g = rt_group(fresh, "/a");
                MemGroupInfo gi;

                assert_int_equal(core_region_list(fresh, d, MEM_REGION_MAX), 1); /* memory alone */
                group_read(fresh, g, NULL, true, &gi);
                assert_true(gi.kept[MEM_STAT_FILE] == 8192 && gi.max == 4096 && gi.owner == 7);
                group_unref(g);
        }
        free(text);
        rt_core_free(fresh);
}

/* ---- the validator ---- */

/* @body framed as a version @version state file, with a correct trailer. */
static char *framed(int version, const char *body, size_t *ret_size) {
        size_t groups = 0, n, size = strlen(body) + 128;
        const char *p = body;
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        char *text = malloc(size);

        assert_non_null(text);
        /* Every line but the leading region lines counts, as the check counts them. */
        while (strncmp(p, "region ", 7) == 0)
                p = strchr(p, '\n') + 1;
        for (; *p; p++)
                groups += *p == '\n';
        n = (size_t) snprintf(text, size, "memacctd-state %d\n%s", version, body);
        for (size_t k = 0; k < n; k++)
                h = (h ^ (uint8_t) text[k]) * UINT64_C(0x100000001b3);
        n += (size_t) snprintf(text + n, size - n, "end %zu fnv1a64=%016llx\n", groups, (unsigned long long) h);
        *ret_size = n;
        return text;
}

#define ROOT "group / owner=0 max=max high=max low=0 min=0"
#define G(path, owner, fields) "group " path " owner=" #owner " max=max high=max low=0 min=0" fields "\n"
#define GPU_LINE "region gpu0 capacity=1073741824\n"
#define NAME63 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"

static void test_the_validator_refuses_every_bad_region_field(void **state) {
        static const struct {
                const char *body, *error; /* the error: "line N: words" */
        } bad[] = {
                /* region lines */
                { "region gpu0\n" ROOT "\n", "line 2: region without capacity=" },
                { "region gpu0 size=4\n" ROOT "\n", "line 2: unknown field 'size=4' of region gpu0" },
                { "region gpu0 capacity=1 capacity=2\n" ROOT "\n", "line 2: capacity given twice" },
                { "region gpu0 capacity=12Q\n" ROOT "\n", "line 2: bad capacity for region gpu0" },
                { "region gpu0 capacity=18446744073709551616\n" ROOT "\n", "line 2: bad capacity" },
                { "region gpu0 capacity=\n" ROOT "\n", "line 2: bad capacity" },
                { GPU_LINE "region gpu0 capacity=1\n" ROOT "\n", "line 3: region gpu0 given twice" },
                { "region memory capacity=1\n" ROOT "\n", "line 2: bad region name 'memory'" },
                { "region gpu#0 capacity=1\n" ROOT "\n", "line 2: bad region name 'gpu#0'" },
                { "region " NAME63 "n capacity=1\n" ROOT "\n", "line 2: bad region name" },
                { "region  capacity=1\n" ROOT "\n", "line 2: bad region name ''" },
                { ROOT "\nregion gpu0 capacity=1\n", "line 3: a region line after the groups" },
                /* fields on group lines */
                { ROOT " dmem:gpu0.high=1\n", "line 2: dmem:gpu0.high: no region line names region gpu0" },
                { GPU_LINE ROOT " dmem:gpu1.high=1\n", "line 3: dmem:gpu1.high: no region line names region gpu1" },
                { GPU_LINE ROOT " dmem:gpu0.peak=1\n", "line 3: unknown field 'dmem:gpu0.peak'" },
                { GPU_LINE ROOT " dmem:gpu0=1\n", "line 3: unknown field 'dmem:gpu0'" },
                { GPU_LINE ROOT " dmem:.high=1\n", "line 3: unknown field 'dmem:.high'" },
                { GPU_LINE ROOT " dmem:gpu0.high=1 dmem:gpu0.high=1\n", "line 3: dmem:gpu0.high given twice" },
                { GPU_LINE ROOT " dmem:gpu0.high=12Q\n", "line 3: bad value for dmem:gpu0.high" },
                { GPU_LINE ROOT " dmem:gpu0.low=-1\n", "line 3: bad value for dmem:gpu0.low" },
                { GPU_LINE ROOT " dmem:gpu0.kept=max\n", "line 3: bad byte count for dmem:gpu0.kept" },
                { GPU_LINE ROOT " dmem:gpu0.kept=4611686018427387905\n", "line 3: bad byte count for dmem:gpu0.kept" },
                { GPU_LINE ROOT " dmem:gpu0.max=4096\n",
                  "line 3: dmem:gpu0.max on /: the root's max in a region is its capacity" },
                { GPU_LINE ROOT "\n" G("/a", 7, " dmem:gpu0.kept=4096 dmem:gpu0.kept-delegator=8192"),
                  "line 4: dmem:gpu0.kept-delegator is more than dmem:gpu0.kept" },
                { GPU_LINE ROOT "\n" G("/a", 0, " dmem:gpu0.kept=8192 dmem:gpu0.kept-delegator=4096"),
                  "line 4: dmem:gpu0.kept-delegator on a group that is not a delegation root" },
                { GPU_LINE ROOT "\n" G("/a", 7, "") G("/a/b", 7, " dmem:gpu0.kept=8192 dmem:gpu0.kept-delegator=4096"),
                  "line 5: dmem:gpu0.kept-delegator on a group that is not a delegation root" },
                /* Each fits a counter, their sum does not: the root's would overflow at restore. */
                { GPU_LINE ROOT "\n" G("/a", 0, " dmem:gpu0.kept=4611686018427387904") G("/b", 0, " dmem:gpu0.kept=1"),
                  "line 5: the kept charges in region gpu0 add up to more than 4611686018427387904 bytes" },
                { ROOT "\n" G("/a", 0, " kept.anon=4611686018427387904") G("/b", 0, " kept.file=1"),
                  "line 4: the kept charges add up to more than" },
        };
        char body[4096], *text, *error;
        size_t n;

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                text = framed(2, bad[i].body, &n);
                error = NULL;
                if (persist_check(text, n, 32, 65536, &error) != -EBADMSG || !error ||
                    strncmp(error, bad[i].error, strlen(bad[i].error)) != 0)
                        fail_msg("case %zu: got '%s', want '%s' from:\n%s", i, error ? error : "(accepted)",
                                 bad[i].error, text);
                free(error);
                free(text);
        }

        /* A region line in a file that says version 1. */
        text = framed(1, GPU_LINE ROOT "\n", &n);
        assert_int_equal(persist_check(text, n, 32, 65536, &error), -EBADMSG);
        assert_string_equal(error, "line 2: a region line in a version 1 state");
        free(error);
        free(text);

        /* One region more than a core holds. */
        n = 0;
        for (int i = 0; i < MEM_REGION_MAX; i++)
                n += (size_t) snprintf(body + n, sizeof(body) - n, "region r%d capacity=max\n", i);
        snprintf(body + n, sizeof(body) - n, ROOT "\n");
        text = framed(2, body, &n);
        assert_int_equal(persist_check(text, n, 32, 65536, &error), -EBADMSG);
        snprintf(body, sizeof(body), "line %d: more than %d regions", MEM_REGION_MAX + 1, MEM_REGION_MAX - 1);
        assert_string_equal(error, body);
        free(error);
        free(text);
}

static void test_the_validator_takes_what_a_daemon_writes_by_hand(void **state) {
        static const char *const good[] = {
                /* A name with dots: the key splits at its last one. */
                "region nv.0:a@b+c-d capacity=max\n" ROOT " dmem:nv.0:a@b+c-d.high=4096\n",
                /* Every field, in any order; a limit at its default given anyway. */
                GPU_LINE ROOT "\n" G("/a", 7, " dmem:gpu0.kept-delegator=4 dmem:gpu0.min=0 dmem:gpu0.kept=8 "
                                              "dmem:gpu0.max=max dmem:gpu0.high=100 dmem:gpu0.low=1"),
                /* A 63-byte name, a region nobody uses. */
                "region " NAME63 " capacity=0\n" GPU_LINE ROOT "\n" G("/a", 0, ""),
        };
        size_t n;

        (void) state;
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                char *error = NULL, *text = framed(2, good[i], &n);
                int want = i == 0 ? 1 : 2, r = persist_check(text, n, 32, 65536, &error);
                MemCore *fresh;

                if (r != want)
                        fail_msg("case %zu: %d (%s)", i, r, error ? error : "");
                fresh = rt_restored(text, n, NULL, 0);
                assert_int_equal(core_group_count(fresh), want);
                if (i == 0)
                        assert_true(rt_info(fresh, "/", DOTS).high == 4096);
                if (i == 1) {
                        MemRegionInfo ri = rt_info(fresh, "/a", "gpu0");

                        assert_true(ri.kept == 8 && ri.high == 100 && ri.low == 1 && ri.max == UINT64_MAX);
                        assert_true(rt_delegator(fresh, "/a", "gpu0") == 4);
                }
                rt_core_free(fresh);
                free(text);
        }
}

static void test_a_refused_state_applies_nothing(void **state) {
        MemRegionDesc d[MEM_REGION_MAX];
        char *dir = rt_dir_new(), *text;
        MemCore *fresh;
        size_t n;

        (void) state;
        /* Good up to its last line, which names a region it lacks. */
        text = framed(2, GPU_LINE ROOT " dmem:gpu0.high=4096\n" G("/a", 0, " dmem:gpu0.kept=4096")
                                 G("/b", 0, " dmem:gpu1.kept=4096"), &n);
        rt_file_write(dir, "state", text, n);
        fresh = rt_core_new();
        assert_int_equal(persist_restore(fresh, dir), 0);
        assert_int_equal(core_group_count(fresh), 1);
        assert_int_equal(core_region_list(fresh, d, MEM_REGION_MAX), 1);
        assert_true(rt_file_exists(dir, "state.bad"));
        rt_core_free(fresh);
        free(text);
        rt_dir_free(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip_restores_regions_limits_and_kept),
                cmocka_unit_test(test_the_text_names_regions_once_and_fields_by_group),
                cmocka_unit_test(test_a_state_without_regions_stays_version_1),
                cmocka_unit_test(test_the_validator_refuses_every_bad_region_field),
                cmocka_unit_test(test_the_validator_takes_what_a_daemon_writes_by_hand),
                cmocka_unit_test(test_a_refused_state_applies_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
