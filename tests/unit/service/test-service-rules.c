/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules (service/placement.c, service-rules.c): the longest
 * rule by whole path components wins ("/a" never covers "/ab"), the
 * table survives a restart through its file and a damaged file is set
 * aside, only root adds or removes, a rule names an existing group, and
 * an Attach "auto" of a process in a rule's cgroup lands in its group.
 */

#include <errno.h>
#include <fcntl.h>
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

#include "core/session.h"
#include "service-test.h"
#include "service/placement.h"

static void test_covers_by_components(void **state) {
        (void) state;
        assert_true(placement_covers("/a", "/a"));
        assert_true(placement_covers("/a", "/a/b"));
        assert_true(placement_covers("/a/b", "/a/b/c/d"));
        assert_false(placement_covers("/a", "/ab"));
        assert_false(placement_covers("/a/b", "/a/bc"));
        assert_false(placement_covers("/a/b", "/a"));
        assert_true(placement_covers("/", "/"));
        assert_true(placement_covers("/", "/anything/below"));
}

static void test_cgroup_check(void **state) {
        char *longer = malloc(PLACEMENT_CGROUP_MAX + 2);

        (void) state;
        assert_int_equal(placement_cgroup_check("/"), 0);
        assert_int_equal(placement_cgroup_check("/system.slice/x.scope"), 0);
        assert_int_equal(placement_cgroup_check("relative"), -EINVAL);
        assert_int_equal(placement_cgroup_check(""), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a/"), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a//b"), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a/../b"), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a/./b"), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a\tb"), -EINVAL);
        assert_int_equal(placement_cgroup_check("/a\nb"), -EINVAL);
        assert_non_null(longer);
        longer[0] = '/';
        memset(longer + 1, 'x', PLACEMENT_CGROUP_MAX);
        longer[PLACEMENT_CGROUP_MAX + 1] = 0;
        assert_int_equal(placement_cgroup_check(longer), -ENAMETOOLONG);
        free(longer);
}

static const char *match(Placement *pl, const char *cgroup) {
        static char group[MEM_PATH_MAX + 1];
        int r = placement_match(pl, cgroup, group, sizeof(group), NULL, 0);

        return r == 0 ? group : r == -ENOENT ? "none" : "error";
}

static void test_longest_prefix_wins(void **state) {
        Placement *pl = NULL;

        (void) state;
        assert_int_equal(placement_new(NULL, &pl), 0);
        assert_string_equal(match(pl, "/a"), "none");
        assert_int_equal(placement_add(pl, "/a", "/ga"), 0);
        assert_int_equal(placement_add(pl, "/a/b", "/gab"), 0);
        assert_int_equal(placement_add(pl, "/a/b/c/d", "/gabcd"), 0);
        assert_string_equal(match(pl, "/a"), "/ga");
        assert_string_equal(match(pl, "/a/x"), "/ga");
        assert_string_equal(match(pl, "/a/b"), "/gab");
        assert_string_equal(match(pl, "/a/b/c"), "/gab");
        assert_string_equal(match(pl, "/a/b/c/d/e"), "/gabcd");
        assert_string_equal(match(pl, "/a/bc"), "/ga");
        assert_string_equal(match(pl, "/ab"), "none");
        assert_string_equal(match(pl, "/"), "none");
        /* "/" is the last resort, and only that. */
        assert_int_equal(placement_add(pl, "/", "/groot"), 0);
        assert_string_equal(match(pl, "/ab"), "/groot");
        assert_string_equal(match(pl, "/a/b"), "/gab");
        /* A rule of the same cgroup replaces the one there. */
        assert_int_equal(placement_add(pl, "/a/b", "/other"), 1);
        assert_string_equal(match(pl, "/a/b/c"), "/other");
        assert_int_equal(placement_count(pl), 4);
        assert_int_equal(placement_remove(pl, "/a/b"), 0);
        assert_int_equal(placement_remove(pl, "/a/b"), -ENOENT);
        assert_string_equal(match(pl, "/a/b/c"), "/ga");
        assert_int_equal(placement_count(pl), 3);
        placement_free(pl);
}

static int collect(void *userdata, const char *cgroup, const char *group) {
        char *buf = userdata;
        size_t n = strlen(buf);

        snprintf(buf + n, 1024 - n, "%s=%s;", cgroup, group);
        return 0;
}

/* ServiceRuleFn: "cgroup=group;" for a rule, "cgroup~group;" for a mirror. */
static int collect_kind(void *userdata, const char *cgroup, const char *group, bool mirror) {
        char *buf = userdata;
        size_t n = strlen(buf);

        snprintf(buf + n, 1024 - n, "%s%s%s;", cgroup, mirror ? "~" : "=", group);
        return 0;
}

static void remove_file(const char *dir, const char *name) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        (void) unlink(path);
}

static void test_rules_survive_a_restart(void **state) {
        char dir[] = "/tmp/test-rules-XXXXXX", path[PATH_MAX], listed[1024] = "";
        Placement *pl = NULL, *again = NULL;
        struct stat st;
        FILE *f;

        (void) state;
        assert_non_null(mkdtemp(dir));
        assert_int_equal(placement_new(dir, &pl), 0);
        assert_int_equal(placement_add(pl, "/c/one", "/g1"), 0);
        assert_int_equal(placement_add(pl, "/b", "/g2"), 0);
        assert_int_equal(placement_add(pl, "/c/two", "/g3"), 0);
        assert_int_equal(placement_remove(pl, "/c/two"), 0);
        placement_free(pl);

        /* As the daemon starts: an empty table, then the file. */
        assert_int_equal(placement_new(NULL, &again), 0);
        assert_int_equal(placement_load(again, dir), 2);
        assert_int_equal(placement_list(again, collect, listed), 0);
        assert_string_equal(listed, "/b=/g2;/c/one=/g1;");
        assert_string_equal(match(again, "/c/one/x"), "/g1");
        /* It saves where it loaded from. */
        assert_int_equal(placement_add(again, "/d", "/g4"), 0);
        placement_free(again);
        assert_int_equal(placement_new(NULL, &again), 0);
        assert_int_equal(placement_load(again, dir), 3);

        /* A file cut short is set aside, and the table is empty. */
        snprintf(path, sizeof(path), "%s/%s", dir, PLACEMENT_FILE);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("memacctd-rules 1\n/b\t/g2\n", f);
        fclose(f);
        assert_int_equal(placement_load(again, dir), 0);
        assert_int_equal(placement_count(again), 0);
        snprintf(path, sizeof(path), "%s/%s", dir, PLACEMENT_FILE_BAD);
        assert_int_equal(stat(path, &st), 0);
        placement_free(again);

        remove_file(dir, PLACEMENT_FILE);
        remove_file(dir, PLACEMENT_FILE_BAD);
        assert_int_equal(rmdir(dir), 0);
}

static void test_parse_refuses_damage(void **state) {
        static const char *bad[] = {
                "",
                "memacctd-rules 2\nend 0\n",
                "memacctd-rules 1\n",
                "memacctd-rules 1\n/a\t/g\nend 2\n",
                "memacctd-rules 1\n/b\t/g\n/a\t/g\nend 2\n", /* unsorted */
                "memacctd-rules 1\n/a\t/g\n/a\t/h\nend 2\n", /* twice */
                "memacctd-rules 1\na\t/g\nend 1\n",
                "memacctd-rules 1\n/a\tg\nend 1\n",
                "memacctd-rules 1\n/a /g\nend 1\n",
                "memacctd-rules 1\nend 0\nmore\n",
        };
        Placement *pl = NULL;
        const char *good = "memacctd-rules 1\n/a\t/g\n/a/b\t/h\nend 2\n";

        (void) state;
        assert_int_equal(placement_new(NULL, &pl), 0);
        assert_int_equal(placement_parse(pl, good, strlen(good)), 2);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(placement_parse(pl, bad[i], strlen(bad[i])), -EBADMSG);
                assert_int_equal(placement_count(pl), 0);
        }
        placement_free(pl);
}

static void test_only_root_adds_or_removes(void **state) {
        Fixture *f = *state;
        char listed[1024] = "";
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_add_rule(f->svc, f->delegate, "/x", "/d", &rf);
        assert_refused(r, &rf, -EPERM, "only root adds placement rules");
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/x", "/d", &rf);
        assert_not_refused(r, &rf);
        refusal_init(&rf);
        r = service_remove_rule(f->svc, f->delegate, "/x", &rf);
        assert_refused(r, &rf, -EPERM, "only root removes placement rules");
        refusal_init(&rf);
        r = service_list_rules(f->svc, f->delegate, true, collect_kind, listed, &rf);
        assert_not_refused(r, &rf);
        assert_string_equal(listed, "/x=/d;");
        refusal_init(&rf);
        r = service_remove_rule(f->svc, f->root, "/x", &rf);
        assert_not_refused(r, &rf);
        refusal_init(&rf);
        r = service_remove_rule(f->svc, f->root, "/x", &rf);
        assert_refused(r, &rf, -ENOENT, "no placement rule for kernel cgroup /x");
        remove_file(f->state_dir, PLACEMENT_FILE);
}

static void test_rule_needs_its_group_and_a_cgroup_path(void **state) {
        Fixture *f = *state;
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/x", "/nonesuch", &rf);
        assert_int_equal(r, -ENOENT);
        assert_int_equal(rf.error, -ENOENT);
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "x/y", "/a", &rf);
        assert_refused(r, &rf, -EINVAL,
                       "'x/y' is not a kernel cgroup path (absolute, no empty, '.' or '..' part, no trailing '/')");
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/x", "", &rf);
        assert_refused(r, &rf, -EINVAL, "no group given");
}

/* Reads are restricted: a delegate lists only the rules of the groups it may read. */
static void test_list_as_groups_are_read(void **state) {
        Fixture *f = *state;
        char listed[1024] = "";
        Refusal rf;
        int r;

        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/k/a", "/a", &rf), &rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/k/d", "/d/x", &rf), &rf);
        fixture_settings(f, READ_ACCESS_OWNER, 0);
        r = service_list_rules(f->svc, f->delegate, true, collect_kind, listed, &rf);
        assert_not_refused(r, &rf);
        assert_string_equal(listed, "/k/d=/d/x;");
        listed[0] = 0;
        r = service_list_rules(f->svc, f->root, true, collect_kind, listed, &rf);
        assert_not_refused(r, &rf);
        assert_string_equal(listed, "/k/a=/a;/k/d=/d/x;");
        remove_file(f->state_dir, PLACEMENT_FILE);
}

/* This process's cgroup, read as the daemon reads it. */
static void test_auto_attach_follows_the_rule(void **state) {
        Fixture *f = *state;
        char cg[PLACEMENT_CGROUP_MAX + 1], parent[PLACEMENT_CGROUP_MAX + 1];
        ServiceChargeResult res;
        ServiceCharge c;
        Peer *me;
        Refusal rf;
        int r;

        r = placement_proc_cgroup(getpid(), cg, sizeof(cg));
        if (r < 0) {
                print_message("SKIP: no memory cgroup line in /proc/self/cgroup (%s)\n", strerror(-r));
                skip();
        }
        /* The rule of the cgroup's parent covers it, as a container's
         * cgroup covers the process's sub-cgroups. */
        snprintf(parent, sizeof(parent), "%s", cg);
        if (strcmp(parent, "/") != 0) {
                char *slash = strrchr(parent, '/');

                slash[slash == parent ? 1 : 0] = 0;
        }
        me = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, parent, "/b", &rf), &rf);
        if (strcmp(cg, "/") != 0)
                assert_not_refused(service_add_rule(f->svc, f->root, "/", "/a", &rf), &rf);
        r = service_attach(f->svc, me, "auto", &rf);
        assert_not_refused(r, &rf);
        c = session_bytes(NULL, MIB);
        r = service_charge(f->svc, me, &c, &res, &rf);
        assert_not_refused(r, &rf);
        assert_int_equal(tree_usage(f, "/b"), MIB);
        assert_int_equal(tree_usage(f, "/a"), 0);
        remove_file(f->state_dir, PLACEMENT_FILE);
}

/* With no rule covering it, "auto" does what it did before: the mirror,
 * which this fixture has none of. */
static void test_no_rule_falls_back_to_the_mirror(void **state) {
        Fixture *f = *state;
        Peer *me = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        Refusal rf;
        int r;

        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/no/such/cgroup/here", "/b", &rf), &rf);
        r = service_attach(f->svc, me, "auto", &rf);
        assert_refused(r, &rf, -ENOENT, "no group given, and no kernel cgroup mirror to place the session by");
        remove_file(f->state_dir, PLACEMENT_FILE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_covers_by_components),
                cmocka_unit_test(test_cgroup_check),
                cmocka_unit_test(test_longest_prefix_wins),
                cmocka_unit_test(test_rules_survive_a_restart),
                cmocka_unit_test(test_parse_refuses_damage),
                SERVICE_TEST(test_only_root_adds_or_removes),
                SERVICE_TEST(test_rule_needs_its_group_and_a_cgroup_path),
                SERVICE_TEST(test_list_as_groups_are_read),
                SERVICE_TEST(test_auto_attach_follows_the_rule),
                SERVICE_TEST(test_no_rule_falls_back_to_the_mirror),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
