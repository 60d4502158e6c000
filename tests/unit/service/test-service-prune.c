/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pruning the mirror on a fake v1 hierarchy: the mirrors of cgroups that
 * vanished go, deepest first, as one durable change; one with a session,
 * kept charges or a group of its own below it stays, with the reason; the
 * mirrors of cgroups still there are untouched; only root prunes.
 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "service-test.h"
#include "cgroup/mirror.h"

#define PREFIX "/k"

static char fake[64];
static CgroupMirror *mirror;

static void put(const char *dir, const char *name, const char *value) {
        char path[PATH_MAX];
        FILE *f;

        assert_true((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path));
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s\n", value);
        fclose(f);
}

static void fake_cgroup(const char *rel) {
        char dir[PATH_MAX];

        snprintf(dir, sizeof(dir), "%s%s", fake, strcmp(rel, "/") == 0 ? "" : rel);
        assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
        put(dir, "memory.limit_in_bytes", "9223372036854771712");
        put(dir, "memory.soft_limit_in_bytes", "9223372036854771712");
        put(dir, "memory.usage_in_bytes", "8192");
}

/* The kernel removed the cgroup @rel (an empty one, as rmdir needs). */
static void fake_vanish(const char *rel) {
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s%s'", fake, rel);
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
        Fixture *f;
        CgroupCounts n;
        Refusal rf;

        if (service_setup(state) < 0)
                return -1;
        f = *state;
        snprintf(fake, sizeof(fake), "/tmp/memacct-svc-prune.XXXXXX");
        if (!mkdtemp(fake))
                return -1;
        fake_cgroup("/");
        fake_cgroup("/web");
        fake_cgroup("/web/app");
        fake_cgroup("/db");
        if (cgroup_mirror_new(f->core, events_notify, service_events(f->svc), fake, PREFIX, false, &mirror) < 0)
                return -1;
        service_set_cgroup(f->svc, mirror);
        refusal_init(&rf);
        return cgroup_mirror_import(mirror, "/", NULL, &n, &rf) == 4 ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        Fixture *f = *state;

        service_set_cgroup(f->svc, NULL);
        mirror = cgroup_mirror_free(mirror);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake);
        service_teardown(state);
        return system(cmd) == 0 ? 0 : -1;
}

#define PRUNE_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

typedef struct Told {
        char text[512];
} Told;

static void told(void *userdata, const char *group, const char *why) {
        Told *t = userdata;
        size_t n = strlen(t->text);

        snprintf(t->text + n, sizeof(t->text) - n, "%s:%s;", group, why ? why : "removed");
}

static void test_prune_removes_vanished_mirrors_deepest_first(void **state) {
        Fixture *f = *state;
        unsigned before = fixture_commits(f);
        Told t = {};
        Refusal rf;

        fake_vanish("/web");
        refusal_init(&rf);
        assert_int_equal(service_prune_mirrors(f->svc, f->root, told, &t, &rf), 2);
        assert_string_equal(t.text, PREFIX "/web/app:removed;" PREFIX "/web:removed;");
        assert_false(tree_exists(f, PREFIX "/web"));
        assert_true(tree_exists(f, PREFIX "/db"));
        assert_true(tree_exists(f, PREFIX));
        assert_int_equal(fixture_commits(f), before + 1);
        assert_non_null(event_log_find(&f->sink, EVENT_GROUP_REMOVED, -1, PREFIX "/web/app"));
        /* Nothing left to do: a second prune removes nothing, commits nothing. */
        t.text[0] = 0;
        assert_int_equal(service_prune_mirrors(f->svc, f->root, told, &t, &rf), 0);
        assert_string_equal(t.text, "");
        assert_int_equal(fixture_commits(f), before + 1);
}

static void test_prune_keeps_a_mirror_in_use_and_says_why(void **state) {
        Fixture *f = *state;
        Told t = {};
        Refusal rf;

        tree_create(f, PREFIX "/db/mine", 0);
        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, f->root, PREFIX "/web/app", &rf),
                           &rf);
        fake_vanish("/web");
        fake_vanish("/db");
        assert_int_equal(service_prune_mirrors(f->svc, f->root, told, &t, &rf), 0);
        assert_string_equal(t.text, PREFIX "/web/app:sessions are attached;"
                                    PREFIX "/web:a mirror below it stays;"
                                    PREFIX "/db:it has groups below it that are not mirrors;");
        assert_true(tree_exists(f, PREFIX "/web/app"));
        assert_true(tree_exists(f, PREFIX "/db"));
}

static void test_prune_keeps_kept_charges(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        ServiceCharge c = kept_bytes(PREFIX "/db", PAGE);
        Told t = {};
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        fake_vanish("/db");
        assert_int_equal(service_prune_mirrors(f->svc, f->root, told, &t, &rf), 0);
        assert_string_equal(t.text, PREFIX "/db:it holds kept charges;");
}

static void test_prune_is_root_only(void **state) {
        Fixture *f = *state;
        Refusal rf;

        fake_vanish("/db");
        refusal_init(&rf);
        assert_refused(service_prune_mirrors(f->svc, f->delegate, NULL, NULL, &rf), &rf, -EPERM,
                       "only root prunes cgroup mirrors");
        assert_true(tree_exists(f, PREFIX "/db"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                PRUNE_TEST(test_prune_removes_vanished_mirrors_deepest_first),
                PRUNE_TEST(test_prune_keeps_a_mirror_in_use_and_says_why),
                PRUNE_TEST(test_prune_keeps_kept_charges),
                PRUNE_TEST(test_prune_is_root_only),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
