/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations that use the kernel cgroup mirror (service-groups.c,
 * service-charges.c), on a fake memory hierarchy: a temporary directory
 * laid out like the host's, so that the mirror of this very process's
 * cgroup can be found. Import is root's and committed when it changed
 * something; Attach "auto" places a session by its cgroup and commits
 * the mirror it created.
 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/session.h"
#include "service-test.h"
#include "cgroup/mirror.h"

#define PREFIX "/k"
#define NO_SUCH_PID 424242

/* The fake hierarchy of the test running now. */
static char fake[64];
static CgroupMirror *mirror;
static bool fake_v2;

static void put(const char *dir, const char *name, const char *value) {
        char path[PATH_MAX];
        FILE *f;

        assert_true((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path));
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s\n", value);
        fclose(f);
}

/* A cgroup directory below the fake mount, with the files a memory cgroup has. */
static void fake_cgroup(const char *rel, uint64_t max) {
        char dir[PATH_MAX], value[32];

        snprintf(dir, sizeof(dir), "%s%s", fake, strcmp(rel, "/") == 0 ? "" : rel);
        assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
        snprintf(value, sizeof(value), "%llu", (unsigned long long) max);
        if (fake_v2) {
                put(dir, "memory.max", max == UINT64_MAX ? "max" : value);
                put(dir, "memory.high", "max");
                put(dir, "memory.low", "0");
                put(dir, "memory.min", "0");
                put(dir, "memory.current", "8192");
        } else {
                put(dir, "memory.limit_in_bytes", max == UINT64_MAX ? "9223372036854771712" : value);
                put(dir, "memory.soft_limit_in_bytes", "9223372036854771712");
                put(dir, "memory.usage_in_bytes", "8192");
        }
}

/* This process's memory cgroup as the mirror reads it: v1's memory line, else v2's. */
static bool own_cgroup(char *buf, size_t size, bool *ret_v2) {
        char line[PATH_MAX + 64], v2path[PATH_MAX] = "";
        FILE *f = fopen("/proc/self/cgroup", "re");
        bool found = false;

        if (!f)
                return false;
        while (!found && fgets(line, sizeof(line), f)) {
                char *ctl = strchr(line, ':'), *p;

                if (!ctl || !(p = strchr(ctl + 1, ':')))
                        continue;
                *p++ = 0;
                p[strcspn(p, "\n")] = 0;
                if (strstr(ctl + 1, "memory")) {
                        snprintf(buf, size, "%s", p);
                        *ret_v2 = false;
                        found = true;
                } else if (strcmp(line, "0") == 0 && ctl[1] == 0)
                        snprintf(v2path, sizeof(v2path), "%s", p);
        }
        fclose(f);
        if (!found && *v2path) {
                snprintf(buf, size, "%s", v2path);
                *ret_v2 = found = true;
        }
        return found;
}

static int setup(void **state) {
        if (service_setup(state) < 0)
                return -1;
        snprintf(fake, sizeof(fake), "/tmp/memacct-svc-cgfake.XXXXXX");
        fake_v2 = false;
        return mkdtemp(fake) ? 0 : -1;
}

/* A mirror of the fake hierarchy as it is now, installed in the service. */
static void mirror_install(Fixture *f, bool auto_create) {
        int r;

        mirror = cgroup_mirror_free(mirror);
        r = cgroup_mirror_new(f->core, events_notify, service_events(f->svc), fake, PREFIX, auto_create, &mirror);
        assert_int_equal(r, 0);
        assert_true(cgroup_mirror_available(mirror));
        service_set_cgroup(f->svc, mirror);
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

/* The hierarchy's cgroups, laid out before the mirror looks at them. */
static void fake_tree(Fixture *f) {
        fake_cgroup("/", UINT64_MAX);
        fake_cgroup("/web", 64 * MIB);
        fake_cgroup("/web/app", 32 * MIB);
        mirror_install(f, false);
}

/* ---- import ---------------------------------------------------------------- */

static void test_import_by_root_mirrors_the_hierarchy_and_commits(void **state) {
        Fixture *f = *state;
        ServiceImportCounts n = {};
        Refusal rf;

        fake_tree(f);
        refusal_init(&rf);
        assert_not_refused(service_import_cgroups(f->svc, f->root, NULL, NULL, &n, &rf), &rf);
        assert_int_equal(n.created, 3);
        assert_int_equal(fixture_commits(f), 1);
        assert_true(tree_info(f, PREFIX "/web").mirror);
        assert_true(tree_info(f, PREFIX "/web/app").max == 32 * MIB);
        assert_non_null(event_log_find(&f->sink, EVENT_GROUP_ADDED, -1, PREFIX "/web/app"));
        /* Nothing changed since: counted, not committed. */
        assert_not_refused(service_import_cgroups(f->svc, f->root, "/", PREFIX, &n, &rf), &rf);
        assert_int_equal(n.created, 0);
        assert_int_equal(n.unchanged, 3);
        assert_int_equal(fixture_commits(f), 1);
}

static void test_import_with_a_mirror_is_still_root_only(void **state) {
        Fixture *f = *state;
        ServiceImportCounts n = {};
        Refusal rf;

        fake_tree(f);
        refusal_init(&rf);
        assert_refused(service_import_cgroups(f->svc, f->delegate, NULL, NULL, &n, &rf), &rf, -EPERM,
                       "only root imports cgroups");
        assert_false(tree_exists(f, PREFIX));
        assert_int_equal(fixture_commits(f), 0);
        assert_int_equal(f->sink.n, 0);
}

static void test_import_of_a_missing_cgroup_is_refused(void **state) {
        Fixture *f = *state;
        ServiceImportCounts n = {};
        Refusal rf;

        fake_tree(f);
        refusal_init(&rf);
        assert_int_equal(service_import_cgroups(f->svc, f->root, "/nope", NULL, &n, &rf), -ENOENT);
        assert_int_equal(rf.error, -ENOENT);
        assert_non_null(strstr(rf.message, "cgroup /nope: no such cgroup"));
        assert_int_equal(service_import_cgroups(f->svc, f->root, "relative", NULL, &n, &rf), -EINVAL);
        assert_int_equal(rf.error, -EINVAL);
        assert_false(tree_exists(f, PREFIX "/nope"));
        assert_int_equal(fixture_commits(f), 0);
}

/* SetLimits on a mirror makes the limit the user's: a re-import keeps it
 * and says so; on a plain group it marks nothing; a reset gives it back. */
static void test_set_limits_on_a_mirror_is_kept_by_import(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MAX, .max = 16 * MIB };
        ServiceImportCounts n = {};
        MemGroup *g = NULL;
        Refusal rf;

        fake_tree(f);
        refusal_init(&rf);
        assert_not_refused(service_import_cgroups(f->svc, f->root, NULL, NULL, &n, &rf), &rf);
        assert_not_refused(service_set_limits(f->svc, f->root, PREFIX "/web/app", &l, false, &rf), &rf);
        assert_int_equal(group_get(f->core, PREFIX "/web/app", &g), 0);
        assert_int_equal(group_user_limits(g), MEM_LIMIT_MAX);
        g = group_unref(g);
        assert_int_equal(group_create(f->core, "/plain", 0), 0);
        assert_not_refused(service_set_limits(f->svc, f->root, "/plain", &l, false, &rf), &rf);
        assert_int_equal(group_get(f->core, "/plain", &g), 0);
        assert_int_equal(group_user_limits(g), 0);
        g = group_unref(g);

        assert_not_refused(service_import_cgroups(f->svc, f->root, NULL, NULL, &n, &rf), &rf);
        assert_int_equal(n.kept, 1);
        assert_int_equal(n.unchanged, 3);
        assert_true(tree_info(f, PREFIX "/web/app").max == 16 * MIB);

        assert_not_refused(service_import_cgroups_with(f->svc, f->root, NULL, NULL, SERVICE_IMPORT_RESET_LIMITS,
                                                       NULL, NULL, &n, &rf), &rf);
        assert_int_equal(n.kept, 0);
        assert_int_equal(n.updated, 1);
        assert_true(tree_info(f, PREFIX "/web/app").max == 32 * MIB);
}

/* ---- attach "auto" ------------------------------------------------------------- */

/*
 * Lay out this process's own cgroup in the fake hierarchy and return the
 * group that mirrors it; skips the test where this host's cgroup cannot
 * be mirrored within the test core's depth.
 */
static const char *own_mirror(Fixture *f, char *group, size_t size) {
        char cg[PATH_MAX], rel[PATH_MAX];
        MemPathError why;
        bool v2;

        if (!own_cgroup(cg, sizeof(cg), &v2))
                skip();
        /* A cgroup path too long to mirror is one this host cannot test. */
        if ((size_t) snprintf(group, size, "%s%s", PREFIX, strcmp(cg, "/") == 0 ? "" : cg) >= size ||
            mem_path_check(group, TEST_MAX_DEPTH, &why) < 0)
                skip();
        fake_v2 = v2;
        if (v2)
                put(fake, "cgroup.controllers", "memory");
        fake_cgroup("/", UINT64_MAX);
        /* Each ancestor, then the cgroup itself. */
        for (size_t i = 1; cg[i - 1]; i++)
                if (cg[i] == '/' || cg[i] == 0) {
                        snprintf(rel, sizeof(rel), "%.*s", (int) i, cg);
                        fake_cgroup(rel, UINT64_MAX);
                }
        mirror_install(f, true);
        return group;
}

static void test_attach_auto_places_the_session_by_its_cgroup_and_commits(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        Peer *q = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        char group[MEM_PATH_MAX + 1];
        Refusal rf;

        own_mirror(f, group, sizeof(group));
        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, p, "auto", &rf), &rf);
        assert_true(tree_exists(f, group));
        assert_true(tree_info(f, group).mirror);
        assert_int_equal(tree_info(f, group).nr_attached, 1);
        assert_int_equal(fixture_commits(f), 1);
        /* The mirror exists now: placed there again, nothing new to save. */
        assert_not_refused(service_attach(f->svc, q, "", &rf), &rf);
        assert_int_equal(tree_info(f, group).nr_attached, 2);
        assert_int_equal(fixture_commits(f), 1);
}

static void test_attach_auto_without_auto_create_says_how_to_mirror(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        char group[MEM_PATH_MAX + 1], cg[PATH_MAX];
        bool v2;
        Refusal rf;

        own_mirror(f, group, sizeof(group));
        assert_true(own_cgroup(cg, sizeof(cg), &v2));
        mirror_install(f, false);
        refusal_init(&rf);
        assert_refused(service_attach(f->svc, p, "auto", &rf), &rf, -ENOENT,
                       "%s: no mirror of kernel cgroup %s (import it with memacctctl import-cgroups, "
                       "or set [cgroup] auto-create = yes)",
                       group, cg);
        assert_null(atomic_load(&p->session->group));
        assert_int_equal(fixture_commits(f), 0);
}

/* Every group's path, owner, mirror flag and max: what a refused call must leave as it was. */
static void tree_dump(Fixture *f, char *buf, size_t size) {
        static const char *const paths[] = { "/", "/a", "/b", "/d", "/d/x", "/d/x/y", "/e", PREFIX };
        size_t n = 0;

        buf[0] = 0;
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && n < size; i++) {
                MemGroupInfo in;

                if (!tree_exists(f, paths[i]))
                        continue;
                in = tree_info(f, paths[i]);
                n += (size_t) snprintf(buf + n, size - n, "%s owner=%u mirror=%d max=%llu;", paths[i],
                                       (unsigned) in.owner, (int) in.mirror, (unsigned long long) in.max);
        }
        n += (size_t) snprintf(buf + n, n < size ? size - n : 0, "groups=%u", core_group_count(f->core));
}

/*
 * With auto-create on, an Attach "auto" that is refused (the caller is not
 * root) has no side effect: no mirror is made, and a group root made at
 * the mirror's path is not taken over (its limits stay, it is no mirror).
 */
static void test_refused_attach_auto_changes_nothing(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_with_pid(f, UID_DELEGATE, getpid(), true, false);
        char group[MEM_PATH_MAX + 1], before[2048], after[2048];
        MemLimits l = limits_max(3 * MIB);
        Refusal rf;
        int r;

        own_mirror(f, group, sizeof(group));
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->root, PREFIX, NULL, false, 0, &rf), &rf);
        tree_dump(f, before, sizeof(before));
        r = service_attach(f->svc, p, "auto", &rf);
        assert_int_equal(r, -EPERM);
        tree_dump(f, after, sizeof(after));
        assert_string_equal(after, before);
        assert_false(tree_exists(f, group) && tree_info(f, group).mirror);
        /* Root made a group where the mirror would go: the refused attach takes nothing over. */
        if (strcmp(group, PREFIX) != 0 && !tree_exists(f, group)) {
                char parent[MEM_PATH_MAX + 1];

                snprintf(parent, sizeof(parent), "%s", group);
                *strrchr(parent, '/') = 0;
                if (tree_exists(f, parent)) {
                        assert_not_refused(service_create_group(f->svc, f->root, group, &l, false, 0, &rf), &rf);
                        tree_dump(f, before, sizeof(before));
                        refusal_init(&rf);
                        assert_int_equal(service_attach(f->svc, p, "auto", &rf), -EPERM);
                        assert_false(tree_info(f, group).mirror);
                        assert_true(tree_info(f, group).max == 3 * MIB);
                        tree_dump(f, after, sizeof(after));
                        assert_string_equal(after, before);
                }
        }
        assert_null(atomic_load(&p->session->group));
}

static void test_attach_auto_of_a_process_that_is_gone_is_refused(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_with_pid(f, UID_ROOT, NO_SUCH_PID, true, false);
        Refusal rf;

        if (kill(NO_SUCH_PID, 0) == 0 || errno != ESRCH)
                skip(); /* there is one on this host */
        fake_tree(f);
        refusal_init(&rf);
        assert_refused(service_attach(f->svc, p, "auto", &rf), &rf, -ESRCH,
                       "pid %d: cannot read its memory cgroup: %s", NO_SUCH_PID, strerror(ESRCH));
        assert_null(atomic_load(&p->session->group));
        assert_int_equal(fixture_commits(f), 0);
}

#define CGROUP_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                CGROUP_TEST(test_import_by_root_mirrors_the_hierarchy_and_commits),
                CGROUP_TEST(test_import_with_a_mirror_is_still_root_only),
                CGROUP_TEST(test_import_of_a_missing_cgroup_is_refused),
                CGROUP_TEST(test_set_limits_on_a_mirror_is_kept_by_import),
                CGROUP_TEST(test_attach_auto_places_the_session_by_its_cgroup_and_commits),
                CGROUP_TEST(test_attach_auto_without_auto_create_says_how_to_mirror),
                CGROUP_TEST(test_refused_attach_auto_changes_nothing),
                CGROUP_TEST(test_attach_auto_of_a_process_that_is_gone_is_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
