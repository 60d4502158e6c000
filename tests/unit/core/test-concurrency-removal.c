/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Removal of groups racing their users (group.h).
 *
 * A lookup may find a group that a removal is unlinking: the reference it
 * takes keeps the memory, never the group, and kept charges that raced the
 * removal go with it. A removal refused (a session is attached) must leave
 * the group exactly as it was for everyone charging it meanwhile.
 *
 * Worker threads never call cmocka: they CHECK, and the main thread fails
 * the test after joining them.
 */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

/* ---- lookups race removal and re-creation of the same path ---------------- */

#define GET_USEC 1000000
#define NGETTERS 4

typedef struct GetTest {
        MemCore *core;
        uint64_t deadline;
        _Atomic bool done;
        unsigned long removes;
        _Atomic unsigned long gets, kept;
} GetTest;

static void *remover_main(void *arg) {
        GetTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && now_usec() < t->deadline) {
                int k = group_create(t->core, "/r", 0);

                CHECK(k == 0, "group_create(/r): %d", k);
                /* Only references and kept charges are in it: removal
                 * takes both (references keep the memory, not the group). */
                k = group_remove(t->core, "/r");
                CHECK(k == 0, "group_remove(/r): %d", k);
                t->removes++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *getter_main(void *arg) {
        GetTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && !atomic_load(&t->done); i++) {
                MemGroup *g;
                int k = group_get(t->core, "/r", &g);

                CHECK(k == 0 || k == -ENOENT, "group_get(/r): %d", k);
                if (k < 0)
                        continue;
                CHECK(atomic_load(&g->refs) >= 1, "group_get() returned a group with %u refs",
                      atomic_load(&g->refs));
                k = group_charge_kept(t->core, g, PAGE, MEM_STAT_FILE, 0, NULL);
                CHECK(k == 0 || k == -ENOENT, "group_charge_kept(/r): %d", k);
                if (k == 0)
                        atomic_fetch_add(&t->kept, 1);
                /* Run every queued free now: a group this thread still holds a
                 * reference to must not be among them. */
                if (i % 256 == 0)
                        urcu_memb_barrier();
                CHECK(strcmp(g->path, "/r") == 0 && atomic_load(&g->refs) >= 1,
                      "a referenced group was freed under its holder");
                group_unref(g);
                atomic_fetch_add(&t->gets, 1);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

/*
 * A lookup may find a group just before its removal unlinks it and drops
 * the tree's reference: the reference it then takes must not bring a
 * count of 0 back to life (the group is queued for freeing by then), and
 * kept charges that raced the removal must all be released with it.
 */
static void test_group_get_during_remove_never_revives_a_freed_group(void **state) {
        MemCore *core = *state;
        pthread_t remover, getters[NGETTERS];
        GetTest t = { .core = core };
        MemGroup *root = find_group(core, "/");
        MemGroupInfo info;

        assert_non_null(root);
        t.deadline = now_usec() + GET_USEC;
        for (unsigned i = 0; i < NGETTERS; i++)
                assert_int_equal(pthread_create(&getters[i], NULL, getter_main, &t), 0);
        assert_int_equal(pthread_create(&remover, NULL, remover_main, &t), 0);
        assert_int_equal(pthread_join(remover, NULL), 0);
        for (unsigned i = 0; i < NGETTERS; i++)
                assert_int_equal(pthread_join(getters[i], NULL), 0);
        assert_no_failures();
        print_message("%lu removals, %lu references taken, %lu kept charges\n", t.removes,
                      atomic_load(&t.gets), atomic_load(&t.kept));
        assert_true(t.removes > 0);
        assert_true(atomic_load(&t.gets) > 0);

        /* Every removal took its kept charges along. */
        urcu_memb_barrier();
        core_stats_flush(core, true);
        group_read(core, root, NULL, false, &info);
        assert_int_equal(info.current, 0);
        for (int it = 0; it < _MEM_STAT_MAX; it++)
                assert_int_equal(info.stat[it], 0);
        assert_int_equal(core_group_count(core), 1);
        group_unref(root);
}

/* ---- a refused removal must not disturb the group's users ----------------- */

#define REFUSE_USEC 500000
#define NKEEPERS 2

typedef struct RefuseTest {
        MemCore *core;
        MemGroup *g;
        uint64_t deadline;
        _Atomic bool done;
        unsigned long refusals;
        _Atomic unsigned long charges, enoent_charges;
        _Atomic int64_t kept; /* bytes the keepers hold, all items */
} RefuseTest;

static void *refuser_main(void *arg) {
        RefuseTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && now_usec() < t->deadline) {
                int k = group_remove(t->core, "/x");

                CHECK(k == -EBUSY, "group_remove(/x) with a session attached: %d", k);
                t->refusals++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *keeper_main(void *arg) {
        RefuseTest *t = arg;
        int64_t mine = 0;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && !atomic_load(&t->done)) {
                int k = group_charge_kept(t->core, t->g, PAGE, MEM_STAT_SHMEM, 0, NULL);

                /* "Being removed" may cover an attempt that is then refused. */
                CHECK(k == 0 || k == -ENOENT, "group_charge_kept(/x): %d", k);
                if (k == -ENOENT)
                        atomic_fetch_add(&t->enoent_charges, 1);
                if (k == 0) {
                        mine += PAGE;
                        atomic_fetch_add(&t->charges, 1);
                }
                if (mine == 0)
                        continue;
                /* The group is never removed: releasing what is kept in it
                 * cannot fail. */
                k = group_uncharge_kept(t->core, t->g, PAGE, MEM_STAT_SHMEM);
                CHECK(k == 0, "group_uncharge_kept(/x) while a removal was refused: %d", k);
                if (k == 0)
                        mine -= PAGE;
        }
        atomic_fetch_add(&t->kept, mine);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_refused_remove_keeps_group_usable(void **state) {
        MemCore *core = *state;
        pthread_t refuser, keepers[NKEEPERS];
        RefuseTest t = { .core = core };
        MemSession *s;
        MemGroupInfo info;

        t.g = make_group(core, "/x");
        assert_non_null(t.g);
        assert_int_equal(session_new(core, 904, 1000, 1000, &s), 0);
        assert_int_equal(session_attach(s, t.g), 0);
        t.deadline = now_usec() + REFUSE_USEC;
        for (unsigned i = 0; i < NKEEPERS; i++)
                assert_int_equal(pthread_create(&keepers[i], NULL, keeper_main, &t), 0);
        assert_int_equal(pthread_create(&refuser, NULL, refuser_main, &t), 0);
        assert_int_equal(pthread_join(refuser, NULL), 0);
        for (unsigned i = 0; i < NKEEPERS; i++)
                assert_int_equal(pthread_join(keepers[i], NULL), 0);
        print_message("%lu refused removals, %lu kept charges, %lu refused with -ENOENT\n",
                      t.refusals, atomic_load(&t.charges), atomic_load(&t.enoent_charges));
        core_stats_flush(core, true);
        group_read(core, t.g, NULL, false, &info);
        assert_null(session_free(s));

        assert_no_failures();
        assert_true(t.refusals > 0);
        assert_true(atomic_load(&t.charges) > 0);
        assert_int_equal(info.current, atomic_load(&t.kept));
        assert_int_equal(info.kept[MEM_STAT_SHMEM], atomic_load(&t.kept));
        assert_int_equal(info.stat[MEM_STAT_SHMEM], atomic_load(&t.kept));
        assert_int_equal(info.nr_attached, 1);
        assert_int_equal(group_remove(core, "/x"), 0);
        group_unref(t.g);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_group_get_during_remove_never_revives_a_freed_group),
                CORE_TEST(test_refused_remove_keeps_group_usable),
        };

        return cmocka_run_group_tests_name("core-concurrency-removal", tests, NULL, NULL);
}
