/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device regions under concurrency (region.h): session and kept charges
 * in a region racing moves of those sessions, reads, the registration and
 * removal of other regions, and attempts to remove the charged region.
 *
 * Invariants: no counter passes its max or the capacity (its peak says
 * so), a removal succeeds only with nothing charged, and a charge made
 * with the key of a removed region never lands in the region registered
 * after it; when every thread has released what it holds, every counter
 * of the region reads 0.
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
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "region.h"
#include "session.h"

#define RUN_USEC 1000000
#define NCHARGERS 2
#define CAPACITY (1 * MiB)
#define PARENT_MAX (768 * KiB)

typedef struct RegionTest {
        MemCore *core;
        MemGroup *p, *a, *b;
        MemSession *s[NCHARGERS];
        uint64_t deadline;
        _Atomic bool chargers_done;
        _Atomic unsigned long refused, charged, stale, removed;
} RegionTest;

typedef struct Charger {
        RegionTest *t;
        unsigned i;
} Charger;

static void *charger_main(void *arg) {
        Charger *c = arg;
        RegionTest *t = c->t;
        MemSession *s = t->s[c->i];
        MemGroup *own = c->i ? t->b : t->a;
        uint64_t rng = seed_base() + c->i;
        uint64_t held = 0, kept = 0;
        int key = core_region_lookup(t->core, "gpu0");

        CHECK(core_thread_register(t->core) == 0, "register");
        while (now_usec() < t->deadline) {
                uint64_t n = (rnd(&rng) % 16 + 1) * PAGE;
                int r;

                if (key < 0) {
                        key = core_region_lookup(t->core, "gpu0");
                        continue;
                }
                switch (rnd(&rng) % 4) {
                case 0:
                        r = session_charge_region(s, key, n, 0, NULL);
                        if (r == 0)
                                held += n;
                        break;
                case 1:
                        r = held ? session_uncharge_region(s, key, PAGE) : 0;
                        if (held && r == 0)
                                held -= PAGE;
                        break;
                case 2:
                        r = region_charge_kept(t->core, own, key, n, MEM_CHARGE_NO_OOM, NULL);
                        if (r == 0)
                                kept += n;
                        break;
                default:
                        r = kept ? region_uncharge_kept_as(t->core, own, key, kept, false) : 0;
                        if (r == 0)
                                kept = 0;
                        break;
                }
                if (r == -EDQUOT)
                        t->refused++;
                else if (r == -ENOENT) {
                        /* The region was removed (so nothing was charged to
                         * it: this thread held nothing either) and maybe
                         * registered again: a new key. */
                        CHECK(held == 0 && kept == 0, "removed while this thread held %llu + %llu",
                              (unsigned long long) held, (unsigned long long) kept);
                        t->stale++;
                        key = core_region_lookup(t->core, "gpu0");
                } else {
                        CHECK(r == 0, "charge or uncharge: %d", r);
                        t->charged++;
                }
                CHECK(session_held_region(s, key) == held, "held %llu, the session says %llu",
                      (unsigned long long) held, (unsigned long long) session_held_region(s, key));
        }
        if (held)
                CHECK(session_uncharge_region(s, key, held) == 0, "final uncharge");
        if (kept)
                CHECK(region_uncharge_kept_as(t->core, own, key, kept, false) == 0, "final kept uncharge");
        core_thread_unregister(t->core);
        return NULL;
}

/* Moves the sessions between a and b; a refused move (b's or a's share
 * of the parent) moves nothing, which the chargers' held checks see. */
static void *mover_main(void *arg) {
        RegionTest *t = arg;
        uint64_t rng = seed_base() + 99;

        CHECK(core_thread_register(t->core) == 0, "register");
        while (now_usec() < t->deadline) {
                unsigned i = (unsigned) (rnd(&rng) % NCHARGERS);
                MemGroup *to = rnd(&rng) % 2 ? t->a : t->b;
                int r = session_move(t->s[i], to, NULL);

                CHECK(r == 0 || r == -EDQUOT, "move: %d", r);
        }
        core_thread_unregister(t->core);
        return NULL;
}

/* Registers and removes regions, reads, and tries to remove the charged one. */
static void *registrar_main(void *arg) {
        RegionTest *t = arg;
        MemRegionDesc list[MEM_REGION_MAX];
        MemGroupInfo info;

        CHECK(core_thread_register(t->core) == 0, "register");
        while (now_usec() < t->deadline) {
                int key = core_region_add(t->core, "gpu1", CAPACITY);
                int r;

                CHECK(key > 0, "add gpu1: %d", key);
                CHECK(core_region_remove(t->core, "gpu1") == 0, "remove gpu1");
                r = core_region_remove(t->core, "gpu0");
                CHECK(r == 0 || r == -EBUSY, "remove gpu0: %d", r);
                if (r == 0) {
                        /* The limits went with it: set again, there is
                         * a moment without, which only the capacity bounds. */
                        t->removed++;
                        key = core_region_add(t->core, "gpu0", CAPACITY);
                        CHECK(key > 0, "add gpu0 again: %d", key);
                        CHECK(region_set_limits(t->core, t->p, key,
                                                &(MemLimits) { .set = MEM_LIMIT_MAX, .max = PARENT_MAX },
                                                true) >= 0, "limit again");
                }
                (void) core_region_list(t->core, list, MEM_REGION_MAX);
                group_read(t->core, t->p, NULL, false, &info);
                for (unsigned i = 0; i < info.nr_regions; i++)
                        if (strcmp(info.regions[i].name, "gpu0") == 0)
                                CHECK(info.regions[i].peak <= (t->removed ? CAPACITY : PARENT_MAX),
                                      "/p's peak %llu above its max", (unsigned long long) info.regions[i].peak);
        }
        core_thread_unregister(t->core);
        return NULL;
}

static void test_regions_under_concurrency(void **state) {
        RegionTest t = { .core = *state };
        Charger c[NCHARGERS];
        pthread_t th[NCHARGERS + 2];
        MemRegionInfo ri = {};
        MemGroupInfo info;
        int key;

        printf("# seed %llu\n", (unsigned long long) seed_base());
        t.p = make_group(t.core, "/p");
        t.a = make_group(t.core, "/p/a");
        t.b = make_group(t.core, "/p/b");
        key = core_region_add(t.core, "gpu0", CAPACITY);
        assert_true(key > 0);
        assert_int_equal(region_set_limits(t.core, t.p, key,
                                           &(MemLimits) { .set = MEM_LIMIT_MAX, .max = PARENT_MAX }, false),
                         0);
        for (unsigned i = 0; i < NCHARGERS; i++) {
                assert_int_equal(session_new(t.core, 100 + (pid_t) i, 0, 0, &t.s[i]), 0);
                assert_int_equal(session_attach(t.s[i], i ? t.b : t.a), 0);
        }
        t.deadline = now_usec() + RUN_USEC;
        for (unsigned i = 0; i < NCHARGERS; i++) {
                c[i] = (Charger) { .t = &t, .i = i };
                assert_int_equal(pthread_create(&th[i], NULL, charger_main, &c[i]), 0);
        }
        assert_int_equal(pthread_create(&th[NCHARGERS], NULL, mover_main, &t), 0);
        assert_int_equal(pthread_create(&th[NCHARGERS + 1], NULL, registrar_main, &t), 0);
        for (unsigned i = 0; i < NCHARGERS + 2; i++)
                pthread_join(th[i], NULL);
        assert_no_failures();
        printf("# %lu charges, %lu refused, %lu with a removed region's key, gpu0 removed %lu times\n",
               (unsigned long) t.charged, (unsigned long) t.refused, (unsigned long) t.stale,
               (unsigned long) t.removed);
        assert_true(t.charged > 0);

        /* Everything released: every counter of the region reads 0, and
         * the region can go. */
        key = core_region_lookup(t.core, "gpu0");
        group_read(t.core, t.core->root, NULL, false, &info);
        for (unsigned i = 0; i < info.nr_regions; i++)
                if (strcmp(info.regions[i].name, "gpu0") == 0)
                        ri = info.regions[i];
        assert_int_equal(ri.current, 0);
        assert_true(ri.peak <= CAPACITY);
        assert_int_equal(region_read_one(t.core, t.a, key, NULL, &ri), 0);
        assert_int_equal(ri.current, 0);
        assert_int_equal(region_read_one(t.core, t.b, key, NULL, &ri), 0);
        assert_int_equal(ri.current, 0);
        for (unsigned i = 0; i < NCHARGERS; i++)
                session_free(t.s[i]);
        assert_int_equal(core_region_remove(t.core, "gpu0"), 0);
        group_unref(t.p);
        group_unref(t.a);
        group_unref(t.b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_regions_under_concurrency),
        };

        return cmocka_run_group_tests_name("core-concurrency-regions", tests, NULL, NULL);
}
