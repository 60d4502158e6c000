/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The journal (journal.c): the state file plus the journal's
 * batches give back exactly the tree the changes made, whatever the
 * changes (a seeded random walk of creates, removes, limits and kept
 * charges, checked against the core's own state after every batch); a
 * batch cut anywhere replays what came before; a damaged batch stops the
 * replay there; an orphan a batch's read skew left is dropped until a
 * later batch brings its parent back.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/charge.h"
#include "macro.h"
#include "core/core.h"
#include "core/group.h"
#include "state/persist.h"

#define DEPTH 8
#define GROUPS 4096

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

/* The state of @core, as text. */
static Text state_of(MemCore *core) {
        Text t = {};

        assert_int_equal(persist_format(core, &t.p, &t.n), 0);
        return t;
}

/* Does the state @state with @journal replay to what @want formats to? */
static void assert_replays_to(const Text *state, const Text *journal, MemCore *want) {
        char *error = NULL;
        Text expect = state_of(want);
        int r;

        r = persist_journal_check(state->p, state->n, journal->p, journal->n, DEPTH, GROUPS, &error);
        if (r < 0)
                fail_msg("replay failed: %s", error ? error : "?");
        free(error);
        assert_int_equal(r, (int) core_group_count(want));
        free(expect.p);
}

static MemCore *new_core(void) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core;

        cc.max_depth = DEPTH;
        cc.max_groups = GROUPS;
        assert_int_equal(core_new(&cc, &core), 0);
        assert_int_equal(core_thread_register(core), 0);
        return core;
}

static void free_core(MemCore *core) {
        core_thread_unregister(core);
        core_free(core);
}

static int line_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sort the group lines of the state text @t in place, the header first, the
 * trailer dropped (its hash depends on the order). Return: the new length. */
static size_t sort_lines(char *t, size_t n) {
        char *copy = strndup(t, n), *lines[GROUPS + 2], *save = NULL, *l;
        size_t k = 0, off = 0;

        assert_non_null(copy);
        for (l = strtok_r(copy, "\n", &save); l && k < GROUPS + 2; l = strtok_r(NULL, "\n", &save))
                lines[k++] = l;
        assert_true(k >= 2);
        qsort(lines + 1, k - 2, sizeof(char *), line_cmp);
        for (size_t i = 0; i + 1 < k; i++)
                off += (size_t) sprintf(t + off, "%s\n", lines[i]);
        free(copy);
        return off;
}

/* Replay of the journal over the first state, formatted: must equal the
 * core's state byte for byte (the same check restore makes, and more). */
static void assert_same_state(const Text *state, const Text *journal, MemCore *core) {
        char dir[] = "/tmp/test-journal-XXXXXX", path[64], *got = NULL;
        Text want = state_of(core);
        MemCore *fresh;
        size_t n;
        FILE *f;

        /* A thread is registered with one core at a time. */
        core_thread_unregister(core);
        fresh = new_core();
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/state", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fwrite(state->p, 1, state->n, f);
        fclose(f);
        snprintf(path, sizeof(path), "%s/journal", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fwrite(journal->p, 1, journal->n, f);
        fclose(f);
        assert_int_equal(persist_restore(fresh, dir), 0);
        assert_int_equal(persist_format(fresh, &got, &n), 0);
        /* The same groups with the same fields, whatever order the walks took. */
        n = sort_lines(got, n);
        want.n = sort_lines(want.p, want.n);
        if (n != want.n || memcmp(got, want.p, n) != 0)
                fail_msg("restored:\n%.*s\nwanted:\n%.*s\njournal:\n%.*s", (int) n, got, (int) want.n, want.p,
                         (int) MIN(journal->n, (size_t) 3000), journal->p);
        free(got);
        free(want.p);
        free_core(fresh);
        assert_int_equal(core_thread_register(core), 0);
        snprintf(path, sizeof(path), "rm -rf '%s'", dir);
        assert_int_equal(system(path), 0);
}

static void test_random_changes_replay_exactly(void **state) {
        MemCore *core = new_core();
        Text start, journal = {};
        char paths[64][32];
        unsigned seed = 12345;

        (void) state;
        start = state_of(core);
        append(&journal, "memacctd-journal 1\n", 19);
        for (int batch = 0; batch < 200; batch++) {
                const char *changed[8];
                size_t n = 0;

                for (int k = 0; k < 1 + (int) (rand_r(&seed) % 8); k++) {
                        char *p = paths[(batch * 8 + k) % 64];
                        unsigned a = rand_r(&seed) % 6, b = rand_r(&seed) % 4;
                        MemGroup *g = NULL;

                        if (rand_r(&seed) % 2)
                                snprintf(p, 32, "/g%u", a);
                        else
                                snprintf(p, 32, "/g%u/h%u", a, b);
                        switch (rand_r(&seed) % 4) {
                        case 0:
                                (void) group_create(core, p, rand_r(&seed) % 3 == 0 ? 1000 : 0);
                                break;
                        case 1:
                                (void) group_remove(core, p);
                                break;
                        case 2:
                                if (group_get(core, p, &g) >= 0) {
                                        MemLimits l = { .set = MEM_LIMIT_MAX, .max = (rand_r(&seed) % 100) << 20 };

                                        (void) group_set_limits(g, &l, true);
                                        group_unref(g);
                                }
                                break;
                        default:
                                if (group_get(core, p, &g) >= 0) {
                                        MemChargeResult res = {};

                                        (void) group_charge_kept(core, g, 4096, MEM_STAT_ANON,
                                                                 MEM_CHARGE_FORCE | MEM_CHARGE_NO_OOM, &res);
                                        charge_result_done(&res);
                                        group_unref(g);
                                }
                        }
                        changed[n++] = p;
                }
                append_batch(&journal, core, changed, n);
                if (batch % 20 == 19) {
                        assert_replays_to(&start, &journal, core);
                        assert_same_state(&start, &journal, core);
                }
        }
        free(start.p);
        free(journal.p);
        free_core(core);
}

static void test_a_batch_cut_anywhere_replays_what_came_before(void **state) {
        MemCore *core = new_core();
        const char *a[] = { "/a" }, *b[] = { "/a/b" };
        Text start = state_of(core), journal = {}, cut;
        size_t first_end;

        (void) state;
        append(&journal, "memacctd-journal 1\n", 19);
        assert_int_equal(group_create(core, "/a", 0), 0);
        append_batch(&journal, core, a, 1);
        first_end = journal.n;
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        append_batch(&journal, core, b, 1);
        for (size_t n = first_end; n < journal.n; n++) {
                char *error = NULL;

                /* The first batch's /a, with the root. */
                cut = (Text) { .p = journal.p, .n = n };
                assert_int_equal(persist_journal_check(start.p, start.n, cut.p, cut.n, DEPTH, GROUPS, &error), 2);
                free(error);
        }
        assert_replays_to(&start, &journal, core);
        free(start.p);
        free(journal.p);
        free_core(core);
}

static void test_a_damaged_batch_stops_the_replay(void **state) {
        MemCore *core = new_core();
        const char *a[] = { "/a" }, *b[] = { "/b" };
        Text start = state_of(core), journal = {};
        char *error = NULL, *hit;

        (void) state;
        append(&journal, "memacctd-journal 1\n", 19);
        assert_int_equal(group_create(core, "/a", 0), 0);
        append_batch(&journal, core, a, 1);
        assert_int_equal(group_create(core, "/b", 0), 0);
        append_batch(&journal, core, b, 1);
        /* One byte of the first batch: its hash catches it, and nothing after it is used. */
        hit = strstr(journal.p, "set /a owner=0");
        assert_non_null(hit);
        hit[5] = 'z';
        assert_int_equal(persist_journal_check(start.p, start.n, journal.p, journal.n, DEPTH, GROUPS, &error), 1);
        free(error);
        free(start.p);
        free(journal.p);
        free_core(core);
}

static void test_a_journal_record_carries_the_transient_mark(void **state) {
        static const char *const paths[] = { "/t", "/o" };
        MemCore *core = new_core();
        Text start = state_of(core), journal = {};
        MemGroup *g = NULL;

        (void) state;
        assert_int_equal(group_create(core, "/t", 1000), 0);
        assert_int_equal(group_create(core, "/o", 1000), 0);
        assert_int_equal(group_get(core, "/t", &g), 0);
        atomic_store(&g->transient, true);
        group_unref(g);
        append(&journal, "memacctd-journal 1\n", 19);
        append_batch(&journal, core, paths, 2);
        assert_non_null(strstr(journal.p, "set /t owner=1000 max=max high=max low=0 min=0 transient=1\n"));
        assert_non_null(strstr(journal.p, "set /o owner=1000 max=max high=max low=0 min=0\n"));
        /* Replayed and restored, the mark is where it was (formatted the same). */
        assert_same_state(&start, &journal, core);
        free(start.p);
        free(journal.p);
        free_core(core);
}

static void test_an_orphan_is_dropped_until_its_parent_comes_back(void **state) {
        MemCore *core = new_core();
        Text start = state_of(core), journal = {};
        static const char text[] =
                "set /p owner=0 max=max high=max low=0 min=0\n"
                "set /p/c owner=0 max=max high=max low=0 min=0\n"
                "set /q owner=0 max=1 high=max low=0 min=0\n";
        /* Read skew: /p read gone, then /p and /p/c made again before
         * /p/c was read. */
        static const char skew[] = "del /p\n"
                                   "set /p/c owner=0 max=max high=max low=0 min=0\n";
        static const char back[] = "set /p owner=0 max=max high=max low=0 min=0\n";
        char line[128];

        (void) state;
        append(&journal, "memacctd-journal 1\n", 19);
        /* Hand-made batches: the commit line is the writer's, so make it. */
        for (int i = 0; i < 3; i++) {
                const char *b = i == 0 ? text : i == 1 ? skew : back;
                size_t records = 0;
                uint64_t h = UINT64_C(0xcbf29ce484222325);

                for (const char *p = b; *p; p++) {
                        records += *p == '\n';
                        h = (h ^ (uint8_t) *p) * UINT64_C(0x100000001b3);
                }
                append(&journal, b, strlen(b));
                snprintf(line, sizeof(line), "commit %zu fnv1a64=%016llx\n", records, (unsigned long long) h);
                append(&journal, line, strlen(line));
                if (i == 1)
                        /* /p/c without its parent is dropped: /, /q. */
                        assert_int_equal(persist_journal_check(start.p, start.n, journal.p, journal.n, DEPTH,
                                                               GROUPS, NULL),
                                         2);
        }
        /* /p back, and the child the last batch said exists. */
        assert_int_equal(persist_journal_check(start.p, start.n, journal.p, journal.n, DEPTH, GROUPS, NULL), 4);
        free(start.p);
        free(journal.p);
        free_core(core);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_random_changes_replay_exactly),
                cmocka_unit_test(test_a_batch_cut_anywhere_replays_what_came_before),
                cmocka_unit_test(test_a_damaged_batch_stops_the_replay),
                cmocka_unit_test(test_an_orphan_is_dropped_until_its_parent_comes_back),
                cmocka_unit_test(test_a_journal_record_carries_the_transient_mark),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
