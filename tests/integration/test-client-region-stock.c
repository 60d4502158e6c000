/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct's charge stock in device regions (memacct_stock_region())
 * against the real daemon, started here on a private socket and state
 * directory ($MEMACCTD names it).
 *
 * What a client is promised: a region's item charges and gives back
 * through the stock like memory's stat items, on the region's counters
 * and nowhere else; what sits unused in one session's stock never makes
 * another session's charge fail (the daemon drains it first, in that
 * region only); a region with nothing but stock in it can be removed;
 * and after a daemon restart what the caller held through the item is
 * charged again. The daemon's usage is read from a connection of its
 * own, and compared with what the handle holds plus what its page holds.
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
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define GPU "drm/0000:03:00.0/vram0"
#define GPU_CAPACITY (256 * M)

static TestDaemon daemon_;

static int group_setup(void **state) {
        memacct *m = NULL;
        int r;

        (void) state;
        if (test_daemon_init(&daemon_, "client-region-stock") < 0 || test_daemon_start(&daemon_) < 0)
                return -1;
        if (memacct_connect(daemon_.sock, &m) < 0)
                return -1;
        r = memacct_add_region(m, GPU, GPU_CAPACITY);
        memacct_close(m);
        return r;
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

/* A group at @path with @max in GPU (0: none). */
static void create(const char *path, uint64_t max) {
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = max };
        memacct *m = connect_or_fail();

        assert_int_equal(memacct_create_group(m, path, NULL, MEMACCT_NO_OWNER), 0);
        if (max)
                assert_int_equal(memacct_set_region_limits(m, path, GPU, &l), 0);
        memacct_close(m);
}

/* The daemon's usage of @path in @region, from a connection of its own. */
static uint64_t usage(const char *path, const char *region) {
        memacct *m = connect_or_fail();
        memacct_group_info *g = NULL;
        uint64_t v = 0;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        if (!region)
                v = g->current;
        for (size_t i = 0; region && i < g->n_regions; i++)
                if (strcmp(g->regions[i].name, region) == 0)
                        v = g->regions[i].current;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

static uint64_t stocked(memacct *m, int item) {
        uint64_t v = 0;

        assert_int_equal(memacct_stock_get(m, item, &v, NULL), 0);
        return v;
}

/*
 * The daemon's usage of @path in GPU is what @m holds through @item plus
 * what its page holds, once a refill sent ahead (whose reply nobody waits
 * for) has landed: read the usage, then the page, until they agree.
 */
static void assert_held(const char *path, memacct *m, int item, uint64_t held) {
        uint64_t u = 0, s = 0;

        for (int i = 0; i < 500; i++) {
                u = usage(path, GPU);
                s = stocked(m, item);
                if (u == held + s)
                        return;
                usleep(10 * 1000);
        }
        fail_msg("%s: the daemon counts %llu, the caller holds %llu and its page %llu", path,
                 (unsigned long long) u, (unsigned long long) held, (unsigned long long) s);
}

static void test_items_charge_the_region_only(void **state) {
        memacct *m = connect_or_fail();
        uint64_t charged = 0;
        int item;

        (void) state;
        create("/rs", 0);
        assert_int_equal(memacct_attach(m, "/rs"), 0);
        item = memacct_stock_region(m, GPU);
        assert_true(item >= MEMACCT_STAT_MAX);
        assert_int_equal(memacct_stock_region(m, GPU), item);
        assert_int_equal(memacct_stock_region(m, MEMACCT_REGION_MEMORY), MEMACCT_STAT_DEVICE);
        assert_int_equal(memacct_stock_region(m, "gpu-other"), item + 1);
        assert_int_equal(memacct_stock_region(m, NULL), -EINVAL);

        for (int i = 0; i < 1000; i++, charged += 4 * K)
                assert_int_equal(memacct_charge_stocked(m, 4 * K, item), 0);
        assert_held("/rs", m, item, charged);
        assert_true(stocked(m, item) <= 2 * 4 * M);
        assert_int_equal(usage("/rs", NULL), 0);
        assert_int_equal(stocked(m, MEMACCT_STAT_ANON), 0);

        for (uint64_t done = 0; done < charged; done += 4 * K)
                assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), 0);
        assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), -ERANGE);
        assert_int_equal(memacct_stock_drain(m), 0);
        assert_int_equal(usage("/rs", GPU), 0);

        /* An unknown region fails its first charge, and holds nothing. */
        assert_int_equal(memacct_charge_stocked(m, 4 * K, item + 1), -ENOENT);
        assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item + 1), -ERANGE);
        memacct_close(m);
        assert_int_equal(usage("/rs", GPU), 0);
}

static void test_refusal_drains_other_sessions_stock(void **state) {
        memacct *a = connect_or_fail(), *b = connect_or_fail();
        int ia, ib;

        (void) state;
        create("/rd", 4 * M);
        create("/rd/a", 0);
        create("/rd/b", 0);
        assert_int_equal(memacct_attach(a, "/rd/a"), 0);
        assert_int_equal(memacct_attach(b, "/rd/b"), 0);
        ia = memacct_stock_region(a, GPU);
        ib = memacct_stock_region(b, GPU);
        assert_int_equal(memacct_charge_stocked(a, 4 * K, ia), 0);
        assert_true(stocked(a, ia) > 0);
        /* Memory's stock of the same session is not the region's. */
        assert_int_equal(memacct_charge_stocked(a, 4 * K, MEMACCT_STAT_ANON), 0);

        /* All that is left under /rd but a's 4 KiB: only a drain of a's
         * page makes room, and b is never refused for it. */
        assert_int_equal(memacct_charge_region(b, NULL, GPU, 4 * M - 4 * K, 0, NULL), 0);
        assert_int_equal(stocked(a, ia), 0);
        assert_true(stocked(a, MEMACCT_STAT_ANON) > 0);
        assert_int_equal(usage("/rd", GPU), 4 * M);
        /* Full now: a stocked charge of b is refused as an exact one would be. */
        assert_int_equal(memacct_charge_stocked(b, 4 * K, ib), -EDQUOT);

        /* a still holds its 4 KiB, and gives them back. */
        assert_int_equal(memacct_uncharge_stocked(a, 4 * K, ia), 0);
        assert_int_equal(memacct_uncharge_stocked(a, 4 * K, ia), -ERANGE);
        assert_int_equal(memacct_uncharge_region(b, NULL, GPU, 4 * M - 4 * K, 0), 0);
        assert_int_equal(memacct_stock_drain(a), 0);
        assert_int_equal(memacct_stock_drain(b), 0);
        assert_int_equal(usage("/rd", GPU), 0);
        memacct_close(a);
        memacct_close(b);
}

static void test_removal_drains_stock(void **state) {
        memacct *m = connect_or_fail(), *root = connect_or_fail();
        int item;

        (void) state;
        assert_int_equal(memacct_add_region(root, "gpu-tmp", 64 * M), 0);
        create("/rr", 0);
        assert_int_equal(memacct_attach(m, "/rr"), 0);
        item = memacct_stock_region(m, "gpu-tmp");
        assert_int_equal(memacct_charge_stocked(m, 4 * K, item), 0);
        /* Held by the caller: the region is in use. */
        assert_int_equal(memacct_remove_region(root, "gpu-tmp"), -EBUSY);
        assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), 0);
        assert_true(stocked(m, item) > 0);
        /* Only stock is left: it goes back, and the removal succeeds. */
        assert_int_equal(memacct_remove_region(root, "gpu-tmp"), 0);
        assert_int_equal(stocked(m, item), 0);
        assert_int_equal(memacct_charge_stocked(m, 4 * K, item), -ENOENT);

        /* The same name again: the item goes on, on the new region. */
        assert_int_equal(memacct_add_region(root, "gpu-tmp", 64 * M), 0);
        assert_int_equal(memacct_charge_stocked(m, 4 * K, item), 0);
        assert_true(usage("/rr", "gpu-tmp") >= 4 * K);
        assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), 0);
        assert_int_equal(memacct_stock_drain(m), 0);
        assert_int_equal(memacct_remove_region(root, "gpu-tmp"), 0);
        memacct_close(m);
        memacct_close(root);
}

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

static void test_restart_replays_what_the_item_held(void **state) {
        memacct *m = connect_or_fail(), *o;
        Reconnect rc = {};
        int item;

        (void) state;
        create("/rt", 0);
        assert_int_equal(memacct_set_reconnect_callback(m, on_reconnect, &rc), 0);
        assert_int_equal(memacct_attach(m, "/rt"), 0);
        item = memacct_stock_region(m, GPU);
        for (int i = 0; i < 3; i++)
                assert_int_equal(memacct_charge_stocked(m, 4 * K, item), 0);
        assert_held("/rt", m, item, 12 * K);

        assert_int_equal(test_daemon_stop(&daemon_, SIGTERM), 0);
        assert_int_equal(test_daemon_start(&daemon_), 0);
        o = connect_or_fail();
        assert_int_equal(memacct_add_region(o, GPU, GPU_CAPACITY), 0);
        memacct_close(o);
        assert_int_equal(usage("/rt", GPU), 0);

        /* The next call that needs the socket reconnects and replays the
         * 12 KiB (a stocked charge the old page still covers needs none). */
        assert_int_equal(memacct_reset_region_peak(m, "/rt", GPU), 0);
        assert_int_equal(rc.calls, 1);
        assert_int_equal(rc.result, 0);
        assert_true(rc.replayed == 12 * K);
        assert_int_equal(usage("/rt", GPU), 12 * K);
        /* The item learns its counter on the new page. */
        assert_int_equal(memacct_charge_stocked(m, 4 * K, item), 0);
        assert_held("/rt", m, item, 16 * K);
        for (int i = 0; i < 4; i++)
                assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), 0);
        assert_int_equal(memacct_uncharge_stocked(m, 4 * K, item), -ERANGE);
        assert_int_equal(memacct_stock_drain(m), 0);
        assert_int_equal(usage("/rt", GPU), 0);
        memacct_close(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_items_charge_the_region_only),
                cmocka_unit_test(test_refusal_drains_other_sessions_stock),
                cmocka_unit_test(test_removal_drains_stock),
                cmocka_unit_test(test_restart_replays_what_the_item_held),
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
