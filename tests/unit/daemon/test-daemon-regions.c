/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The regions memacctd.conf declares (daemon/daemon-regions.c), applied
 * to a service in-process as the daemon applies them at start and at a
 * reload: missing ones are registered; a region the file no longer names
 * stays, with its groups' limits; a capacity the file changes is taken
 * while nothing is charged (the groups' limits in it go), and not while
 * something is, with a warning; a region that cannot be registered is an
 * error, the others registered all the same. And the daemon whole (once:
 * one daemon a process) registers them at start and at a reload, and its
 * last save holds them.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/charge.h"
#include "core/core.h"
#include "core/group.h"
#include "core/region.h"
#include "daemon-internal.h"
#include "daemon.h"
#include "macro.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

typedef struct Fixture {
        MemCore *core;
        Service *svc;
} Fixture;

static int setup(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings ss = { .max_frame = 65536, .charge_batch = 65536, .read_access = READ_ACCESS_ALL };
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(core_new(&cc, &f->core), 0);
        assert_int_equal(core_thread_register(f->core), 0);
        assert_int_equal(group_create(f->core, "/a", 0), 0);
        assert_int_equal(service_new(f->core, &ss, &f->svc), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        f->svc = service_free(f->svc);
        core_thread_unregister(f->core);
        f->core = core_free(f->core);
        free(f);
        return 0;
}

static Config config_of(unsigned n, const ConfigRegion *regions) {
        Config c = CONFIG_DEFAULT;

        assert_true(n <= ELEMENTSOF(c.regions));
        memcpy(c.regions, regions, n * sizeof(*regions));
        c.n_regions = n;
        return c;
}

/* The capacity of @name; -1 when it is not registered. */
static int64_t capacity_of(Fixture *f, const char *name) {
        MemRegionDesc d[MEM_REGION_MAX];
        unsigned n = core_region_list(f->core, d, MEM_REGION_MAX);

        for (unsigned i = 0; i < n; i++)
                if (strcmp(d[i].name, name) == 0)
                        return d[i].capacity == UINT64_MAX ? INT64_MAX : (int64_t) d[i].capacity;
        return -1;
}

static MemRegionInfo info_of(Fixture *f, const char *path, const char *region) {
        MemGroup *g = NULL;
        MemRegionInfo ri;

        assert_int_equal(group_get(f->core, path, &g), 0);
        assert_int_equal(region_read_one(f->core, g, core_region_lookup(f->core, region), NULL, &ri), 0);
        group_unref(g);
        return ri;
}

static void set_high(Fixture *f, const char *path, const char *region, uint64_t high) {
        MemLimits l = { .set = MEM_LIMIT_HIGH, .high = high };
        Refusal rf;

        refusal_init(&rf);
        assert_int_equal(service_set_region_limits(f->svc, service_daemon_peer(f->svc), path, region, &l, false, &rf),
                         0);
}

/* What daemon_regions_apply() logs goes to a file from here to log_end(). */
static int saved_stderr = -1;
static FILE *log_file;

static void log_begin(void) {
        log_file = tmpfile();
        assert_non_null(log_file);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        assert_true(saved_stderr >= 0);
        assert_true(dup2(fileno(log_file), STDERR_FILENO) >= 0);
}

static char *log_end(void) {
        long n;
        char *text;

        fflush(stderr);
        assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
        close(saved_stderr);
        n = ftell(log_file);
        assert_true(n >= 0);
        text = calloc(1, (size_t) n + 1);
        assert_non_null(text);
        rewind(log_file);
        assert_int_equal(fread(text, 1, (size_t) n, log_file), (size_t) n);
        fclose(log_file);
        return text;
}

static void test_declared_regions_are_registered_and_never_removed(void **state) {
        static const ConfigRegion both[] = { { "gpu0", 8 * GIB }, { "drm/0000:03:00.0/vram0", UINT64_MAX } };
        Fixture *f = *state;
        Config c = config_of(2, both);

        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        assert_true(capacity_of(f, "gpu0") == (int64_t) (8 * GIB));
        assert_true(capacity_of(f, "drm/0000:03:00.0/vram0") == INT64_MAX);
        set_high(f, "/a", "drm/0000:03:00.0/vram0", 1 * MIB);

        /* A reload with a file that names gpu0 alone: vram0 stays, its limits too. */
        c = config_of(1, both);
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        assert_true(capacity_of(f, "drm/0000:03:00.0/vram0") == INT64_MAX);
        assert_true(info_of(f, "/a", "drm/0000:03:00.0/vram0").high == 1 * MIB);
        /* And applying the same again changes nothing: the limit is there. */
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        assert_true(capacity_of(f, "gpu0") == (int64_t) (8 * GIB));
}

static void test_a_new_capacity_is_taken_while_nothing_is_charged(void **state) {
        static const ConfigRegion small[] = { { "gpu0", 8 * GIB } }, large[] = { { "gpu0", 16 * GIB } },
                                  larger[] = { { "gpu0", 32 * GIB } };
        Fixture *f = *state;
        Config c = config_of(1, small);
        MemChargeResult res = {};
        MemGroup *g = NULL;
        char *log;

        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        set_high(f, "/a", "gpu0", 1 * GIB);

        /* Nothing charged: registered again with the file's capacity,
         * which drops /a's high there. */
        c = config_of(1, large);
        log_begin();
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        log = log_end();
        assert_true(capacity_of(f, "gpu0") == (int64_t) (16 * GIB));
        assert_true(info_of(f, "/a", "gpu0").high == UINT64_MAX);
        if (!strstr(log, "capacity changed from 8589934592 to 17179869184; the limits its groups had in it are "
                         "dropped"))
                fail_msg("log: %s", log);
        free(log);

        /* Something charged: it keeps its capacity, and says so. */
        assert_int_equal(group_get(f->core, "/a", &g), 0);
        assert_int_equal(region_charge_kept(f->core, g, core_region_lookup(f->core, "gpu0"), 4 * MIB, 0, &res), 0);
        charge_result_done(&res);
        c = config_of(1, larger);
        log_begin();
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        log = log_end();
        assert_true(capacity_of(f, "gpu0") == (int64_t) (16 * GIB));
        assert_true(info_of(f, "/a", "gpu0").kept == 4 * MIB);
        if (!strstr(log, "capacity 34359738368 declared, but 4194304 bytes are charged to it: it keeps its "
                         "capacity 17179869184"))
                fail_msg("log: %s", log);
        free(log);

        /* Once it is empty, the next reload takes the file's. */
        assert_int_equal(region_uncharge_kept_as(f->core, g, core_region_lookup(f->core, "gpu0"), 4 * MIB, false), 0);
        group_unref(g);
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        assert_true(capacity_of(f, "gpu0") == (int64_t) (32 * GIB));
}

static void test_a_region_that_cannot_be_registered_is_an_error(void **state) {
        Fixture *f = *state;
        ConfigRegion many[MEM_REGION_MAX];
        Config c;
        char *log;

        /* One more than a core holds: the others are registered, the last refused. */
        for (int i = 0; i < MEM_REGION_MAX; i++)
                many[i] = (ConfigRegion) { .capacity = GIB };
        for (int i = 0; i < MEM_REGION_MAX; i++)
                snprintf(many[i].name, sizeof(many[i].name), "r%d", i);
        c = config_of(MEM_REGION_MAX - 1, many);
        assert_int_equal(daemon_regions_apply(f->svc, &c), 0);
        c.regions[0] = many[MEM_REGION_MAX - 1];
        log_begin();
        assert_int_equal(daemon_regions_apply(f->svc, &c), -ENOSPC);
        log = log_end();
        assert_non_null(strstr(log, "[regions] region r31 cannot be registered: too many regions"));
        free(log);
        assert_int_equal(capacity_of(f, "r31"), -1);
        assert_true(capacity_of(f, "r30") == (int64_t) GIB);
}

/* Does the running @d have the region @name with @capacity? */
static bool has_region(Daemon *d, const char *name, uint64_t capacity) {
        Service *svc = daemon_service(d);
        MemRegionDesc v[MEM_REGION_MAX];
        Refusal rf;
        int n;

        refusal_init(&rf);
        n = service_list_regions(svc, service_daemon_peer(svc), v, MEM_REGION_MAX, &rf);
        assert_true(n >= 1);
        for (int i = 0; i < n; i++)
                if (strcmp(v[i].name, name) == 0)
                        return v[i].capacity == capacity;
        return false;
}

static void write_conf(const char *dir, const char *regions) {
        char path[128];
        FILE *c;

        snprintf(path, sizeof(path), "%s/memacctd.conf", dir);
        c = fopen(path, "we");
        assert_non_null(c);
        fprintf(c, "[daemon]\nsocket = %s/sock\nstate-dir = %s/state\nworkers = 1\n[cgroup]\nsample-interval = 0\n"
                "[regions]\n%s", dir, dir, regions);
        assert_int_equal(fclose(c), 0);
}

static void test_the_daemon_registers_them_at_start_and_reload(void **state) {
        char dir[] = "/tmp/test-daemon-regions-XXXXXX", conf[128], path[128], cmd[160], *text;
        Args args = { .bus = "none" };
        Daemon *d = NULL;
        size_t n;
        FILE *s;

        (void) state;
        assert_non_null(mkdtemp(dir));
        /* Nothing here is under systemd: no notifications, no implied bus. */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("INVOCATION_ID");
        snprintf(conf, sizeof(conf), "%s/memacctd.conf", dir);
        args.config_path = conf;
        write_conf(dir, "region = gpu0 8G\n");
        assert_int_equal(daemon_new(&args, &d), 0);
        assert_int_equal(daemon_start(d), 0);
        assert_true(has_region(d, "gpu0", 8 * GIB));
        /* A reload adds what the file adds, and removes nothing. */
        write_conf(dir, "region = drm/0000:03:00.0/vram0 max\n");
        assert_int_equal(daemon_reload(d), 0);
        assert_true(has_region(d, "drm/0000:03:00.0/vram0", UINT64_MAX));
        assert_true(has_region(d, "gpu0", 8 * GIB));
        assert_int_equal(daemon_stop(d), 0);
        daemon_free(d);

        /* Both are in the state the stop saved. */
        snprintf(path, sizeof(path), "%s/state/state", dir);
        s = fopen(path, "re");
        assert_non_null(s);
        text = calloc(1, 65536);
        assert_non_null(text);
        n = fread(text, 1, 65535, s);
        fclose(s);
        assert_true(n > 0);
        assert_non_null(strstr(text, "\nregion gpu0 capacity=8589934592\n"));
        assert_non_null(strstr(text, "\nregion drm/0000:03:00.0/vram0 capacity=max\n"));
        free(text);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_declared_regions_are_registered_and_never_removed, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_a_new_capacity_is_taken_while_nothing_is_charged, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_a_region_that_cannot_be_registered_is_an_error, setup,
                                                teardown),
                /* Last: it starts the daemon, which keeps the main thread registered. */
                cmocka_unit_test(test_the_daemon_registers_them_at_start_and_reload),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
