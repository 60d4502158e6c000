/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules (cgroup/placement.c, service-placement.c): the longest
 * rule by whole path components wins ("/a" never covers "/ab"), the
 * table survives a restart through its file and a damaged file is set
 * aside, only root adds or removes, a rule names an existing group, and
 * an Attach "auto" of a process in a rule's cgroup lands in its group.
 * The kernel cgroup mirrors (a fake v1 hierarchy) are rules of kind
 * mirror: listed with the explicit ones, not removable as rules, and
 * consulted after every explicit rule: the cgroup's own mirror, else its
 * nearest mirrored ancestor's.
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
#include "cgroup/mirror.h"
#include "cgroup/placement.h"
#include "service/service-internal.h"

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
        assert_int_equal(placement_add(pl, "/a", "/ga", 0), 0);
        assert_int_equal(placement_add(pl, "/a/b", "/gab", 0), 0);
        assert_int_equal(placement_add(pl, "/a/b/c/d", "/gabcd", 0), 0);
        assert_string_equal(match(pl, "/a"), "/ga");
        assert_string_equal(match(pl, "/a/x"), "/ga");
        assert_string_equal(match(pl, "/a/b"), "/gab");
        assert_string_equal(match(pl, "/a/b/c"), "/gab");
        assert_string_equal(match(pl, "/a/b/c/d/e"), "/gabcd");
        assert_string_equal(match(pl, "/a/bc"), "/ga");
        assert_string_equal(match(pl, "/ab"), "none");
        assert_string_equal(match(pl, "/"), "none");
        /* "/" is the last resort, and only that. */
        assert_int_equal(placement_add(pl, "/", "/groot", 0), 0);
        assert_string_equal(match(pl, "/ab"), "/groot");
        assert_string_equal(match(pl, "/a/b"), "/gab");
        /* One cgroup, one rule: the same again is no change, another is refused. */
        assert_int_equal(placement_add(pl, "/a/b", "/gab", 0), 1);
        assert_int_equal(placement_add(pl, "/a/b", "/other", 0), -EEXIST);
        assert_int_equal(placement_add(pl, "/a/b", "/gab", PLACEMENT_CONFINE), -EEXIST);
        assert_string_equal(match(pl, "/a/b/c"), "/gab");
        assert_int_equal(placement_count(pl), 4);
        assert_int_equal(placement_remove(pl, "/a/b"), 0);
        assert_int_equal(placement_remove(pl, "/a/b"), -ENOENT);
        assert_string_equal(match(pl, "/a/b/c"), "/ga");
        assert_int_equal(placement_count(pl), 3);
        placement_free(pl);
}

static int collect(void *userdata, const char *cgroup, const char *group, unsigned flags) {
        char *buf = userdata;
        size_t n = strlen(buf);

        snprintf(buf + n, 1024 - n, "%s=%s%s;", cgroup, group, flags & PLACEMENT_CONFINE ? "!" : "");
        return 0;
}

/* ServiceRuleFn: "cgroup=group;" for a rule, "cgroup~group;" for a mirror. */
static int collect_kind(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags) {
        char *buf = userdata;
        size_t n = strlen(buf);

        (void) flags;
        snprintf(buf + n, 1024 - n, "%s%s%s;", cgroup, mirror ? "~" : "=", group);
        return 0;
}

/* Confinement goes by the nearest confining rule at or above the cgroup, whatever plain rules lie between. */
static void test_confinement_is_the_nearest_confining_rule(void **state) {
        char group[64];
        Placement *pl = NULL;

        (void) state;
        assert_int_equal(placement_new(NULL, &pl), 0);
        assert_int_equal(placement_confinement(pl, "/c/x", group, sizeof(group)), -ENOENT);
        assert_int_equal(placement_add(pl, "/c", "/gc", PLACEMENT_CONFINE), 0);
        assert_int_equal(placement_add(pl, "/c/x", "/gx", 0), 0);
        assert_int_equal(placement_add(pl, "/c/x/y", "/gy", PLACEMENT_CONFINE), 0);
        assert_int_equal(placement_confinement(pl, "/c/x/z", group, sizeof(group)), 0);
        assert_string_equal(group, "/gc");
        assert_int_equal(placement_confinement(pl, "/c/x/y/w", group, sizeof(group)), 0);
        assert_string_equal(group, "/gy");
        assert_int_equal(placement_confinement(pl, "/cc", group, sizeof(group)), -ENOENT);
        assert_int_equal(placement_confinement(pl, "/", group, sizeof(group)), -ENOENT);
        /* Placement itself goes by the longest rule of either kind. */
        assert_string_equal(match(pl, "/c/x/z"), "/gx");
        assert_int_equal(placement_confining(pl), 2);
        placement_free(pl);
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
        assert_int_equal(placement_add(pl, "/c/one", "/g1", 0), 0);
        assert_int_equal(placement_add(pl, "/b", "/g2", 0), 0);
        assert_int_equal(placement_add(pl, "/c/two", "/g3", 0), 0);
        assert_int_equal(placement_remove(pl, "/c/two"), 0);
        placement_free(pl);

        /* As the daemon starts: an empty table, then the file. */
        assert_int_equal(placement_new(NULL, &again), 0);
        assert_int_equal(placement_load(again, dir), 2);
        assert_int_equal(placement_list(again, collect, listed), 0);
        assert_string_equal(listed, "/b=/g2;/c/one=/g1;");
        assert_string_equal(match(again, "/c/one/x"), "/g1");
        /* It saves where it loaded from. */
        assert_int_equal(placement_add(again, "/d", "/g4", 0), 0);
        /* A confining rule keeps its flag across a restart (a file of version 2). */
        assert_int_equal(placement_add(again, "/e", "/g5", PLACEMENT_CONFINE), 0);
        placement_free(again);
        assert_int_equal(placement_new(NULL, &again), 0);
        assert_int_equal(placement_load(again, dir), 4);
        listed[0] = 0;
        assert_int_equal(placement_list(again, collect, listed), 0);
        assert_string_equal(listed, "/b=/g2;/c/one=/g1;/d=/g4;/e=/g5!;");
        assert_int_equal(placement_confining(again), 1);
        assert_int_equal(placement_remove(again, "/e"), 0);
        assert_int_equal(placement_confining(again), 0);

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
                "memacctd-rules 3\nend 0\n",
                "memacctd-rules 1\n/a\t/g\tconfine\nend 1\n", /* a flag needs version 2 */
                "memacctd-rules 2\n/a\t/g\tbogus\nend 1\n",
                "memacctd-rules 2\n/a\t/g\tconfine\textra\nend 1\n",
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
        assert_int_equal(placement_confining(pl), 0);
        good = "memacctd-rules 2\n/a\t/g\tconfine\n/a/b\t/h\nend 2\n";
        assert_int_equal(placement_parse(pl, good, strlen(good)), 2);
        assert_int_equal(placement_confining(pl), 1);
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
        r = service_add_rule(f->svc, f->delegate, "/x", "/d", 0, &rf);
        assert_refused(r, &rf, -EPERM, "only root adds placement rules");
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/x", "/d", 0, &rf);
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
        r = service_add_rule(f->svc, f->root, "/x", "/nonesuch", 0, &rf);
        assert_int_equal(r, -ENOENT);
        assert_int_equal(rf.error, -ENOENT);
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "x/y", "/a", 0, &rf);
        assert_refused(r, &rf, -EINVAL,
                       "'x/y' is not a kernel cgroup path (absolute, no empty, '.' or '..' part, no trailing '/')");
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/x", "", 0, &rf);
        assert_refused(r, &rf, -EINVAL, "no group given");
}

/* Reads are restricted: a delegate lists only the rules of the groups it may read. */
static void test_list_as_groups_are_read(void **state) {
        Fixture *f = *state;
        char listed[1024] = "";
        Refusal rf;
        int r;

        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/k/a", "/a", 0, &rf), &rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/k/d", "/d/x", 0, &rf), &rf);
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
        assert_not_refused(service_add_rule(f->svc, f->root, parent, "/b", 0, &rf), &rf);
        if (strcmp(cg, "/") != 0)
                assert_not_refused(service_add_rule(f->svc, f->root, "/", "/a", 0, &rf), &rf);
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
        assert_not_refused(service_add_rule(f->svc, f->root, "/no/such/cgroup/here", "/b", 0, &rf), &rf);
        r = service_attach(f->svc, me, "auto", &rf);
        assert_refused(r, &rf, -ENOENT, "no group given, and no kernel cgroup mirror to place the session by");
        remove_file(f->state_dir, PLACEMENT_FILE);
}

/* ---- the mirrors as rules, on a fake v1 hierarchy mirrored under /k ---- */

static char fake[64];

static void fake_cgroup(const char *rel) {
        static const char *const files[][2] = {
                { "memory.limit_in_bytes", "9223372036854771712" },
                { "memory.soft_limit_in_bytes", "9223372036854771712" },
                { "memory.usage_in_bytes", "8192" },
        };
        char dir[PATH_MAX], path[PATH_MAX + 64];

        snprintf(dir, sizeof(dir), "%s%s", fake, strcmp(rel, "/") == 0 ? "" : rel);
        assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                FILE *f;

                snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
                f = fopen(path, "w");
                assert_non_null(f);
                fprintf(f, "%s\n", files[i][1]);
                fclose(f);
        }
}

/* /c, /c/in, /c/in/deep and /m; of them /c and /c/in/deep mirrored (as /k/c, /k/c/in/deep),
 * /k/c/in a plain group between them. */
static CgroupMirror *mirrored(Fixture *f) {
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        Refusal rf;

        snprintf(fake, sizeof(fake), "/tmp/memacct-rules-cg.XXXXXX");
        assert_non_null(mkdtemp(fake));
        fake_cgroup("/");
        fake_cgroup("/c");
        fake_cgroup("/m");
        assert_int_equal(cgroup_mirror_new(f->core, events_notify, service_events(f->svc), fake, "/k", false, &cs), 0);
        refusal_init(&rf);
        /* /c first, while it has no children, so that /c/in stays unmirrored. */
        assert_int_equal(cgroup_mirror_import(cs, "/c", "/k", &n, &rf), 1);
        fake_cgroup("/c/in");
        fake_cgroup("/c/in/deep");
        assert_int_equal(cgroup_mirror_import(cs, "/c/in/deep", "/k", &n, &rf), 1);
        service_set_cgroup(f->svc, cs);
        return cs;
}

static void unmirror(Fixture *f, CgroupMirror *cs) {
        char cmd[128];

        service_set_cgroup(f->svc, NULL);
        cgroup_mirror_free(cs);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake);
        assert_int_equal(system(cmd), 0);
        remove_file(f->state_dir, PLACEMENT_FILE);
}

/* Where a process in @cgroup lands, or the words of the refusal. */
static const char *place(Fixture *f, const char *cgroup) {
        static char group[MEM_PATH_MAX + 1];
        static Refusal rf;

        refusal_init(&rf);
        return service_place_cgroup(f->svc, cgroup, true, group, sizeof(group), &rf) == 0 ? group : rf.message;
}

static void test_mirrors_listed_as_rules(void **state) {
        Fixture *f = *state;
        CgroupMirror *cs = mirrored(f);
        char listed[1024] = "";
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/c", "/d/x", 0, &rf), &rf);
        assert_not_refused(service_list_rules(f->svc, f->root, true, collect_kind, listed, &rf), &rf);
        /* By cgroup; of /c, the explicit rule before the mirror. */
        assert_string_equal(listed, "/c=/d/x;/c~/k/c;/c/in/deep~/k/c/in/deep;");
        /* Without the mirrors: the explicit rules as before. */
        listed[0] = 0;
        assert_not_refused(service_list_rules(f->svc, f->root, false, collect_kind, listed, &rf), &rf);
        assert_string_equal(listed, "/c=/d/x;");
        /* A delegate reads only what it may: /d/x is delegated to it, the mirrors are root's. */
        fixture_settings(f, READ_ACCESS_OWNER, 0);
        listed[0] = 0;
        assert_not_refused(service_list_rules(f->svc, f->delegate, true, collect_kind, listed, &rf), &rf);
        assert_string_equal(listed, "/c=/d/x;");
        unmirror(f, cs);
}

static void test_mirror_is_not_removed_as_a_rule(void **state) {
        Fixture *f = *state;
        CgroupMirror *cs = mirrored(f);
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_remove_rule(f->svc, f->root, "/c/in/deep", &rf);
        assert_refused(r, &rf, -EBUSY,
                       "cgroup /c/in/deep is mirrored by group /k/c/in/deep: remove the group, or let prune "
                       "remove it once the cgroup is gone");
        /* A cgroup neither ruled nor mirrored is still "no such rule". */
        refusal_init(&rf);
        r = service_remove_rule(f->svc, f->root, "/m", &rf);
        assert_refused(r, &rf, -ENOENT, "no placement rule for kernel cgroup /m");
        /* An explicit rule of a mirrored cgroup goes, and the mirror stays a rule. */
        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/c", "/a", 0, &rf), &rf);
        assert_not_refused(service_remove_rule(f->svc, f->root, "/c", &rf), &rf);
        r = service_remove_rule(f->svc, f->root, "/c", &rf);
        assert_int_equal(r, -EBUSY);
        unmirror(f, cs);
}

static void test_placement_order(void **state) {
        Fixture *f = *state;
        CgroupMirror *cs = mirrored(f);
        Refusal rf;

        /* Its own mirror. */
        assert_string_equal(place(f, "/c/in/deep"), "/k/c/in/deep");
        assert_string_equal(place(f, "/c"), "/k/c");
        /* No mirror of its own (auto-create is off): the nearest mirrored ancestor's. */
        fake_cgroup("/c/in/deep/new");
        assert_string_equal(place(f, "/c/in/deep/new"), "/k/c/in/deep");
        assert_string_equal(place(f, "/c/other"), "/k/c");
        /* A plain group where its mirror would be is taken, as before
         * mirrors were rules (auto-create would make it a mirror). */
        assert_string_equal(place(f, "/c/in"), "/k/c/in");
        /* Nothing mirrored at or above it: refused, saying how to mirror it. */
        assert_string_equal(place(f, "/m"),
                            "/k/m: no mirror of kernel cgroup /m (import it with memacctctl import-cgroups, "
                            "or set [cgroup] auto-create = yes)");
        /* An explicit rule beats any mirror, even that of a longer cgroup:
         * the cgroups nested in a container stay in its group. */
        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/c", "/b", 0, &rf), &rf);
        assert_string_equal(place(f, "/c/in/deep"), "/b");
        assert_string_equal(place(f, "/c/in/deep/new"), "/b");
        assert_string_equal(place(f, "/c"), "/b");
        /* The longest explicit rule among them. */
        assert_not_refused(service_add_rule(f->svc, f->root, "/c/in", "/a", 0, &rf), &rf);
        assert_string_equal(place(f, "/c/in/deep"), "/a");
        assert_string_equal(place(f, "/c/x"), "/b");
        unmirror(f, cs);
}

/* With auto-create, the cgroup's own mirror is made rather than the ancestor's taken. */
static void test_auto_create_before_the_ancestor(void **state) {
        Fixture *f = *state;
        CgroupMirror *cs = mirrored(f);

        assert_int_equal(cgroup_mirror_set_config(cs, "/k", true), 0);
        fake_cgroup("/c/new");
        assert_string_equal(place(f, "/c/new"), "/k/c/new");
        assert_true(tree_info(f, "/k/c/new").mirror);
        unmirror(f, cs);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_confinement_is_the_nearest_confining_rule),
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
                SERVICE_TEST(test_mirrors_listed_as_rules),
                SERVICE_TEST(test_mirror_is_not_removed_as_a_rule),
                SERVICE_TEST(test_placement_order),
                SERVICE_TEST(test_auto_create_before_the_ancestor),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
