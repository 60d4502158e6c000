/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The group operations of the service (service-groups.c) without a
 * daemon: create, remove, set limits, reset the peak and import, each
 * with its success and every refusal it gives, to the letter of the
 * words both transports send, and the state after a refusal unchanged.
 * The reads (get and list) are test-service-reads.c's.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "service-test.h"

static int create(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_create_group(f->svc, p, path, NULL, false, 0, rf);
}

static int create_owned(Fixture *f, Peer *p, const char *path, uid_t owner, Refusal *rf) {
        refusal_init(rf);
        return service_create_group(f->svc, p, path, NULL, true, owner, rf);
}

static int remove_group(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_remove_group(f->svc, p, path, rf);
}

static int set_limits(Fixture *f, Peer *p, const char *path, const MemLimits *l, bool force, Refusal *rf) {
        refusal_init(rf);
        return service_set_limits(f->svc, p, path, l, force, rf);
}

/* Nothing was created, committed or announced. */
static void assert_nothing_changed(Fixture *f) {
        assert_int_equal(service_group_count(f->svc), TEST_TREE_GROUPS);
        assert_int_equal(fixture_commits(f), 0);
        assert_int_equal(f->sink.n, 0);
}

/* ---- create -------------------------------------------------------------- */

static void test_create_gives_the_group_to_its_creator(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(create(f, f->delegate, "/d/new", &rf), &rf);
        assert_true(tree_exists(f, "/d/new"));
        assert_int_equal(tree_info(f, "/d/new").owner, UID_DELEGATE);
        assert_not_refused(create(f, f->root, "/new", &rf), &rf);
        assert_int_equal(tree_info(f, "/new").owner, UID_ROOT);
        assert_int_equal(service_group_count(f->svc), TEST_TREE_GROUPS + 2);
}

static void test_create_commits_and_announces_the_group(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(create(f, f->delegate, "/d/new", &rf), &rf);
        assert_int_equal(fixture_commits(f), 1);
        /* No limits: the group only. */
        assert_int_equal(f->sink.n, 1);
        assert_int_equal(f->sink.v[0].kind, EVENT_GROUP_ADDED);
        assert_string_equal(f->sink.v[0].path, "/d/new");
}

static void test_create_by_root_delegates_to_the_owner_given(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(create_owned(f, f->root, "/given", UID_STRANGER, &rf), &rf);
        assert_int_equal(tree_info(f, "/given").owner, UID_STRANGER);
        /* A delegate may name itself. */
        assert_not_refused(create_owned(f, f->delegate, "/d/mine", UID_DELEGATE, &rf), &rf);
        assert_int_equal(tree_info(f, "/d/mine").owner, UID_DELEGATE);
        assert_int_equal(fixture_commits(f), 2);
}

/* What the sink saw of the group's limits at the moment it was announced. */
typedef struct SeenAtAdd {
        Fixture *f;
        MemGroupInfo info;
        bool seen;
} SeenAtAdd;

static void sink_read_at_add(const EventItem *ev, void *userdata) {
        SeenAtAdd *s = userdata;
        MemGroup *g = NULL;

        if (ev->kind != EVENT_GROUP_ADDED || group_get(s->f->core, ev->path, &g) < 0)
                return;
        group_read(s->f->core, g, NULL, false, &s->info);
        group_unref(g);
        s->seen = true;
}

static void test_create_with_limits_is_one_step(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN,
                        .max = 64 * PAGE, .high = 48 * PAGE, .low = 8 * PAGE, .min = 4 * PAGE };
        SeenAtAdd seen = { .f = f };
        Refusal rf;

        events_set_sink(service_events(f->svc), sink_read_at_add, &seen);
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->root, "/lim", &l, false, 0, &rf), &rf);
        /* Already limited when it was announced as added. */
        assert_true(seen.seen);
        assert_true(seen.info.max == l.max);
        assert_true(seen.info.high == l.high);
        assert_true(seen.info.low == l.low);
        assert_true(seen.info.min == l.min);
        /* One commit for the group and its limits together. */
        assert_int_equal(fixture_commits(f), 1);
}

static void test_create_with_limits_announces_group_then_limits(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_LOW, .max = 16 * PAGE, .low = 2 * PAGE };
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->delegate, "/d/lim", &l, false, 0, &rf), &rf);
        assert_int_equal(f->sink.n, 2);
        assert_int_equal(f->sink.v[0].kind, EVENT_GROUP_ADDED);
        assert_string_equal(f->sink.v[0].path, "/d/lim");
        assert_int_equal(f->sink.v[1].kind, EVENT_LIMITS_CHANGED);
        assert_string_equal(f->sink.v[1].path, "/d/lim");
        assert_int_equal(f->sink.v[1].limits, MEM_LIMIT_MAX | MEM_LIMIT_LOW);
}

static void test_create_refuses_the_root(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create(f, f->root, "/", &rf), &rf, -EEXIST, "/: the root always exists");
        assert_nothing_changed(f);
}

static void test_create_refuses_a_missing_parent(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create(f, f->root, "/q/r", &rf), &rf, -ENOENT, "/q/r: parent group does not exist");
        assert_refused(create(f, f->delegate, "/d/q/r", &rf), &rf, -ENOENT,
                       "/d/q/r: parent group does not exist");
        assert_false(tree_exists(f, "/q/r"));
        assert_nothing_changed(f);
}

static void test_create_refuses_a_parent_not_delegated_to_the_caller(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create(f, f->delegate, "/x", &rf), &rf, -EPERM, "/x: not delegated to uid %u",
                       UID_DELEGATE);
        assert_refused(create(f, f->other, "/d/z", &rf), &rf, -EPERM, "/d/z: not delegated to uid %u",
                       UID_OTHER);
        assert_refused(create(f, f->bus, "/a/z", &rf), &rf, -EPERM, "/a/z: not delegated to uid %u",
                       UID_DELEGATE);
        assert_false(tree_exists(f, "/x"));
        assert_false(tree_exists(f, "/d/z"));
        assert_nothing_changed(f);
}

static void test_create_refuses_giving_a_group_to_another_uid(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create_owned(f, f->delegate, "/d/gift", UID_OTHER, &rf), &rf, -EPERM,
                       "only root delegates to another uid");
        assert_refused(create_owned(f, f->delegate, "/d/gift", UID_ROOT, &rf), &rf, -EPERM,
                       "only root delegates to another uid");
        assert_false(tree_exists(f, "/d/gift"));
        assert_nothing_changed(f);
}

static void test_create_refuses_an_existing_group(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create(f, f->root, "/a", &rf), &rf, -EEXIST, "/a: group exists");
        assert_refused(create(f, f->delegate, "/d/x", &rf), &rf, -EEXIST, "/d/x: group exists");
        /* The existing group is left as it was. */
        assert_int_equal(tree_info(f, "/d/x").owner, UID_ROOT);
        assert_nothing_changed(f);
}

static void test_create_refuses_malformed_paths_with_the_precise_violation(void **state) {
        Fixture *f = *state;
        char longname[MEM_NAME_MAX + 3];
        Refusal rf;

        assert_refused(create(f, f->root, NULL, &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(create(f, f->root, "a", &rf), &rf, -EINVAL, "a: path must start with '/'");
        assert_refused(create(f, f->root, "/a/", &rf), &rf, -EINVAL, "/a/: empty path component");
        assert_refused(create(f, f->root, "/a//b", &rf), &rf, -EINVAL, "/a//b: empty path component");
        assert_refused(create(f, f->root, "/a/..", &rf), &rf, -EINVAL,
                       "/a/..: '.' and '..' are not group names");
        assert_refused(create(f, f->root, "/a b", &rf), &rf, -EINVAL,
                       "/a b: group names may only hold [A-Za-z0-9._:@-]");
        longname[0] = '/';
        memset(longname + 1, 'n', MEM_NAME_MAX + 1);
        longname[MEM_NAME_MAX + 2] = 0;
        assert_refused(create(f, f->root, longname, &rf), &rf, -ENAMETOOLONG,
                       "%s: group name longer than 255 bytes", longname);
        assert_nothing_changed(f);
}

/* Every operation but create says "a group path is required" for an empty
 * one (service_lookup()); create should say the same. */
static void test_create_without_a_path_says_a_path_is_required(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(create(f, f->root, NULL, &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(remove_group(f, f->root, "", &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(create(f, f->root, "", &rf), &rf, -EINVAL, "a group path is required");
        assert_nothing_changed(f);
}

static void test_create_refuses_a_path_deeper_than_configured(void **state) {
        Fixture *f = *state;
        char path[64] = "";
        Refusal rf;

        /* /d/x/y is TEST_MAX_DEPTH - 1 deep: one more level fits, two do not. */
        assert_not_refused(create(f, f->root, "/d/x/y/z", &rf), &rf);
        for (unsigned i = 0; i <= TEST_MAX_DEPTH; i++)
                snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%c", "dxyzw"[i]);
        assert_refused(create(f, f->root, path, &rf), &rf, -EMLINK, "%s: too deep", path);
        assert_false(tree_exists(f, path));
        assert_int_equal(service_group_count(f->svc), TEST_TREE_GROUPS + 1);
}

static void test_create_refuses_past_the_group_limit(void **state) {
        Fixture *f = *state;
        char path[32];
        Refusal rf;
        unsigned i;

        for (i = 0; TEST_TREE_GROUPS + i < TEST_MAX_GROUPS; i++) {
                snprintf(path, sizeof(path), "/g%u", i);
                assert_not_refused(create(f, f->root, path, &rf), &rf);
        }
        assert_int_equal(service_group_count(f->svc), TEST_MAX_GROUPS);
        snprintf(path, sizeof(path), "/g%u", i);
        assert_refused(create(f, f->root, path, &rf), &rf, -ENOSPC, "%s: group limit reached", path);
        assert_false(tree_exists(f, path));
        assert_int_equal(service_group_count(f->svc), TEST_MAX_GROUPS);
        assert_int_equal(fixture_commits(f), i);
        assert_int_equal(f->sink.n, i);
}

/* ---- remove -------------------------------------------------------------- */

static void test_remove_deletes_commits_and_announces(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(remove_group(f, f->root, "/b", &rf), &rf);
        assert_false(tree_exists(f, "/b"));
        assert_int_equal(service_group_count(f->svc), TEST_TREE_GROUPS - 1);
        assert_int_equal(fixture_commits(f), 1);
        assert_int_equal(f->sink.n, 1);
        assert_int_equal(f->sink.v[0].kind, EVENT_GROUP_REMOVED);
        assert_string_equal(f->sink.v[0].path, "/b");
}

static void test_remove_releases_the_kept_charges_it_holds(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/d/x/y", 3 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->delegate, &c, &res, &rf), &rf);
        assert_true(tree_usage(f, "/d") == c.bytes);
        assert_not_refused(remove_group(f, f->delegate, "/d/x/y", &rf), &rf);
        assert_true(tree_usage(f, "/d/x") == 0);
        assert_true(tree_usage(f, "/d") == 0);
        assert_true(tree_usage(f, "/") == 0);
}

static void test_remove_refuses_a_group_with_children(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(remove_group(f, f->root, "/d/x", &rf), &rf, -EBUSY,
                       "/d/x: group has children or attached sessions");
        assert_true(tree_exists(f, "/d/x"));
        assert_nothing_changed(f);
}

static void test_remove_refuses_a_group_with_an_attached_session(void **state) {
        Fixture *f = *state;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, f->delegate, "/d/x/y", &rf), &rf);
        assert_refused(remove_group(f, f->root, "/d/x/y", &rf), &rf, -EBUSY,
                       "/d/x/y: group has children or attached sessions");
        assert_true(tree_exists(f, "/d/x/y"));
        assert_nothing_changed(f);
}

static void test_remove_is_refused_on_the_delegated_group_itself(void **state) {
        Fixture *f = *state;
        Refusal rf;

        tree_create(f, "/d/leaf", UID_ROOT);
        assert_refused(remove_group(f, f->delegate, "/d", &rf), &rf, -EPERM, "/d: permission denied");
        assert_refused(remove_group(f, f->other, "/d/leaf", &rf), &rf, -EPERM, "/d/leaf: permission denied");
        assert_refused(remove_group(f, f->delegate, "/b", &rf), &rf, -EPERM, "/b: permission denied");
        assert_true(tree_exists(f, "/d/leaf"));
        assert_true(tree_exists(f, "/b"));
        assert_int_equal(fixture_commits(f), 0);
        /* Strictly below the delegated group it may. */
        assert_not_refused(remove_group(f, f->delegate, "/d/leaf", &rf), &rf);
        assert_false(tree_exists(f, "/d/leaf"));
}

static void test_remove_refuses_missing_and_malformed_paths(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(remove_group(f, f->root, "/nosuch", &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(remove_group(f, f->root, NULL, &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(remove_group(f, f->root, "b", &rf), &rf, -EINVAL, "b: path must start with '/'");
        assert_refused(remove_group(f, f->root, "/b/", &rf), &rf, -EINVAL, "/b/: empty path component");
        assert_refused(remove_group(f, f->root, "/a/b/c/d/e", &rf), &rf, -EMLINK, "/a/b/c/d/e: too deep");
        assert_nothing_changed(f);
}

static void test_remove_of_the_root_is_refused_for_everyone(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(remove_group(f, f->delegate, "/", &rf), &rf, -EPERM, "/: permission denied");
        assert_int_equal(remove_group(f, f->root, "/", &rf), -EINVAL);
        assert_int_equal(rf.error, -EINVAL);
        assert_true(tree_exists(f, "/"));
        assert_nothing_changed(f);
}

/* Create says "/: the root always exists"; remove should say why too,
 * not the C library's words for EINVAL. */
static void test_remove_of_the_root_says_why(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_int_equal(remove_group(f, f->root, "/", &rf), -EINVAL);
        assert_string_not_equal(rf.message, "/: Invalid argument");
        assert_non_null(strstr(rf.message, "root"));
}

/* ---- set limits ------------------------------------------------------------ */

static void test_set_limits_sets_what_it_names_commits_and_announces(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH, .max = 32 * PAGE, .high = 24 * PAGE,
                        .low = 5 };
        MemGroupInfo info;
        Refusal rf;

        assert_not_refused(set_limits(f, f->root, "/a", &l, false, &rf), &rf);
        info = tree_info(f, "/a");
        assert_true(info.max == l.max);
        assert_true(info.high == l.high);
        assert_true(info.low == 0); /* not named (.low is ignored): left as it was */
        assert_int_equal(fixture_commits(f), 1);
        assert_int_equal(f->sink.n, 1);
        assert_int_equal(f->sink.v[0].kind, EVENT_LIMITS_CHANGED);
        assert_string_equal(f->sink.v[0].path, "/a");
        assert_int_equal(f->sink.v[0].limits, MEM_LIMIT_MAX | MEM_LIMIT_HIGH);
}

static void test_set_limits_refuses_max_below_usage_and_sets_nothing(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/a", 8 * KIB);
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH, .max = c.bytes / 2, .high = c.bytes / 4 };
        ServiceChargeResult res;
        MemGroupInfo info;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        assert_refused(set_limits(f, f->root, "/a", &l, false, &rf), &rf, -EBUSY,
                       "/a: usage is above the new max (use --force)");
        info = tree_info(f, "/a");
        assert_true(info.max == UINT64_MAX);
        assert_true(info.high == UINT64_MAX);
        assert_true(info.current == c.bytes);
        assert_int_equal(fixture_commits(f), 1); /* the kept charge only */
        assert_null(event_log_find(&f->sink, EVENT_LIMITS_CHANGED, -1, NULL));
}

static void test_set_limits_with_force_takes_a_max_below_usage(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/a", 8 * KIB);
        MemLimits l = limits_max(c.bytes / 2);
        ServiceChargeResult res;
        const Recorded *oom;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        assert_not_refused(set_limits(f, f->root, "/a", &l, true, &rf), &rf);
        assert_true(tree_info(f, "/a").max == l.max);
        assert_true(tree_usage(f, "/a") == c.bytes);
        assert_int_equal(fixture_commits(f), 2);
        /* Nothing reclaims towards it: an oom, then the change. */
        oom = event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_OOM, "/a");
        assert_non_null(oom);
        assert_int_equal(oom->count, tree_info(f, "/a").events_local[MEM_EVENT_OOM]);
        assert_int_equal(f->sink.v[f->sink.n - 1].kind, EVENT_LIMITS_CHANGED);
}

static void test_set_limits_is_refused_on_the_delegated_group_itself(void **state) {
        Fixture *f = *state;
        MemLimits l = limits_max(16 * PAGE);
        Refusal rf;

        assert_refused(set_limits(f, f->delegate, "/d", &l, false, &rf), &rf, -EPERM,
                       "/d: permission denied");
        assert_refused(set_limits(f, f->other, "/d/x", &l, false, &rf), &rf, -EPERM,
                       "/d/x: permission denied");
        assert_refused(set_limits(f, f->delegate, "/", &l, false, &rf), &rf, -EPERM, "/: permission denied");
        assert_true(tree_info(f, "/d").max == UINT64_MAX);
        assert_true(tree_info(f, "/d/x").max == UINT64_MAX);
        assert_nothing_changed(f);
        assert_not_refused(set_limits(f, f->delegate, "/d/x", &l, false, &rf), &rf);
        assert_true(tree_info(f, "/d/x").max == l.max);
}

static void test_set_limits_refuses_missing_and_malformed_paths(void **state) {
        Fixture *f = *state;
        MemLimits l = limits_max(PAGE);
        Refusal rf;

        assert_refused(set_limits(f, f->root, "/nosuch", &l, false, &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_refused(set_limits(f, f->root, NULL, &l, false, &rf), &rf, -EINVAL,
                       "a group path is required");
        assert_refused(set_limits(f, f->root, "/a/../b", &l, false, &rf), &rf, -EINVAL,
                       "/a/../b: '.' and '..' are not group names");
        assert_nothing_changed(f);
}

static void test_set_limits_naming_none_changes_and_announces_nothing(void **state) {
        Fixture *f = *state;
        MemLimits none = {};
        Refusal rf;

        assert_not_refused(set_limits(f, f->root, "/a", NULL, false, &rf), &rf);
        assert_not_refused(set_limits(f, f->root, "/a", &none, false, &rf), &rf);
        assert_true(tree_info(f, "/a").max == UINT64_MAX);
        assert_null(event_log_find(&f->sink, EVENT_LIMITS_CHANGED, -1, NULL));
        assert_int_equal(fixture_commits(f), 0); /* nothing changed: nothing to save */
        /* Still refused to a caller that may not set them. */
        assert_refused(set_limits(f, f->other, "/a", &none, false, &rf), &rf, -EPERM, "/a: permission denied");
}

/* ---- reset peak ------------------------------------------------------------ */

static void test_reset_peak_restarts_from_usage_without_a_commit(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/d/x", 16 * KIB), u = kept_bytes("/d/x", 12 * KIB);
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        assert_not_refused(service_uncharge(f->svc, f->root, &u, &rf), &rf);
        assert_true(tree_info(f, "/d/x").peak == c.bytes);
        assert_int_equal(fixture_commits(f), 2);
        refusal_init(&rf);
        assert_not_refused(service_reset_peak(f->svc, f->root, "/d/x", &rf), &rf);
        assert_true(tree_info(f, "/d/x").peak == c.bytes - u.bytes);
        assert_int_equal(fixture_commits(f), 2);
        assert_int_equal(f->sink.n, 0);
}

static void test_reset_peak_is_allowed_on_the_delegated_group_itself(void **state) {
        Fixture *f = *state;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_reset_peak(f->svc, f->delegate, "/d", &rf), &rf);
        assert_not_refused(service_reset_peak(f->svc, f->delegate, "/d/x/y", &rf), &rf);
        assert_not_refused(service_reset_peak(f->svc, f->other, "/e", &rf), &rf);
        assert_not_refused(service_reset_peak(f->svc, f->root, "/", &rf), &rf);
}

static void test_reset_peak_refuses_other_subtrees_and_missing_groups(void **state) {
        Fixture *f = *state;
        Refusal rf;

        refusal_init(&rf);
        assert_refused(service_reset_peak(f->svc, f->other, "/d", &rf), &rf, -EPERM, "/d: permission denied");
        assert_refused(service_reset_peak(f->svc, f->delegate, "/e", &rf), &rf, -EPERM,
                       "/e: permission denied");
        assert_refused(service_reset_peak(f->svc, f->delegate, "/", &rf), &rf, -EPERM,
                       "/: permission denied");
        assert_refused(service_reset_peak(f->svc, f->root, "/nosuch", &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_refused(service_reset_peak(f->svc, f->root, "", &rf), &rf, -EINVAL,
                       "a group path is required");
}

/* ---- import ---------------------------------------------------------------- */

static void test_import_is_root_only(void **state) {
        Fixture *f = *state;
        ServiceImportCounts counts = {};
        Refusal rf;

        refusal_init(&rf);
        assert_refused(service_import_cgroups(f->svc, f->delegate, NULL, NULL, &counts, &rf), &rf, -EPERM,
                       "only root imports cgroups");
        assert_refused(service_import_cgroups(f->svc, f->other, "/", "/e", &counts, &rf), &rf, -EPERM,
                       "only root imports cgroups");
        assert_nothing_changed(f);
}

static void test_import_without_a_mirror_says_so(void **state) {
        Fixture *f = *state;
        ServiceImportCounts counts = {};
        Refusal rf;

        refusal_init(&rf);
        assert_refused(service_import_cgroups(f->svc, f->root, NULL, NULL, &counts, &rf), &rf, -ENOENT,
                       "no kernel cgroup mirror in this daemon");
        assert_refused(service_import_cgroups(f->svc, service_daemon_peer(f->svc), "/", "/a", &counts, &rf),
                       &rf, -ENOENT, "no kernel cgroup mirror in this daemon");
        assert_nothing_changed(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_create_gives_the_group_to_its_creator),
                SERVICE_TEST(test_create_commits_and_announces_the_group),
                SERVICE_TEST(test_create_by_root_delegates_to_the_owner_given),
                SERVICE_TEST(test_create_with_limits_is_one_step),
                SERVICE_TEST(test_create_with_limits_announces_group_then_limits),
                SERVICE_TEST(test_create_refuses_the_root),
                SERVICE_TEST(test_create_refuses_a_missing_parent),
                SERVICE_TEST(test_create_refuses_a_parent_not_delegated_to_the_caller),
                SERVICE_TEST(test_create_refuses_giving_a_group_to_another_uid),
                SERVICE_TEST(test_create_refuses_an_existing_group),
                SERVICE_TEST(test_create_refuses_malformed_paths_with_the_precise_violation),
                SERVICE_TEST(test_create_without_a_path_says_a_path_is_required),
                SERVICE_TEST(test_create_refuses_a_path_deeper_than_configured),
                SERVICE_TEST(test_create_refuses_past_the_group_limit),
                SERVICE_TEST(test_remove_deletes_commits_and_announces),
                SERVICE_TEST(test_remove_releases_the_kept_charges_it_holds),
                SERVICE_TEST(test_remove_refuses_a_group_with_children),
                SERVICE_TEST(test_remove_refuses_a_group_with_an_attached_session),
                SERVICE_TEST(test_remove_is_refused_on_the_delegated_group_itself),
                SERVICE_TEST(test_remove_refuses_missing_and_malformed_paths),
                SERVICE_TEST(test_remove_of_the_root_is_refused_for_everyone),
                SERVICE_TEST(test_remove_of_the_root_says_why),
                SERVICE_TEST(test_set_limits_sets_what_it_names_commits_and_announces),
                SERVICE_TEST(test_set_limits_refuses_max_below_usage_and_sets_nothing),
                SERVICE_TEST(test_set_limits_with_force_takes_a_max_below_usage),
                SERVICE_TEST(test_set_limits_is_refused_on_the_delegated_group_itself),
                SERVICE_TEST(test_set_limits_refuses_missing_and_malformed_paths),
                SERVICE_TEST(test_set_limits_naming_none_changes_and_announces_nothing),
                SERVICE_TEST(test_reset_peak_restarts_from_usage_without_a_commit),
                SERVICE_TEST(test_reset_peak_is_allowed_on_the_delegated_group_itself),
                SERVICE_TEST(test_reset_peak_refuses_other_subtrees_and_missing_groups),
                SERVICE_TEST(test_import_is_root_only),
                SERVICE_TEST(test_import_without_a_mirror_says_so),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
