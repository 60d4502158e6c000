/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct's reclaim calls against the real daemon (started here;
 * $MEMACCTD names it): a cache declares its charges reclaimable and
 * serves the daemon's requests from an event loop (poll() on
 * memacct_fd(), then memacct_process()), while another handle, on
 * another thread, charges past a max and waits for it.
 *
 * What a client is promised: the callback is called with what the daemon
 * asks, on the thread that calls memacct_process(), and may uncharge
 * through the same handle; the waiting charge then succeeds; sessions
 * report what was asked and given back; withdrawing the declaration
 * stops the requests; a region's declaration gets the region's requests.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <memacct.h>

#include "test-support.h"

#define M (UINT64_C(1024) * 1024)
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static TestDaemon daemon_;

static int group_setup(void **state) {
        (void) state;
        if (test_daemon_init(&daemon_, "client-reclaim") < 0)
                return -1;
        return test_daemon_start(&daemon_);
}

static int group_teardown(void **state) {
        int status;

        (void) state;
        status = test_daemon_stop(&daemon_, SIGTERM);
        if (status != 0)
                test_daemon_dump_log(&daemon_);
        (void) test_daemon_done(&daemon_);
        return status == 0 ? 0 : -1;
}

static memacct *connect_or_fail(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(daemon_.sock, &m), 0);
        return m;
}

/* The cache: what it holds, and what it was asked. */
typedef struct Cache {
        const char *region; /* NULL: memory */
        uint64_t held;
        unsigned calls;
        uint64_t asked;
        char asked_region[64];
} Cache;

static int64_t give_back(memacct *m, uint64_t bytes, const char *region, void *userdata) {
        Cache *c = userdata;
        uint64_t give = MIN(bytes, c->held);
        int r;

        c->calls++;
        c->asked += bytes;
        snprintf(c->asked_region, sizeof(c->asked_region), "%s", region ? region : "memory");
        if (give == 0)
                return 0;
        r = c->region ? memacct_uncharge_region(m, NULL, c->region, give, 0)
                      : memacct_uncharge(m, NULL, give, MEMACCT_STAT_FILE, 0);
        if (r < 0)
                return r;
        c->held -= give;
        return (int64_t) give;
}

typedef struct Charger {
        const char *path, *region;
        uint64_t bytes;
        int r;
        _Atomic int done; /* 1: charged; the test sets 2 to let it go */
} Charger;

static void *charger_main(void *userdata) {
        Charger *ch = userdata;
        memacct *m = connect_or_fail();

        ch->r = memacct_attach(m, ch->path);
        if (ch->r >= 0)
                ch->r = ch->region ? memacct_charge_region(m, NULL, ch->region, ch->bytes, 0, NULL)
                                   : memacct_charge(m, NULL, ch->bytes, MEMACCT_STAT_ANON, 0, NULL);
        ch->done = 1;
        /* Keep the charge until the test looked at it. */
        while (ch->done == 1)
                (void) poll(NULL, 0, 10);
        memacct_close(m);
        return NULL;
}

/* Serve @m's requests from an event loop until @ch is done (at most 30 s). */
static void serve_until_done(memacct *m, Charger *ch) {
        for (int i = 0; i < 3000 && !ch->done; i++) {
                struct pollfd pfd = { .fd = memacct_fd(m), .events = POLLIN };

                assert_true(pfd.fd >= 0);
                if (poll(&pfd, 1, 10) > 0)
                        assert_true(memacct_process(m, 0) >= 0);
        }
        assert_true(ch->done);
}

static void create(memacct *m, const char *path, uint64_t max) {
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = max };

        assert_int_equal(memacct_create_group(m, path, max ? &l : NULL, MEMACCT_NO_OWNER), 0);
}

static uint64_t current(const char *path) {
        memacct *m = connect_or_fail();
        memacct_group_info *g = NULL;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        v = g->current;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

static void test_event_loop_serves_requests(void **state) {
        memacct *root = connect_or_fail(), *cache = connect_or_fail();
        Cache c = { .held = 6 * M };
        Charger ch = { .path = "/rc/app", .bytes = 6 * M };
        memacct_sessions *l = NULL;
        pthread_t t;

        (void) state;
        create(root, "/rc", 10 * M);
        create(root, "/rc/cache", 0);
        create(root, "/rc/app", 0);
        assert_int_equal(memacct_attach(cache, "/rc/cache"), 0);
        assert_int_equal(memacct_charge(cache, NULL, c.held, MEMACCT_STAT_FILE, 0, NULL), 0);
        assert_int_equal(memacct_set_reclaimable(cache, NULL, give_back, &c), 0);
        assert_int_equal(memacct_process(cache, 0), 0);

        assert_int_equal(pthread_create(&t, NULL, charger_main, &ch), 0);
        serve_until_done(cache, &ch);
        assert_int_equal(ch.r, 0);
        assert_true(c.calls >= 1);
        assert_true(c.asked >= 2 * M);
        assert_string_equal(c.asked_region, "memory");
        assert_true(current("/rc") <= 10 * M);
        assert_int_equal(current("/rc/cache"), c.held);

        assert_int_equal(memacct_list_sessions(root, "/rc/cache", &l), 0);
        assert_int_equal(memacct_sessions_size(l), 1);
        assert_true(memacct_sessions_get(l, 0)->reclaimable);
        assert_int_equal(memacct_sessions_get(l, 0)->reclaim_released, 6 * M - c.held);
        assert_int_equal(memacct_sessions_get(l, 0)->reclaim_late, 0);
        memacct_sessions_free(l);
        ch.done = 2;
        pthread_join(t, NULL);

        /* Withdrawn: a charge past max is refused, and nobody is asked. */
        assert_int_equal(memacct_set_reclaimable(cache, NULL, NULL, NULL), 0);
        c.calls = 0;
        ch = (Charger) { .path = "/rc/app", .bytes = 8 * M };
        assert_int_equal(pthread_create(&t, NULL, charger_main, &ch), 0);
        serve_until_done(cache, &ch);
        assert_int_equal(ch.r, -EDQUOT);
        assert_int_equal(c.calls, 0);
        ch.done = 2;
        pthread_join(t, NULL);
        memacct_close(cache);
        memacct_close(root);
}

static void test_region_requests(void **state) {
        memacct *root = connect_or_fail(), *cache = connect_or_fail();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 16 * M };
        Cache c = { .region = "gpu0", .held = 12 * M };
        Charger ch = { .path = "/rg/app", .region = "gpu0", .bytes = 8 * M };
        pthread_t t;

        (void) state;
        assert_int_equal(memacct_add_region(root, "gpu0", 64 * M), 0);
        create(root, "/rg", 0);
        assert_int_equal(memacct_set_region_limits(root, "/rg", "gpu0", &l), 0);
        create(root, "/rg/cache", 0);
        create(root, "/rg/app", 0);
        assert_int_equal(memacct_set_reclaimable(cache, "nosuch", give_back, &c), -ENOENT);
        assert_int_equal(memacct_attach(cache, "/rg/cache"), 0);
        assert_int_equal(memacct_charge_region(cache, NULL, "gpu0", c.held, 0, NULL), 0);
        assert_int_equal(memacct_set_reclaimable(cache, "gpu0", give_back, &c), 0);

        assert_int_equal(pthread_create(&t, NULL, charger_main, &ch), 0);
        serve_until_done(cache, &ch);
        assert_int_equal(ch.r, 0);
        assert_true(c.calls >= 1);
        assert_string_equal(c.asked_region, "gpu0");
        assert_true(c.held <= 8 * M);
        ch.done = 2;
        pthread_join(t, NULL);
        memacct_close(cache);
        memacct_close(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_event_loop_serves_requests),
                cmocka_unit_test(test_region_requests),
        };
        int failed;

        signal(SIGPIPE, SIG_DFL);
        failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
        if (failed)
                test_daemon_dump_log(&daemon_);
        failed = MIN(MAX(failed, 0), (int) ELEMENTSOF(tests));
        printf("%d passed, %d failed\n", (int) ELEMENTSOF(tests) - failed, failed);
        return failed ? 1 : 0;
}
