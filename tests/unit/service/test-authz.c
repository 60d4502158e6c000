/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who may do what (authz.c): the rules directly, for root, the delegate
 * of a subtree, the delegate of another subtree and a stranger, on the
 * test tree (/ and /a root's, /d delegated to UID_DELEGATE with /d/x and
 * /d/x/y below it, /e delegated to UID_OTHER); then the same rules seen
 * through the service operations by peers of those uids, so that they
 * hold for other uids without a daemon.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

/* Who asks, unconfined: a uid (and a pid). */
#define WHO(u) (&(AuthzWho) { .uid = (u) })
#define WHO_PID(u, p) (&(AuthzWho) { .uid = (u), .pid = (p) })

#include "service-test.h"
#include "service/authz.h"

static const char *const groups[] = { "/", "/a", "/d", "/d/x", "/d/x/y", "/e" };
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

/*
 * What each uid may do to each group, as lists of paths: use (charge,
 * attach, move into, create in), modify (remove, set limits: strictly
 * below what is delegated), reset the peak (modify, or the delegated
 * group itself) and read under READ_ACCESS_OWNER.
 */
typedef struct Rights {
        uid_t uid;
        const char *use, *modify, *reset, *read_owner;
} Rights;

#define ALL_GROUPS "/ /a /d /d/x /d/x/y /e"

static const Rights rights[] = {
        { UID_ROOT, ALL_GROUPS, ALL_GROUPS, ALL_GROUPS, ALL_GROUPS },
        { UID_DELEGATE, "/d /d/x /d/x/y", "/d/x /d/x/y", "/d /d/x /d/x/y", "/d /d/x /d/x/y" },
        { UID_OTHER, "/e", "", "/e", "/e" },
        { UID_STRANGER, "", "", "", "" },
};
#define NRIGHTS (sizeof(rights) / sizeof(rights[0]))

/* Is @path one of the space-separated paths of @list? */
static bool listed(const char *list, const char *path) {
        size_t n = strlen(path);

        for (const char *p = list; *p;) {
                const char *end = strchrnul(p, ' ');

                if ((size_t) (end - p) == n && strncmp(p, path, n) == 0)
                        return true;
                p = *end ? end + 1 : end;
        }
        return false;
}

static MemGroup *group_at(Fixture *f, const char *path) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(f->core, path, &g), 0);
        return g;
}

/* ---- the rules --------------------------------------------------------------- */

static void test_may_use_and_create_in_cover_the_delegated_subtree(void **state) {
        Fixture *f = *state;

        for (size_t i = 0; i < NGROUPS; i++) {
                MemGroup *g = group_at(f, groups[i]);

                for (size_t u = 0; u < NRIGHTS; u++) {
                        bool want = listed(rights[u].use, groups[i]);

                        assert_int_equal(authz_may_use(WHO(rights[u].uid), g), want);
                        assert_int_equal(authz_may_create_in(WHO(rights[u].uid), g), want);
                }
                group_unref(g);
        }
}

static void test_may_modify_only_strictly_below_the_delegated_group(void **state) {
        Fixture *f = *state;

        for (size_t i = 0; i < NGROUPS; i++) {
                MemGroup *g = group_at(f, groups[i]);

                for (size_t u = 0; u < NRIGHTS; u++)
                        assert_int_equal(authz_may_modify(WHO(rights[u].uid), g),
                                         listed(rights[u].modify, groups[i]));
                group_unref(g);
        }
}

static void test_may_reset_peak_includes_the_delegated_group_itself(void **state) {
        Fixture *f = *state;

        for (size_t i = 0; i < NGROUPS; i++) {
                MemGroup *g = group_at(f, groups[i]);

                for (size_t u = 0; u < NRIGHTS; u++)
                        assert_int_equal(authz_may_reset_peak(WHO(rights[u].uid), g),
                                         listed(rights[u].reset, groups[i]));
                group_unref(g);
        }
}

static void test_may_read_under_each_read_access(void **state) {
        Fixture *f = *state;

        for (size_t i = 0; i < NGROUPS; i++) {
                MemGroup *g = group_at(f, groups[i]);

                for (size_t u = 0; u < NRIGHTS; u++) {
                        uid_t uid = rights[u].uid;

                        assert_true(authz_may_read(READ_ACCESS_ALL, CONFINED_READ_SUBTREE, WHO(uid), g));
                        assert_int_equal(authz_may_read(READ_ACCESS_OWNER, CONFINED_READ_SUBTREE, WHO(uid), g),
                                         listed(rights[u].read_owner, groups[i]));
                        assert_int_equal(authz_may_read(READ_ACCESS_ROOT, CONFINED_READ_SUBTREE, WHO(uid), g), uid == UID_ROOT);
                }
                group_unref(g);
        }
}

static void test_a_group_owned_by_root_delegates_nothing(void **state) {
        Fixture *f = *state;
        MemGroup *a = group_at(f, "/a");

        /* Owner 0 is "not delegated": root's rights come from being root. */
        assert_false(group_is_delegated_to(a, UID_ROOT));
        assert_true(authz_may_use(WHO(UID_ROOT), a));
        group_unref(a);
}

static void test_may_give_is_root_only_but_for_oneself(void **state) {
        static const uid_t uids[] = { UID_ROOT, UID_DELEGATE, UID_OTHER, UID_STRANGER };

        (void) state;
        for (size_t i = 0; i < 4; i++)
                for (size_t j = 0; j < 4; j++)
                        assert_int_equal(authz_may_give(WHO(uids[i]), uids[j]), uids[i] == UID_ROOT || i == j);
}

static void test_may_read_client_own_pid_always_others_by_access(void **state) {
        static const ReadAccess all[] = { READ_ACCESS_ALL, READ_ACCESS_OWNER, READ_ACCESS_ROOT };

        (void) state;
        for (size_t i = 0; i < 3; i++) {
                ReadAccess a = all[i];

                assert_true(authz_may_read_client(a, WHO_PID(UID_DELEGATE, PID_DELEGATE), PID_DELEGATE));
                assert_true(authz_may_read_client(a, WHO_PID(UID_ROOT, PID_ROOT), PID_DELEGATE));
                assert_int_equal(authz_may_read_client(a, WHO_PID(UID_DELEGATE, PID_DELEGATE), PID_OTHER),
                                 a == READ_ACCESS_ALL);
                assert_int_equal(authz_may_read_client(a, WHO_PID(UID_STRANGER, PID_STRANGER), PID_ROOT),
                                 a == READ_ACCESS_ALL);
        }
}

static void test_may_move_own_sessions_or_as_root(void **state) {
        (void) state;
        assert_true(authz_may_move(WHO_PID(UID_DELEGATE, PID_DELEGATE), 0));
        assert_true(authz_may_move(WHO_PID(UID_DELEGATE, PID_DELEGATE), PID_DELEGATE));
        assert_false(authz_may_move(WHO_PID(UID_DELEGATE, PID_DELEGATE), PID_OTHER));
        assert_false(authz_may_move(WHO_PID(UID_STRANGER, PID_STRANGER), PID_ROOT));
        assert_true(authz_may_move(WHO_PID(UID_ROOT, PID_ROOT), PID_OTHER));
        assert_true(authz_may_move(WHO_PID(UID_ROOT, PID_ROOT), 0));
}

static void test_may_force_and_import_are_root_only(void **state) {
        static const uid_t others[] = { UID_DELEGATE, UID_OTHER, UID_STRANGER, 1 };

        (void) state;
        assert_true(authz_may_force(WHO(UID_ROOT)));
        assert_true(authz_may_import(WHO(UID_ROOT)));
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
                assert_false(authz_may_force(WHO(others[i])));
                assert_false(authz_may_import(WHO(others[i])));
        }
}

static void test_read_access_names_round_trip(void **state) {
        static const char *const names[] = { "all", "owner", "root" };

        (void) state;
        assert_int_equal(_READ_ACCESS_MAX, 3);
        for (ReadAccess a = 0; a < _READ_ACCESS_MAX; a++) {
                assert_string_equal(read_access_to_string(a), names[a]);
                assert_int_equal(read_access_from_string(read_access_to_string(a)), a);
        }
}

static void test_read_access_rejects_unknown_names_and_values(void **state) {
        static const char *const bad[] = { "ALL", "Owner", "", "owners", "root ", " all", "none" };

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(read_access_from_string(bad[i]), _READ_ACCESS_INVALID);
        assert_int_equal(read_access_from_string(NULL), _READ_ACCESS_INVALID);
        assert_int_equal(_READ_ACCESS_INVALID, -EINVAL);
        assert_null(read_access_to_string(_READ_ACCESS_MAX));
        assert_null(read_access_to_string(_READ_ACCESS_INVALID));
        assert_null(read_access_to_string((ReadAccess) 42));
}

/* ---- the same rules through the service ---------------------------------------- */

/* A peer for each uid of the table: the fixture's, or an extra one made once. */
static Peer *peer_of(Fixture *f, uid_t uid) {
        if (uid == UID_ROOT)
                return f->root;
        if (uid == UID_DELEGATE)
                return f->delegate;
        if (uid == UID_OTHER)
                return f->other;
        for (size_t i = 0; i < FIXTURE_EXTRA_MAX; i++)
                if (f->extra[i] && f->extra[i]->creds.uid == uid)
                        return f->extra[i];
        return fixture_peer_new(f, uid, true, true);
}

/* @g's child "n": "/n" for the root. */
static const char *child_of(const char *g, char *buf, size_t size) {
        snprintf(buf, size, "%s/n", strcmp(g, "/") == 0 ? "" : g);
        return buf;
}

static void test_service_create_follows_may_create_in(void **state) {
        Fixture *f = *state;
        char child[64];
        Refusal rf;

        for (size_t u = 0; u < NRIGHTS; u++)
                for (size_t i = 0; i < NGROUPS; i++) {
                        Peer *p = peer_of(f, rights[u].uid);
                        int r;

                        child_of(groups[i], child, sizeof(child));
                        refusal_init(&rf);
                        r = service_create_group(f->svc, p, child, NULL, false, 0, &rf);
                        if (!listed(rights[u].use, groups[i])) {
                                assert_refused(r, &rf, -EPERM, "%s: not delegated to uid %u", child,
                                               (unsigned) rights[u].uid);
                                assert_false(tree_exists(f, child));
                                continue;
                        }
                        assert_not_refused(r, &rf);
                        assert_int_equal(tree_info(f, child).owner, rights[u].uid);
                        assert_int_equal(group_remove(f->core, child), 0);
                }
}

static void test_service_remove_follows_may_modify(void **state) {
        Fixture *f = *state;
        char child[64];
        Refusal rf;

        for (size_t u = 0; u < NRIGHTS; u++)
                for (size_t i = 0; i < NGROUPS; i++) {
                        Peer *p = peer_of(f, rights[u].uid);
                        int r;

                        /* A leaf below each group: modify rights on it are use rights on its parent. */
                        child_of(groups[i], child, sizeof(child));
                        tree_create(f, child, UID_ROOT);
                        refusal_init(&rf);
                        r = service_remove_group(f->svc, p, child, &rf);
                        if (!listed(rights[u].use, groups[i])) {
                                assert_refused(r, &rf, -EPERM, "%s: permission denied", child);
                                assert_int_equal(group_remove(f->core, child), 0);
                                continue;
                        }
                        assert_not_refused(r, &rf);
                        assert_false(tree_exists(f, child));
                }
}

static void test_service_set_limits_follows_may_modify(void **state) {
        Fixture *f = *state;
        Refusal rf;

        for (size_t u = 0; u < NRIGHTS; u++)
                for (size_t i = 0; i < NGROUPS; i++) {
                        Peer *p = peer_of(f, rights[u].uid);
                        MemLimits l = limits_max((64 + u * NGROUPS + i) * PAGE);
                        uint64_t before = tree_info(f, groups[i]).max;
                        int r;

                        refusal_init(&rf);
                        r = service_set_limits(f->svc, p, groups[i], &l, false, &rf);
                        if (!listed(rights[u].modify, groups[i])) {
                                assert_refused(r, &rf, -EPERM, "%s: permission denied", groups[i]);
                                assert_true(tree_info(f, groups[i]).max == before);
                                continue;
                        }
                        assert_not_refused(r, &rf);
                        assert_true(tree_info(f, groups[i]).max == l.max);
                }
}

static void test_service_charges_follow_may_use(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        for (size_t u = 0; u < NRIGHTS; u++)
                for (size_t i = 0; i < NGROUPS; i++) {
                        Peer *p = peer_of(f, rights[u].uid);
                        ServiceCharge c = kept_bytes(groups[i], PAGE);
                        uint64_t before = tree_usage(f, groups[i]);
                        int r;

                        refusal_init(&rf);
                        r = service_charge(f->svc, p, &c, &res, &rf);
                        if (!listed(rights[u].use, groups[i])) {
                                assert_refused(r, &rf, -EPERM, "%s: permission denied", groups[i]);
                                assert_true(tree_usage(f, groups[i]) == before);
                                continue;
                        }
                        assert_not_refused(r, &rf);
                        assert_true(tree_usage(f, groups[i]) == before + c.bytes);
                        refusal_init(&rf);
                        assert_not_refused(service_uncharge(f->svc, p, &c, &rf), &rf);
                }
}

static void test_service_reset_peak_follows_may_reset_peak(void **state) {
        Fixture *f = *state;
        Refusal rf;

        for (size_t u = 0; u < NRIGHTS; u++)
                for (size_t i = 0; i < NGROUPS; i++) {
                        int r;

                        refusal_init(&rf);
                        r = service_reset_peak(f->svc, peer_of(f, rights[u].uid), groups[i], &rf);
                        if (listed(rights[u].reset, groups[i]))
                                assert_not_refused(r, &rf);
                        else
                                assert_refused(r, &rf, -EPERM, "%s: permission denied", groups[i]);
                }
}

static int ignore_read(void *userdata, const char *path, const MemGroupInfo *info) {
        (void) userdata, (void) path, (void) info;
        return 0;
}

static void test_service_reads_follow_may_read(void **state) {
        static const ReadAccess all[] = { READ_ACCESS_ALL, READ_ACCESS_OWNER, READ_ACCESS_ROOT };
        Fixture *f = *state;
        Refusal rf;

        for (size_t a = 0; a < 3; a++) {
                fixture_settings(f, all[a], 0);
                for (size_t u = 0; u < NRIGHTS; u++)
                        for (size_t i = 0; i < NGROUPS; i++) {
                                MemGroup *g = group_at(f, groups[i]);
                                bool want = authz_may_read(all[a], CONFINED_READ_SUBTREE, WHO(rights[u].uid), g);
                                int r;

                                group_unref(g);
                                refusal_init(&rf);
                                r = service_get_group(f->svc, peer_of(f, rights[u].uid), groups[i], NULL, 0,
                                                      ignore_read, NULL, &rf);
                                if (want)
                                        assert_not_refused(r, &rf);
                                else
                                        assert_refused(r, &rf, -EPERM, "%s: permission denied", groups[i]);
                        }
        }
}

/*
 * Confinement: uid 0 or not, a peer confined to /d/x uses, creates in and
 * reads /d/x and below, modifies strictly below it, and nothing else; it
 * forces, imports, places and gives nothing; a scope that is gone allows
 * nothing at all.
 */
static void test_confined_rights_whatever_the_uid(void **state) {
        static const char *const paths[] = { "/", "/a", "/d", "/d/x", "/d/x/y", "/e" };
        Fixture *f = *state;
        MemGroup *scope = group_at(f, "/d/x");
        const uid_t uids[] = { UID_ROOT, UID_DELEGATE, UID_STRANGER };

        for (size_t i = 0; i < ELEMENTSOF(uids); i++) {
                AuthzWho in = { .uid = uids[i], .pid = PID_EXTRA, .confined = true, .scope = scope };
                AuthzWho nowhere = { .uid = uids[i], .pid = PID_EXTRA, .confined = true };

                assert_false(authz_is_root(&in));
                for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                        MemGroup *g = group_at(f, paths[k]);
                        bool inside = listed("/d/x /d/x/y", paths[k]);

                        assert_int_equal(authz_may_use(&in, g), inside);
                        assert_int_equal(authz_may_create_in(&in, g), inside);
                        assert_int_equal(authz_may_modify(&in, g), strcmp(paths[k], "/d/x/y") == 0);
                        assert_int_equal(authz_may_reset_peak(&in, g), inside);
                        assert_int_equal(authz_may_read(READ_ACCESS_ALL, CONFINED_READ_SUBTREE, &in, g), inside);
                        assert_true(authz_may_read(READ_ACCESS_ALL, CONFINED_READ_ALL, &in, g));
                        assert_int_equal(authz_may_read(READ_ACCESS_ROOT, CONFINED_READ_ALL, &in, g), inside);
                        assert_false(authz_may_use(&nowhere, g));
                        assert_false(authz_may_modify(&nowhere, g));
                        assert_false(authz_may_read(READ_ACCESS_ALL, CONFINED_READ_SUBTREE, &nowhere, g));
                        group_unref(g);
                }
                assert_false(authz_may_force(&in));
                assert_false(authz_may_import(&in));
                assert_false(authz_may_place(&in));
                assert_false(authz_may_give(&in, uids[i]));
                assert_false(authz_may_move(&in, PID_OTHER));
                assert_true(authz_may_move(&in, 0));
                assert_false(authz_may_read_client(READ_ACCESS_ALL, &in, PID_OTHER));
                assert_true(authz_may_read_client(READ_ACCESS_ALL, &in, PID_EXTRA));
        }
        group_unref(scope);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_confined_rights_whatever_the_uid),
                SERVICE_TEST(test_may_use_and_create_in_cover_the_delegated_subtree),
                SERVICE_TEST(test_may_modify_only_strictly_below_the_delegated_group),
                SERVICE_TEST(test_may_reset_peak_includes_the_delegated_group_itself),
                SERVICE_TEST(test_may_read_under_each_read_access),
                SERVICE_TEST(test_a_group_owned_by_root_delegates_nothing),
                cmocka_unit_test(test_may_give_is_root_only_but_for_oneself),
                cmocka_unit_test(test_may_read_client_own_pid_always_others_by_access),
                cmocka_unit_test(test_may_move_own_sessions_or_as_root),
                cmocka_unit_test(test_may_force_and_import_are_root_only),
                cmocka_unit_test(test_read_access_names_round_trip),
                cmocka_unit_test(test_read_access_rejects_unknown_names_and_values),
                SERVICE_TEST(test_service_create_follows_may_create_in),
                SERVICE_TEST(test_service_remove_follows_may_modify),
                SERVICE_TEST(test_service_set_limits_follows_may_modify),
                SERVICE_TEST(test_service_charges_follow_may_use),
                SERVICE_TEST(test_service_reset_peak_follows_may_reset_peak),
                SERVICE_TEST(test_service_reads_follow_may_read),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
