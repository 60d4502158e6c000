/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device regions are durable through the service: each region operation
 * a transport would make (register, limits, a kept charge by a delegator,
 * a transfer, remove) is waited for as a transport waits for its OK, and
 * then the state directory as it is on disk, which is what a kill -9
 * leaves, restores into a fresh core with the change in it. The saver
 * runs on its own thread with real files; a registration and a removal
 * are whole saves (the journal starts again), a group's change in a region
 * is a journal batch that names the region.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/group.h"
#include "core/region.h"
#include "file-util.h"
#include "service/service.h"
#include "state/persist.h"
#include "state/saver.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

typedef struct Fixture {
        MemCore *core;
        Service *svc;
        Saver *saver;
        Peer *root;
        char dir[64];
} Fixture;

static int setup(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings ss = { .max_frame = 65536, .charge_batch = 65536, .read_access = READ_ACCESS_ALL };
        PeerCreds creds = { .pid = 1, .uid = 0, .gid = 0 };
        Fixture *f = calloc(1, sizeof(*f));
        Refusal rf;

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-regions-durable-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(core_new(&cc, &f->core), 0);
        assert_int_equal(core_thread_register(f->core), 0);
        assert_int_equal(group_create(f->core, "/a", 0), 0);
        assert_int_equal(group_create(f->core, "/d", 1000), 0); /* a delegation root */
        assert_int_equal(service_new(f->core, &ss, &f->svc), 0);
        assert_int_equal(saver_new(f->core, f->dir, false, &f->saver), 0);
        service_set_saver(f->svc, f->saver);
        assert_int_equal(saver_start(f->saver), 0);
        refusal_init(&rf);
        assert_int_equal(service_peer_new(f->svc, &creds, NULL, NULL, true, &f->root, &rf), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char cmd[128];

        f->root = service_peer_free(f->root);
        f->saver = saver_free(f->saver);
        f->svc = service_free(f->svc);
        core_thread_unregister(f->core);
        f->core = core_free(f->core);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* The operation just made by the root peer returned @r; wait for its OK as a transport does. */
static void acked(Fixture *f, int r, const Refusal *rf) {
        uint64_t seq = service_peer_take_wait(f->root);
        Refusal wait_rf;

        if (r < 0)
                fail_msg("refused: %s", rf->message);
        assert_true(seq > 0); /* a durable change */
        refusal_init(&wait_rf);
        for (int i = 0; i < 10000; i++) {
                int k = service_durable_check(f->svc, seq, &wait_rf);

                if (k == 1)
                        return;
                assert_int_equal(k, 0);
                usleep(1000);
        }
        fail_msg("change %llu not saved within 10 s", (unsigned long long) seq);
}

static char *read_whole(const char *dir, const char *name) {
        char path[128], *text = NULL;
        size_t n = 0;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, 1 << 20, &text, &n), 0);
        return text;
}

/*
 * What a kill -9 now would leave: the state and journal as they are on
 * disk, restored into a fresh core. The main thread is registered with
 * that core until crashed_done().
 */
static MemCore *crashed(Fixture *f) {
        char dir[] = "/tmp/test-regions-crash-XXXXXX", cmd[256];
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *fresh = NULL;

        assert_non_null(mkdtemp(dir));
        snprintf(cmd, sizeof(cmd), "cp '%s/state' '%s/journal' '%s/'", f->dir, f->dir, dir);
        assert_int_equal(system(cmd), 0);
        core_thread_unregister(f->core);
        assert_int_equal(core_new(&cc, &fresh), 0);
        assert_int_equal(core_thread_register(fresh), 0);
        assert_int_equal(persist_restore(fresh, dir), 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        return fresh;
}

static void crashed_done(Fixture *f, MemCore *fresh) {
        core_thread_unregister(fresh);
        core_free(fresh);
        assert_int_equal(core_thread_register(f->core), 0);
}

/* @path's counters in @region of @core (all zero, limits max, when none; -ENOENT: no such region). */
static int info_in(MemCore *core, const char *path, const char *region, MemRegionInfo *ret) {
        MemGroup *g = NULL;
        int key = core_region_lookup(core, region), r;

        if (key < 0)
                return key;
        assert_int_equal(group_get(core, path, &g), 0);
        r = region_read_one(core, g, key, NULL, ret);
        group_unref(g);
        return r;
}

static uint64_t delegator_in(MemCore *core, const char *path, const char *region) {
        MemGroup *g = NULL;
        uint64_t d;

        assert_int_equal(group_get(core, path, &g), 0);
        d = region_kept_delegator(core, g, core_region_lookup(core, region));
        group_unref(g);
        return d;
}

static ServiceCharge kept_in(const char *path, const char *region, uint64_t bytes) {
        return (ServiceCharge) { .path = path, .bytes = bytes, .has_bytes = true, .keep = true, .region = region };
}

static void test_every_acknowledged_region_change_survives_a_crash(void **state) {
        Fixture *f = *state;
        MemLimits max = { .set = MEM_LIMIT_MAX, .max = 1 * GIB };
        ServiceChargeResult res;
        MemRegionInfo ri;
        ServiceCharge c;
        MemCore *fresh;
        Refusal rf;
        char *text;

        /* Registered: a whole save, the journal emptied after it. */
        refusal_init(&rf);
        acked(f, service_add_region(f->svc, f->root, "gpu0", 8 * GIB, &rf), &rf);
        text = read_whole(f->dir, "state");
        assert_non_null(strstr(text, "\nregion gpu0 capacity=8589934592\n"));
        free(text);
        text = read_whole(f->dir, "journal");
        assert_string_equal(text, "memacctd-journal 1\n");
        free(text);
        fresh = crashed(f);
        assert_int_equal(info_in(fresh, "/", "gpu0", &ri), 0);
        assert_true(ri.capacity == 8 * GIB);
        crashed_done(f, fresh);

        /* A limit: a batch naming the region, with /a's field. */
        acked(f, service_set_region_limits(f->svc, f->root, "/a", "gpu0", &max, false, &rf), &rf);
        text = read_whole(f->dir, "journal");
        assert_non_null(strstr(text, "\nregion gpu0 capacity=8589934592\nset /a "));
        assert_non_null(strstr(text, " dmem:gpu0.max=1073741824\n"));
        free(text);
        fresh = crashed(f);
        assert_int_equal(info_in(fresh, "/a", "gpu0", &ri), 0);
        assert_true(ri.max == 1 * GIB);
        crashed_done(f, fresh);

        /* A kept charge by root on a delegation root: the delegator's part. */
        c = kept_in("/d", "gpu0", 4 * MIB);
        acked(f, service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        fresh = crashed(f);
        assert_int_equal(info_in(fresh, "/d", "gpu0", &ri), 0);
        assert_true(ri.kept == 4 * MIB);
        assert_true(delegator_in(fresh, "/d", "gpu0") == 4 * MIB);
        crashed_done(f, fresh);

        /* A transfer: both groups in one durable change. */
        acked(f, service_transfer(f->svc, f->root, "/d", "/a", 1 * MIB, "gpu0", NULL, &rf), &rf);
        fresh = crashed(f);
        assert_int_equal(info_in(fresh, "/a", "gpu0", &ri), 0);
        assert_true(ri.kept == 1 * MIB && ri.max == 1 * GIB);
        assert_int_equal(info_in(fresh, "/d", "gpu0", &ri), 0);
        assert_true(ri.kept == 3 * MIB);
        assert_int_equal(info_in(fresh, "/", "gpu0", &ri), 0);
        assert_true(ri.current == 4 * MIB);
        crashed_done(f, fresh);

        /* Removed once nothing is charged: a whole save without it. */
        assert_int_equal(service_remove_region(f->svc, f->root, "gpu0", &rf), -EBUSY);
        (void) service_peer_take_wait(f->root);
        refusal_init(&rf);
        c = kept_in("/a", "gpu0", 1 * MIB);
        acked(f, service_uncharge(f->svc, f->root, &c, &rf), &rf);
        c = kept_in("/d", "gpu0", 3 * MIB);
        acked(f, service_uncharge(f->svc, f->root, &c, &rf), &rf);
        acked(f, service_remove_region(f->svc, f->root, "gpu0", &rf), &rf);
        text = read_whole(f->dir, "state");
        assert_null(strstr(text, "gpu0"));
        assert_int_equal(strncmp(text, "memacctd-state 1\n", 17), 0);
        free(text);
        fresh = crashed(f);
        assert_int_equal(info_in(fresh, "/a", "gpu0", &ri), -ENOENT);
        crashed_done(f, fresh);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_every_acknowledged_region_change_survives_a_crash, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
