/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct's device memory region calls against the real daemon
 * (started here, on a private socket and state directory; $MEMACCTD
 * names it), over the socket.
 *
 * What a client is promised: each call of memacct.h's "device memory
 * regions" does what its comment says and maps the daemon's status to
 * the documented errno; a group's info carries its regions, each with
 * its counters; an event says its region; "memory" or NULL is the plain
 * call; and after a daemon restart the library subscribes again to the
 * region it named and charges again what the session held in each
 * region.
 *
 * Usage is always checked from a connection of its own, so that what one
 * handle believes is compared with what the daemon counts.
 */

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#include "test-support.h"

#define K UINT64_C(1024)
#define M (K * K)
#define WAIT_MSEC 20000
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define GPU "nvidia/0000:3b:00.0/vidmem"
#define GPU_CAPACITY (64 * M)

static TestDaemon daemon_;

static int group_setup(void **state) {
        (void) state;
        if (test_daemon_init(&daemon_, "client-regions") < 0)
                return -1;
        return test_daemon_start(&daemon_);
}

static int group_teardown(void **state) {
        TestDaemon *d = &daemon_;
        int status;

        (void) state;
        status = test_daemon_stop(d, SIGTERM);
        if (status != 0) {
                fprintf(stderr, "memacctd did not exit 0 on SIGTERM (wait status 0x%x)\n", status);
                test_daemon_dump_log(d);
        }
        (void) test_daemon_done(d);
        return status == 0 ? 0 : -1;
}

/* ---- helpers ---- */

static memacct *connect_or_fail(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(daemon_.sock, &m), 0);
        assert_non_null(m);
        return m;
}

static void create(memacct *m, const char *path) {
        assert_int_equal(memacct_create_group(m, path, NULL, MEMACCT_NO_OWNER), 0);
}

static uint64_t counter(const memacct_counter *c, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(c[i].name, name) == 0)
                        return c[i].value;
        fail_msg("no counter '%s'", name);
        return 0;
}

/* @g's entry in @region, or NULL. */
static const memacct_region_info *region_of(const memacct_group_info *g, const char *region) {
        for (size_t i = 0; i < g->n_regions; i++)
                if (strcmp(g->regions[i].name, region) == 0)
                        return &g->regions[i];
        return NULL;
}

/* The daemon's usage of @path in @region (0 without counters there), from a connection of its own. */
static uint64_t region_usage(const char *path, const char *region) {
        memacct *m = connect_or_fail();
        memacct_group_info *g = NULL;
        const memacct_region_info *ri;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        ri = region_of(g, region);
        v = ri ? ri->current : 0;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

/* The next event on @w, within WAIT_MSEC. */
static void next_event(memacct *w, memacct_event *ev) {
        uint64_t deadline = now_msec() + WAIT_MSEC;
        int r;

        do {
                r = memacct_next_event(w, 1000, ev);
                assert_true(r >= 0);
        } while (r == 0 && now_msec() < deadline);
        assert_int_equal(r, 1);
}

/* ---- the calls ---- */

static void test_add_list_remove(void **state) {
        memacct *m = connect_or_fail();
        memacct_regions *l = NULL;
        const memacct_region *r;

        (void) state;
        assert_int_equal(memacct_add_region(m, GPU, GPU_CAPACITY), 0);
        assert_int_equal(memacct_add_region(m, GPU, GPU_CAPACITY), 0);
        assert_int_equal(memacct_add_region(m, GPU, GPU_CAPACITY / 2), -EEXIST);
        assert_non_null(memacct_last_error(m));
        assert_int_equal(memacct_add_region(m, "gpu1", MEMACCT_UNLIMITED), 0);
        assert_int_equal(memacct_add_region(m, "has space", 1), -EINVAL);
        assert_int_equal(memacct_add_region(m, MEMACCT_REGION_MEMORY, 1), -EINVAL);
        assert_int_equal(memacct_add_region(m, NULL, 1), -EINVAL);

        assert_int_equal(memacct_list_regions(m, &l), 0);
        assert_int_equal(memacct_regions_size(l), 3);
        r = memacct_regions_get(l, 0);
        assert_string_equal(r->name, MEMACCT_REGION_MEMORY);
        assert_true(r->capacity == MEMACCT_UNLIMITED);
        r = memacct_regions_get(l, 1);
        assert_string_equal(r->name, GPU);
        assert_true(r->capacity == GPU_CAPACITY);
        assert_int_equal(r->current, 0);
        r = memacct_regions_get(l, 2);
        assert_string_equal(r->name, "gpu1");
        assert_true(r->capacity == MEMACCT_UNLIMITED);
        assert_null(memacct_regions_get(l, 3));
        l = memacct_regions_free(l);

        create(m, "/rm");
        assert_int_equal(memacct_charge_region(m, "/rm", "gpu1", M, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(memacct_remove_region(m, "gpu1"), -EBUSY);
        assert_int_equal(memacct_uncharge_region(m, "/rm", "gpu1", M, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_remove_region(m, "gpu1"), 0);
        assert_int_equal(memacct_remove_region(m, "gpu1"), -ENOENT);
        assert_int_equal(memacct_remove_region(m, MEMACCT_REGION_MEMORY), -EINVAL);
        assert_int_equal(memacct_charge_region(m, "/rm", "gpu1", 1, MEMACCT_KEEP, NULL), -ENOENT);
        assert_int_equal(memacct_list_regions(m, &l), 0);
        assert_int_equal(memacct_regions_size(l), 2);
        memacct_regions_free(l);
        memacct_close(m);
}

static void test_charges_limits_and_info(void **state) {
        memacct *m = connect_or_fail();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_LOW, .max = 2 * M, .low = M };
        memacct_charge_result res;
        memacct_group_info *g = NULL;
        const memacct_region_info *ri;

        (void) state;
        create(m, "/rc");
        create(m, "/rc/a");
        assert_int_equal(memacct_set_region_limits(m, "/rc", GPU, &l), 0);
        assert_int_equal(memacct_charge_region(m, "/rc/a", GPU, 1536 * K, MEMACCT_KEEP, &res), 0);
        assert_true(res.margin == 512 * K);
        assert_int_equal(memacct_charge_region(m, "/rc/a", GPU, M, MEMACCT_KEEP, &res), -EDQUOT);
        assert_string_equal(memacct_refused_path(m), "/rc");
        assert_non_null(strstr(memacct_last_error(m), GPU));
        assert_int_equal(memacct_uncharge_region(m, "/rc/a", GPU, 2 * M, MEMACCT_KEEP), -ERANGE);
        assert_int_equal(memacct_charge_region(m, "/rc/a", "nosuch", 1, MEMACCT_KEEP, NULL), -ENOENT);
        assert_int_equal(memacct_charge_region(m, NULL, GPU, 1, MEMACCT_KEEP, NULL), -EINVAL);
        assert_int_equal(memacct_charge_region(m, "/rc/a", GPU, 1, MEMACCT_EXACT, NULL), -EINVAL);

        /* The group's info: its regions, each with its counters. */
        assert_int_equal(memacct_get_group(m, "/rc", NULL, MEMACCT_EXACT, &g), 0);
        assert_int_equal(g->n_regions, 1);
        ri = region_of(g, GPU);
        assert_non_null(ri);
        assert_true(ri->capacity == GPU_CAPACITY);
        assert_int_equal(ri->current, 1536 * K);
        assert_int_equal(ri->peak, 1536 * K);
        assert_int_equal(ri->max, 2 * M);
        assert_true(ri->high == MEMACCT_UNLIMITED);
        assert_int_equal(ri->low, M);
        assert_int_equal(ri->kept, 0);
        assert_int_equal(ri->failcnt, 1);
        assert_int_equal(ri->n_events, 4);
        assert_int_equal(ri->n_events_local, 4);
        assert_int_equal(counter(ri->events_local, ri->n_events_local, "max"), 1);
        assert_int_equal(counter(ri->events, ri->n_events, "oom"), 1);
        /* On the first level below the root its effective low is its low. */
        assert_int_equal(ri->effective_low, M);
        assert_int_equal(g->current, 0);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_get_group(m, "/rc/a", NULL, 0, &g), 0);
        ri = region_of(g, GPU);
        assert_non_null(ri);
        assert_int_equal(ri->kept, 1536 * K);
        assert_int_equal(counter(ri->events, ri->n_events, "max"), 0);
        g = memacct_group_info_free(g);

        /* A max below usage is taken in a region; the peak resets to usage. */
        l = (memacct_limits) { .set = MEMACCT_LIMIT_MAX, .max = M };
        assert_int_equal(memacct_set_region_limits(m, "/rc", GPU, &l), 0);
        assert_int_equal(memacct_uncharge_region(m, "/rc/a", GPU, 1024 * K, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_reset_region_peak(m, "/rc", GPU), 0);
        assert_int_equal(memacct_reset_region_peak(m, "/rc", "nosuch"), -ENOENT);
        assert_int_equal(memacct_get_group(m, "/rc", NULL, 0, &g), 0);
        ri = region_of(g, GPU);
        assert_non_null(ri);
        assert_int_equal(ri->max, M);
        assert_int_equal(ri->peak, 512 * K);
        g = memacct_group_info_free(g);

        /* Past the capacity: the root refuses. */
        l = (memacct_limits) { .set = MEMACCT_LIMIT_MAX, .max = MEMACCT_UNLIMITED };
        assert_int_equal(memacct_set_region_limits(m, "/rc", GPU, &l), 0);
        assert_int_equal(memacct_charge_region(m, "/rc/a", GPU, GPU_CAPACITY, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_string_equal(memacct_refused_path(m), "/");
        assert_non_null(strstr(memacct_last_error(m), "capacity"));
        assert_int_equal(region_usage("/rc/a", GPU), 512 * K);

        /* "memory" is the plain call, its stat item "device". */
        assert_int_equal(memacct_charge_region(m, "/rc/a", MEMACCT_REGION_MEMORY, 3 * K, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(memacct_get_group(m, "/rc/a", NULL, MEMACCT_EXACT, &g), 0);
        assert_int_equal(g->current, 3 * K);
        assert_int_equal(counter(g->stat, g->n_stat, "device"), 3 * K);
        assert_int_equal(region_of(g, GPU)->current, 512 * K);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_uncharge_region(m, "/rc/a", NULL, 3 * K, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_uncharge_region(m, "/rc/a", GPU, 512 * K, MEMACCT_KEEP), 0);
        memacct_close(m);
}

static void test_transfer_and_evict(void **state) {
        memacct *m = connect_or_fail();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 2 * M };

        (void) state;
        create(m, "/tx");
        create(m, "/tx/src");
        create(m, "/tx/dst");
        assert_int_equal(memacct_set_region_limits(m, "/tx/dst", GPU, &l), 0);
        assert_int_equal(memacct_charge_region(m, "/tx/src", GPU, 3 * M, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(memacct_transfer(m, "/tx/src", "/tx/dst", GPU, M), 0);
        assert_int_equal(region_usage("/tx/src", GPU), 2 * M);
        assert_int_equal(region_usage("/tx/dst", GPU), M);
        assert_int_equal(memacct_transfer(m, "/tx/src", "/tx/dst", GPU, 2 * M), -EDQUOT);
        assert_string_equal(memacct_refused_path(m), "/tx/dst");
        assert_int_equal(memacct_transfer(m, "/tx/dst", "/tx/src", GPU, 2 * M), -ERANGE);
        assert_int_equal(region_usage("/tx/src", GPU), 2 * M);
        assert_int_equal(region_usage("/tx/dst", GPU), M);
        assert_int_equal(memacct_transfer(m, "/tx/src", "/tx/nosuch", GPU, 1), -ENOENT);
        assert_int_equal(memacct_transfer(m, NULL, "/tx/dst", GPU, 1), -EINVAL);

        /*
         * EvictValuable with /tx as the limit: its children are on the first
         * level below it, so their effective low is their low (the kernel's
         * page_counter_calculate_protection()): /tx/dst with low 2 MiB and
         * 1 MiB used is protected by low alone; /tx/src with none is not.
         */
        l = (memacct_limits) { .set = MEMACCT_LIMIT_LOW, .low = 2 * M };
        assert_int_equal(memacct_set_region_limits(m, "/tx/dst", GPU, &l), 0);
        assert_int_equal(memacct_evict_valuable(m, "/tx", "/tx/dst", GPU, 0), MEMACCT_EVICT_HIT_LOW);
        assert_int_equal(memacct_evict_valuable(m, "/tx", "/tx/dst", GPU, MEMACCT_IGNORE_LOW), MEMACCT_EVICT_YES);
        assert_int_equal(memacct_evict_valuable(m, "/tx", "/tx/src", GPU, 0), MEMACCT_EVICT_YES);
        assert_int_equal(memacct_evict_valuable(m, "/tx/src", "/tx/dst", GPU, 0), MEMACCT_EVICT_NO);
        assert_int_equal(memacct_evict_valuable(m, "/tx/dst", "/tx/dst", GPU, 0), MEMACCT_EVICT_YES);
        l = (memacct_limits) { .set = MEMACCT_LIMIT_MIN, .min = M };
        assert_int_equal(memacct_set_region_limits(m, "/tx/dst", GPU, &l), 0);
        assert_int_equal(memacct_evict_valuable(m, "/tx", "/tx/dst", GPU, MEMACCT_IGNORE_LOW), MEMACCT_EVICT_NO);
        assert_int_equal(memacct_evict_valuable(m, NULL, "/tx/dst", "nosuch", 0), -ENOENT);
        assert_int_equal(memacct_evict_valuable(m, NULL, "/tx/dst", GPU, MEMACCT_KEEP), -EINVAL);

        assert_int_equal(memacct_uncharge_region(m, "/tx/src", GPU, 2 * M, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_uncharge_region(m, "/tx/dst", GPU, M, MEMACCT_KEEP), 0);
        memacct_close(m);
}

static void test_events_name_their_region(void **state) {
        memacct *m = connect_or_fail(), *plain = connect_or_fail(), *gpu = connect_or_fail();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_event ev;
        const char *region;

        (void) state;
        assert_int_equal(memacct_create_group(m, "/re", &l, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_set_region_limits(m, "/re", GPU, &l), 0);
        assert_int_equal(memacct_subscribe(plain, "/re"), 0);
        assert_int_equal(memacct_subscribe_region(gpu, "/re", GPU), 0);
        assert_int_equal(memacct_subscribe_region(gpu, "/re", "nosuch"), -ENOENT);
        assert_int_equal(memacct_event_region(gpu, &region), -ENODATA);

        /* A region's refusal, then memory's: each subscriber gets its own first. */
        assert_int_equal(memacct_charge_region(m, "/re", GPU, M, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(memacct_charge(m, "/re", M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        next_event(gpu, &ev);
        assert_string_equal(ev.path, "/re");
        assert_string_equal(ev.name, "max");
        assert_int_equal(ev.count, 1);
        assert_int_equal(memacct_event_region(gpu, &region), 0);
        assert_string_equal(region, GPU);
        next_event(plain, &ev);
        assert_string_equal(ev.path, "/re");
        assert_string_equal(ev.name, "max");
        assert_int_equal(memacct_event_region(plain, &region), 0);
        assert_string_equal(region, MEMACCT_REGION_MEMORY);
        memacct_close(plain);
        memacct_close(gpu);
        memacct_close(m);
}

/* ---- daemon restart ---- */

typedef struct Reconnect {
        unsigned calls;
        int result;
        uint64_t replayed;
} Reconnect;

static void on_reconnect(memacct *m, int result, uint64_t replayed_bytes, void *userdata) {
        Reconnect *rc = userdata;

        (void) m;
        rc->calls++;
        rc->result = result;
        rc->replayed = replayed_bytes;
}

static void test_restart_replays_region_charges(void **state) {
        const uint64_t session = 3 * M;
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 8 * M };
        memacct *m = connect_or_fail(), *o = connect_or_fail();
        memacct_event ev;
        const char *region;
        Reconnect rc = {};

        (void) state;
        create(o, "/rr");
        assert_int_equal(memacct_set_region_limits(o, "/rr", GPU, &l), 0);
        assert_int_equal(memacct_set_reconnect_callback(m, on_reconnect, &rc), 0);
        assert_int_equal(memacct_attach(m, "/rr"), 0);
        assert_int_equal(memacct_charge_region(m, NULL, GPU, session + M, 0, NULL), 0);
        assert_int_equal(memacct_uncharge_region(m, NULL, GPU, M, 0), 0);
        assert_int_equal(memacct_subscribe_region(m, "/rr", GPU), 0);
        assert_int_equal(region_usage("/rr", GPU), session);
        memacct_close(o);

        assert_int_equal(test_daemon_stop(&daemon_, SIGTERM), 0);
        assert_int_equal(test_daemon_start(&daemon_), 0);
        /* The session's charges went with it. The region and its limits
         * are registered and set again, as its driver would: the same
         * again is a success, whether or not the daemon kept them. */
        o = connect_or_fail();
        assert_int_equal(memacct_add_region(o, GPU, GPU_CAPACITY), 0);
        assert_int_equal(memacct_set_region_limits(o, "/rr", GPU, &l), 0);
        memacct_close(o);
        assert_int_equal(region_usage("/rr", GPU), 0);

        /* The next call reconnects, charges again what the session held,
         * and subscribes again to the region it named. */
        assert_int_equal(memacct_reset_region_peak(m, "/rr", GPU), 0);
        assert_int_equal(memacct_reconnect_count(m), 1);
        assert_int_equal(rc.calls, 1);
        assert_int_equal(rc.result, 0);
        assert_true(rc.replayed == session);
        assert_int_equal(region_usage("/rr", GPU), session);

        assert_int_equal(memacct_charge_region(m, NULL, GPU, 8 * M, 0, NULL), -EDQUOT);
        next_event(m, &ev);
        assert_string_equal(ev.path, "/rr");
        assert_string_equal(ev.name, "max");
        assert_int_equal(memacct_event_region(m, &region), 0);
        assert_string_equal(region, GPU);

        /* And gives it back. */
        assert_int_equal(memacct_uncharge_region(m, NULL, GPU, session, 0), 0);
        assert_int_equal(memacct_uncharge_region(m, NULL, GPU, 1, 0), -ERANGE);
        assert_int_equal(region_usage("/rr", GPU), 0);
        memacct_close(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_list_remove),
                cmocka_unit_test(test_charges_limits_and_info),
                cmocka_unit_test(test_transfer_and_evict),
                cmocka_unit_test(test_events_name_their_region),
                cmocka_unit_test(test_restart_replays_region_charges),
        };
        int failed;

        /* A broken connection must be an error, never a signal. */
        signal(SIGPIPE, SIG_DFL);
        failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
        if (failed)
                test_daemon_dump_log(&daemon_);
        failed = MIN(MAX(failed, 0), (int) ELEMENTSOF(tests));
        printf("%d passed, %d failed\n", (int) ELEMENTSOF(tests) - failed, failed);
        return failed ? 1 : 0;
}
