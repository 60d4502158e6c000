/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions in the journal (journal.c): a batch names every
 * region; a change in a region registered after the state replays; a
 * removal, or a registration again with another capacity, takes the
 * groups' parts as the core did; a batch with a bad region record is not
 * applied; and a seeded random walk over regions, limits and kept charges
 * replays to exactly the core's own state.
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
#include "core/group.h"
#include "core/region.h"
#include "region-test.h"
#include "state/persist.h"

/* ---- the journal ---- */

typedef struct Text {
        char *p;
        size_t n;
} Text;

static void append(Text *t, const char *s, size_t n) {
        t->p = realloc(t->p, t->n + n + 1);
        assert_non_null(t->p);
        memcpy(t->p + t->n, s, n);
        t->n += n;
        t->p[t->n] = 0;
}

static void append_batch(Text *journal, MemCore *core, const char *const *paths, size_t n) {
        char *text;
        size_t size;

        assert_int_equal(persist_journal_batch(core, paths, n, &text, &size), 0);
        append(journal, text, size);
        free(text);
}

static Text state_of(MemCore *core) {
        Text t = {};

        assert_int_equal(persist_format(core, &t.p, &t.n), 0);
        return t;
}

static int line_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The lines of a state text sorted, the trailer dropped: walks may differ in order. */
static char *sorted(const char *t, size_t n) {
        char *copy = strndup(t, n), *lines[4096], *save = NULL, *out = malloc(n + 1);
        size_t k = 0, off = 0;

        assert_non_null(copy);
        assert_non_null(out);
        for (char *l = strtok_r(copy, "\n", &save); l && k < 4096; l = strtok_r(NULL, "\n", &save))
                lines[k++] = l;
        assert_true(k >= 2);
        qsort(lines, k - 1, sizeof(char *), line_cmp);
        for (size_t i = 0; i + 1 < k; i++)
                off += (size_t) sprintf(out + off, "%s\n", lines[i]);
        free(copy);
        return out;
}

/* @state with @journal restores to what @core formats to, line for line. */
static void assert_replays_to_core(const Text *state, const Text *journal, MemCore *core) {
        Text want = state_of(core), got;
        char *a, *b;
        MemCore *fresh = rt_restored(state->p, state->n, journal->p, journal->n);

        got = state_of(fresh);
        a = sorted(got.p, got.n);
        b = sorted(want.p, want.n);
        if (strcmp(a, b) != 0)
                fail_msg("restored:\n%s\nwanted:\n%s\njournal:\n%.*s", a, b, (int) MIN(journal->n, (size_t) 4000),
                         journal->p);
        free(a);
        free(b);
        free(got.p);
        free(want.p);
        rt_core_free(fresh);
        rt_use(core);
}

static void test_a_change_in_a_region_registered_after_the_state_replays(void **state) {
        static const char *const a[] = { "/a" };
        MemCore *core = rt_core_new(), *fresh;
        Text start, journal = {};
        char want[128];

        (void) state;
        assert_int_equal(group_create(core, "/a", 0), 0);
        start = state_of(core); /* no region yet */
        append(&journal, "memacctd-journal 1\n", 19);
        /* Registered, and charged before the registration's own whole
         * save: the batch that saves the charge must carry the region. */
        assert_true(core_region_add(core, GPU, 2 * GIB) > 0);
        assert_int_equal(rt_kept(core, "/a", GPU, 1 * MIB, 0), 0);
        append_batch(&journal, core, a, 1);
        snprintf(want, sizeof(want), "\nregion " GPU " capacity=%llu\nset /a ", 2 * GIB);
        if (!strstr(journal.p, want))
                fail_msg("no '%s' in:\n%s", want, journal.p);
        snprintf(want, sizeof(want), "set /a owner=0 max=max high=max low=0 min=0 dmem:" GPU ".kept=%llu\n", 1 * MIB);
        if (!strstr(journal.p, want))
                fail_msg("no '%s' in:\n%s", want, journal.p);
        /* commit: the region and /a. */
        assert_non_null(strstr(journal.p, "commit 2 "));

        fresh = rt_restored(start.p, start.n, journal.p, journal.n);
        assert_true(rt_info(fresh, "/a", GPU).kept == 1 * MIB);
        assert_true(rt_info(fresh, "/", GPU).capacity == 2 * GIB);
        rt_core_free(fresh);
        rt_use(core);
        assert_replays_to_core(&start, &journal, core);
        free(start.p);
        free(journal.p);
        rt_core_free(core);
}

static void test_a_removed_or_re_registered_region_takes_the_groups_parts(void **state) {
        static const char *const b[] = { "/b" };
        MemCore *core = rt_core_new(), *fresh;
        Text start, journal = {};
        MemRegionDesc d[MEM_REGION_MAX];

        (void) state;
        assert_true(core_region_add(core, GPU, 1 * GIB) > 0);
        assert_true(core_region_add(core, VRAM, 1 * GIB) > 0);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/b", 0), 0);
        assert_int_equal(rt_set_limits(core, "/a", GPU, (MemLimits) { .set = MEM_LIMIT_MAX, .max = 512 * MIB }), 0);
        assert_int_equal(rt_set_limits(core, "/a", VRAM, (MemLimits) { .set = MEM_LIMIT_LOW, .low = 1 * MIB }), 0);
        start = state_of(core);
        assert_non_null(strstr(start.p, "dmem:" GPU ".max="));

        /* gpu0 removed; vram0 removed and registered again, larger. A
         * batch about /b alone must take /a's parts in both. */
        assert_int_equal(core_region_remove(core, GPU), 0);
        assert_int_equal(core_region_remove(core, VRAM), 0);
        assert_true(core_region_add(core, VRAM, 2 * GIB) > 0);
        assert_int_equal(rt_set_limits(core, "/b", VRAM, (MemLimits) { .set = MEM_LIMIT_HIGH, .high = 4 * MIB }), 0);
        append(&journal, "memacctd-journal 1\n", 19);
        append_batch(&journal, core, b, 1);
        assert_null(strstr(journal.p, "region " GPU));

        fresh = rt_restored(start.p, start.n, journal.p, journal.n);
        assert_int_equal(core_region_list(fresh, d, MEM_REGION_MAX), 2);
        assert_string_equal(d[1].name, VRAM);
        assert_true(d[1].capacity == 2 * GIB);
        assert_true(rt_info(fresh, "/a", VRAM).low == 0);
        assert_true(rt_info(fresh, "/b", VRAM).high == 4 * MIB);
        rt_core_free(fresh);
        rt_use(core);
        assert_replays_to_core(&start, &journal, core);
        free(start.p);
        free(journal.p);
        rt_core_free(core);
}

/* A hand-made batch: @records and the commit line the writer would give them. */
static void append_made_batch(Text *journal, const char *records) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        size_t n = 0;
        char line[96];

        for (const char *p = records; *p; p++) {
                n += *p == '\n';
                h = (h ^ (uint8_t) *p) * UINT64_C(0x100000001b3);
        }
        append(journal, records, strlen(records));
        snprintf(line, sizeof(line), "commit %zu fnv1a64=%016llx\n", n, (unsigned long long) h);
        append(journal, line, strlen(line));
}

static void test_a_batch_with_bad_region_records_stops_the_replay(void **state) {
        static const char *const batches[] = {
                /* a region record after a group's */
                "set /a owner=0 max=max high=max low=0 min=0\n"
                "region gpu0 capacity=max\n",
                /* a field naming a region the batch does not */
                "region gpu0 capacity=max\n"
                "set /a owner=0 max=max high=max low=0 min=0 dmem:gpu1.high=1\n",
                /* a region twice */
                "region gpu0 capacity=max\n"
                "region gpu0 capacity=1\n",
        };
        static const char *const errors[] = {
                "line 6: a region record after a group's",
                "line 6: dmem:gpu1.high: no region line names region gpu1",
                "line 6: region gpu0 given twice",
        };
        MemCore *core = rt_core_new();
        Text start = state_of(core);

        (void) state;
        for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
                Text journal = {};
                char *error = NULL;

                append(&journal, "memacctd-journal 1\n", 19);
                append_made_batch(&journal, "region gpu0 capacity=4096\n"
                                            "set /b owner=0 max=max high=max low=0 min=0 dmem:gpu0.high=1\n");
                append_made_batch(&journal, batches[i]);
                /* The first batch stands: /, /b; the damaged one is not applied. */
                assert_int_equal(persist_journal_check(start.p, start.n, journal.p, journal.n, 8, 64, &error), 2);
                assert_non_null(error);
                assert_string_equal(error, errors[i]);
                free(error);
                free(journal.p);
        }
        free(start.p);
        rt_core_free(core);
}

/* Give back every kept charge in the region @key of the random walk's groups. */
static void release_region(MemCore *core, int key) {
        for (unsigned a = 0; a < 4; a++)
                for (unsigned b = 0; b <= 3; b++) {
                        MemRegionInfo ri;
                        MemGroup *g = NULL;
                        char path[32];

                        if (b == 3)
                                snprintf(path, sizeof(path), "/g%u", a);
                        else
                                snprintf(path, sizeof(path), "/g%u/h%u", a, b);
                        if (group_get(core, path, &g) < 0)
                                continue;
                        if (region_read_one(core, g, key, NULL, &ri) >= 0 && ri.kept > 0)
                                assert_int_equal(region_uncharge_kept_as(core, g, key, ri.kept, false), 0);
                        group_unref(g);
                }
}

/* A random walk over regions and groups, each change in a batch of its own group, replayed exactly. */
static void test_random_region_changes_replay_exactly(void **state) {
        static const char *const names[] = { "r0", "r.1", "r:2" };
        MemCore *core = rt_core_new();
        Text start, journal = {};
        unsigned seed = 4242;
        uint64_t capacity = GIB;
        char path[32];

        (void) state;
        assert_true(core_region_add(core, names[0], capacity) > 0);
        start = state_of(core);
        append(&journal, "memacctd-journal 1\n", 19);
        for (int batch = 0; batch < 300; batch++) {
                const char *name = names[rand_r(&seed) % 3], *changed[1] = { path };
                unsigned a = rand_r(&seed) % 4, b = rand_r(&seed) % 3;
                int key = core_region_lookup(core, name);
                MemGroup *g = NULL;

                if (rand_r(&seed) % 3 == 0)
                        snprintf(path, sizeof(path), "/g%u", a);
                else
                        snprintf(path, sizeof(path), "/g%u/h%u", a, b);
                switch (rand_r(&seed) % 7) {
                case 0:
                        (void) group_create(core, path, 0);
                        break;
                case 1:
                        (void) group_remove(core, path);
                        break;
                case 2:
                        /* Never the same capacity twice: a region registered
                         * again as it was cannot be told from one kept. */
                        capacity += 4096;
                        (void) core_region_add(core, name, capacity);
                        break;
                case 3:
                        /* Emptied first, most times: a region in use is not removed. */
                        if (key > 0 && rand_r(&seed) % 4 != 0)
                                release_region(core, key);
                        (void) core_region_remove(core, name);
                        break;
                case 4:
                        if (key > 0 && group_get(core, path, &g) >= 0) {
                                MemLimits l = { .set = 1u << (rand_r(&seed) % 4), .max = (rand_r(&seed) % 64) * MIB };

                                l.high = l.low = l.min = l.max;
                                (void) region_set_limits(core, g, key, &l, true);
                        }
                        break;
                case 5:
                        if (key > 0 && group_get(core, path, &g) >= 0) {
                                MemChargeResult res = {};

                                (void) region_charge_kept(core, g, key, 4096, MEM_CHARGE_FORCE | MEM_CHARGE_NO_OOM,
                                                          &res);
                                charge_result_done(&res);
                        }
                        break;
                default:
                        if (key > 0 && group_get(core, path, &g) >= 0)
                                (void) region_uncharge_kept_as(core, g, key, 4096, false);
                }
                if (g)
                        group_unref(g);
                append_batch(&journal, core, changed, 1);
                if (batch % 25 == 24)
                        assert_replays_to_core(&start, &journal, core);
        }
        assert_non_null(strstr(journal.p, "dmem:"));
        free(start.p);
        free(journal.p);
        rt_core_free(core);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_change_in_a_region_registered_after_the_state_replays),
                cmocka_unit_test(test_a_removed_or_re_registered_region_takes_the_groups_parts),
                cmocka_unit_test(test_a_batch_with_bad_region_records_stops_the_replay),
                cmocka_unit_test(test_random_region_changes_replay_exactly),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
