/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Confinement (service/authz.h): a process in a kernel cgroup under a
 * confining placement rule acts only inside that rule's group, whatever
 * its uid; root's own process here stands in for a container's root.
 *
 * The confined process is a child of the test, moved into a memory cgroup
 * of its own made for the test at the hierarchy's top (never the test's
 * own: a confining rule of the daemon's cgroup is refused). Where no
 * memory cgroup can be made (no hierarchy, not root), the tests that need
 * one are skipped, saying why.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/placement.h"
#include "service-test.h"
#include "service/service-internal.h"

#include <cmocka.h>

typedef struct Box {
        char dir[PATH_MAX]; /* the cgroup's directory */
        char cgroup[256];   /* its path in the hierarchy */
        pid_t child;
} Box;

/* A memory hierarchy's mount point: v1's memory, or cgroup2 with memory enabled. */
static const char *memory_mount(void) {
        if (access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0)
                return "/sys/fs/cgroup/memory";
        if (access("/sys/fs/cgroup/cgroup.controllers", R_OK) == 0 &&
            access("/sys/fs/cgroup/cgroup.procs", W_OK) == 0)
                return "/sys/fs/cgroup";
        return NULL;
}

/* A child waiting in a memory cgroup of its own; false (and a note) where none can be made. */
static bool box_open(Box *b) {
        const char *mount = memory_mount();
        char procs[PATH_MAX + 32], pid[32], cg[256];
        int fd;

        if (!mount) {
                print_message("SKIP: no writable memory cgroup hierarchy\n");
                return false;
        }
        snprintf(b->cgroup, sizeof(b->cgroup), "/memacct-confine-%d", (int) getpid());
        snprintf(b->dir, sizeof(b->dir), "%s%s", mount, b->cgroup);
        if (mkdir(b->dir, 0755) < 0 && errno != EEXIST) {
                print_message("SKIP: cannot make %s: %s\n", b->dir, strerror(errno));
                return false;
        }
        b->child = fork();
        assert_true(b->child >= 0);
        if (b->child == 0) {
                pause();
                _exit(0);
        }
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", b->dir);
        snprintf(pid, sizeof(pid), "%d\n", (int) b->child);
        fd = open(procs, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, pid, strlen(pid)), (ssize_t) strlen(pid));
        close(fd);
        /* As the daemon will read it. */
        assert_int_equal(placement_proc_cgroup(b->child, cg, sizeof(cg)), 0);
        assert_string_equal(cg, b->cgroup);
        return true;
}

static void box_close(Box *b) {
        kill(b->child, SIGKILL);
        waitpid(b->child, NULL, 0);
        (void) rmdir(b->dir);
}

/* A confining rule of the box's cgroup to @group, and the box's process as a root peer. */
static Peer *confined_root(Fixture *f, Box *b, const char *group) {
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, b->cgroup, group, SERVICE_RULE_CONFINE, &rf), &rf);
        return fixture_peer_with_pid(f, UID_ROOT, b->child, true, false);
}

static int read_one(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        Reads reads = {};

        refusal_init(rf);
        return service_get_group(f->svc, p, path, NULL, 0, reads_collect, &reads, rf);
}

/* Inside its group a container's root charges, creates, sets limits below its group and removes. */
static void test_confined_root_acts_inside(void **state) {
        Fixture *f = *state;
        ServiceCharge inside = session_bytes("/d/x", PAGE);
        ServiceChargeResult res;
        MemLimits lim = limits_max(8 * MIB);
        Refusal rf;
        Box b;
        Peer *c;

        if (!box_open(&b))
                skip();
        c = confined_root(f, &b, "/d/x");
        assert_true(c->who.confined);
        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, c, &inside, &res, &rf), &rf);
        assert_int_equal(tree_usage(f, "/d/x"), PAGE);
        assert_not_refused(service_create_group(f->svc, c, "/d/x/z", NULL, false, 0, &rf), &rf);
        assert_not_refused(service_set_limits(f->svc, c, "/d/x/z", &lim, false, &rf), &rf);
        assert_int_equal(tree_info(f, "/d/x/z").max, 8 * MIB);
        assert_not_refused(service_reset_peak(f->svc, c, "/d/x", &rf), &rf);
        assert_not_refused(read_one(f, c, "/d/x/y", &rf), &rf);
        assert_not_refused(service_remove_group(f->svc, c, "/d/x/z", &rf), &rf);
        assert_false(tree_exists(f, "/d/x/z"));
        box_close(&b);
}

/* Everything a container's root must not do is refused, and changes nothing. */
static void test_confined_root_is_no_root(void **state) {
        Fixture *f = *state;
        ServiceCharge outside = session_bytes("/a", PAGE);
        MemLimits one = limits_max(1);
        ServiceChargeResult res;
        ServiceCharge forced = session_bytes("/d/x", PAGE);
        MemLimits lim = limits_max(64ULL << 30);
        ServiceImportCounts counts;
        Refusal rf;
        Box b;
        Peer *c;
        int r;

        if (!box_open(&b))
                skip();
        tree_set_max(f, "/d/x", 4 * MIB);
        c = confined_root(f, &b, "/d/x");
        refusal_init(&rf);
        r = service_set_limits(f->svc, c, "/d/x", &lim, false, &rf);
        assert_refused(r, &rf, -EPERM, "/d/x: permission denied");
        assert_int_equal(tree_info(f, "/d/x").max, 4 * MIB);
        refusal_init(&rf);
        r = service_set_limits(f->svc, c, "/a", &one, false, &rf);
        assert_refused(r, &rf, -EPERM, "/a: permission denied");
        refusal_init(&rf);
        r = service_create_group(f->svc, c, "/b/evil", NULL, false, 0, &rf);
        assert_refused(r, &rf, -EPERM, "/b/evil: not delegated to uid 0 (confined)");
        assert_false(tree_exists(f, "/b/evil"));
        refusal_init(&rf);
        r = service_charge(f->svc, c, &outside, &res, &rf);
        assert_refused(r, &rf, -EPERM, "/a: permission denied");
        forced.force = true;
        refusal_init(&rf);
        r = service_charge(f->svc, c, &forced, &res, &rf);
        assert_refused(r, &rf, -EPERM, "only root forces a charge past max");
        refusal_init(&rf);
        r = service_set_owner(f->svc, c, "/d/x/y", 4242, &rf);
        assert_refused(r, &rf, -EPERM, "only root delegates to another uid");
        refusal_init(&rf);
        r = service_remove_group(f->svc, c, "/d/x", &rf);
        assert_refused(r, &rf, -EPERM, "/d/x: permission denied");
        refusal_init(&rf);
        r = service_add_rule(f->svc, c, "/elsewhere", "/a", 0, &rf);
        assert_refused(r, &rf, -EPERM, "only root adds placement rules");
        refusal_init(&rf);
        r = service_import_cgroups(f->svc, c, NULL, NULL, &counts, &rf);
        assert_int_equal(r, -EPERM);
        refusal_init(&rf);
        r = read_one(f, c, "/a", &rf);
        assert_refused(r, &rf, -EPERM, "/a: permission denied");
        /* Its own group's limits and the tree are as they were. */
        assert_int_equal(tree_info(f, "/d/x").max, 4 * MIB);
        assert_int_equal(tree_usage(f, "/a"), 0);
        box_close(&b);
}

/* [access] confined-read = all: reads outside follow [access] read, as for any other uid. */
static void test_confined_read_all(void **state) {
        Fixture *f = *state;
        ServiceSettings s = fixture_settings_default();
        Refusal rf;
        Box b;
        Peer *c;

        if (!box_open(&b))
                skip();
        assert_true(service_reads_open(f->svc));
        c = confined_root(f, &b, "/d/x");
        /* Nothing may be broadcast while a confined peer reads its subtree only. */
        assert_false(service_reads_open(f->svc));
        /* The socket's root worker is for the host's root, not a container's. */
        assert_false(service_is_root(f->svc, b.child, 0));
        assert_true(service_is_root(f->svc, getpid(), 0));
        assert_false(service_is_root(f->svc, getpid(), UID_DELEGATE));
        s.confined_read = CONFINED_READ_ALL;
        service_set_settings(f->svc, &s);
        assert_not_refused(read_one(f, c, "/a", &rf), &rf);
        assert_true(service_reads_open(f->svc));
        s.read_access = READ_ACCESS_ROOT;
        service_set_settings(f->svc, &s);
        /* Not as root: uid 0 inside a container reads what any uid reads. */
        assert_int_equal(read_one(f, c, "/a", &rf), -EPERM);
        assert_not_refused(read_one(f, c, "/d/x", &rf), &rf);
        box_close(&b);
}

/* The groups a container creates count against its own account, not root's unbounded one. */
static void test_confined_groups_are_bounded(void **state) {
        Fixture *f = *state;
        ServiceSettings s = fixture_settings_default();
        Refusal rf;
        Box b;
        Peer *c;
        int r;

        if (!box_open(&b))
                skip();
        s.bounds.per_uid[UID_GROUPS] = 2;
        service_set_settings(f->svc, &s);
        c = confined_root(f, &b, "/d/x");
        assert_int_not_equal(c->creds.account, 0);
        assert_int_equal(c->creds.account, service_account("/d/x"));
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, c, "/d/x/1", NULL, false, 0, &rf), &rf);
        assert_not_refused(service_create_group(f->svc, c, "/d/x/2", NULL, false, 0, &rf), &rf);
        r = service_create_group(f->svc, c, "/d/x/3", NULL, false, 0, &rf);
        assert_int_equal(r, -ENOSPC);
        assert_false(tree_exists(f, "/d/x/3"));
        /* Root on the host is not bounded by it. */
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->root, "/d/x/4", NULL, false, 0, &rf), &rf);
        box_close(&b);
}

/* A confining rule is never of "/", nor of a cgroup holding the daemon; one cgroup, one rule. */
static void test_confining_rule_checks(void **state) {
        Fixture *f = *state;
        char own[PATH_MAX];
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/", "/d/x", SERVICE_RULE_CONFINE, &rf);
        assert_refused(r, &rf, -EINVAL, "a confining rule of / would confine every process");
        if (placement_proc_cgroup(getpid(), own, sizeof(own)) == 0 && strcmp(own, "/") != 0) {
                refusal_init(&rf);
                r = service_add_rule(f->svc, f->root, own, "/d/x", SERVICE_RULE_CONFINE, &rf);
                assert_int_equal(r, -EINVAL);
                assert_non_null(strstr(rf.message, "holds memacctd itself"));
        }
        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, "/c/one", "/a", SERVICE_RULE_CONFINE, &rf), &rf);
        /* The same rule again is no change; another for the cgroup is refused. */
        assert_not_refused(service_add_rule(f->svc, f->root, "/c/one", "/a", SERVICE_RULE_CONFINE, &rf), &rf);
        r = service_add_rule(f->svc, f->root, "/c/one", "/b", SERVICE_RULE_CONFINE, &rf);
        assert_refused(r, &rf, -EEXIST,
                       "cgroup /c/one has a placement rule already, to /a, confining: one rule per cgroup (remove it first)");
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/c/one", "/a", 0, &rf);
        assert_int_equal(r, -EEXIST);
        refusal_init(&rf);
        r = service_add_rule(f->svc, f->root, "/c/two", "/a", 2, &rf);
        assert_refused(r, &rf, -EINVAL, "unknown placement rule flags 0x2");
}

/* A process whose group is gone, or whose cgroup cannot be read, may do nothing. */
static void test_confined_to_nothing(void **state) {
        Fixture *f = *state;
        ServiceCharge outside = session_bytes("/a", PAGE);
        ServiceChargeResult res;
        Refusal rf;
        Box b;
        Peer *c;
        int r;

        if (!box_open(&b))
                skip();
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->root, "/gone", NULL, false, 0, &rf), &rf);
        c = confined_root(f, &b, "/gone");
        assert_non_null(c->who.scope);
        assert_not_refused(service_remove_group(f->svc, f->root, "/gone", &rf), &rf);
        /* The confinement stays with the peer, and with it nothing is allowed. */
        fixture_peer_free(f, c);
        c = fixture_peer_with_pid(f, UID_ROOT, b.child, true, false);
        assert_true(c->who.confined);
        assert_null(c->who.scope);
        r = service_charge(f->svc, c, &outside, &res, &rf);
        assert_int_equal(r, -EPERM);
        box_close(&b);
        /* A pid that is gone, with a confining rule in force: confined to nothing. */
        c = fixture_peer_with_pid(f, UID_ROOT, b.child, true, false);
        assert_true(c->who.confined);
        assert_null(c->who.scope);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_confined_root_acts_inside),
                SERVICE_TEST(test_confined_root_is_no_root),
                SERVICE_TEST(test_confined_read_all),
                SERVICE_TEST(test_confined_groups_are_bounded),
                SERVICE_TEST(test_confining_rule_checks),
                SERVICE_TEST(test_confined_to_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
