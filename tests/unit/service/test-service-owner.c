/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service_set_owner() without a daemon: who may delegate a group to whom
 * (authz.c's rules, as a create's), that the change is committed, that
 * the per-uid group count follows the owner, and that a refusal changes
 * nothing. And what a group's info says of who holds its bytes
 * (service_info_kept(), service_info_session()).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "service/service-internal.h"
#include "service-test.h"

static int set_owner(Fixture *f, Peer *p, const char *path, uid_t owner, Refusal *rf) {
        refusal_init(rf);
        return service_set_owner(f->svc, p, path, owner, rf);
}

static unsigned count(Fixture *f, uid_t uid) {
        return registry_uid_count(f->svc->registry, uid, UID_GROUPS);
}

static void test_root_delegates_a_group_and_the_delegate_may_use_it(void **state) {
        Fixture *f = *state;
        unsigned before = count(f, UID_STRANGER);
        Refusal rf;

        assert_not_refused(set_owner(f, f->root, "/a", UID_DELEGATE, &rf), &rf);
        assert_int_equal(tree_info(f, "/a").owner, UID_DELEGATE);
        assert_int_equal(fixture_commits(f), 1);
        /* The delegate may now create below it, as if root had created it so. */
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->delegate, "/a/mine", NULL, false, 0, &rf), &rf);
        assert_int_equal(count(f, UID_STRANGER), before);
}

static void test_the_group_count_moves_to_the_new_owner(void **state) {
        Fixture *f = *state;
        unsigned delegate = count(f, UID_DELEGATE), other = count(f, UID_OTHER);
        Refusal rf;

        assert_not_refused(set_owner(f, f->root, "/d", UID_OTHER, &rf), &rf);
        assert_int_equal(count(f, UID_DELEGATE), delegate - 1);
        assert_int_equal(count(f, UID_OTHER), other + 1);
        /* Back to root: counted for nobody. */
        assert_not_refused(set_owner(f, f->root, "/d", UID_ROOT, &rf), &rf);
        assert_int_equal(count(f, UID_OTHER), other);
        assert_int_equal(tree_info(f, "/d").owner, UID_ROOT);
        /* The remove gives back the count of the owner it has now. */
        assert_not_refused(set_owner(f, f->root, "/b", UID_STRANGER, &rf), &rf);
        assert_int_equal(count(f, UID_STRANGER), 1);
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, f->root, "/b", &rf), &rf);
        assert_int_equal(count(f, UID_STRANGER), 0);
}

static void test_a_delegate_takes_a_group_back_but_gives_it_to_nobody_else(void **state) {
        Fixture *f = *state;
        Refusal rf;

        /* /d/x is root's, below /d, which is the delegate's. */
        assert_refused(set_owner(f, f->delegate, "/d/x", UID_OTHER, &rf), &rf, -EPERM,
                       "only root delegates to another uid");
        assert_int_equal(tree_info(f, "/d/x").owner, UID_ROOT);
        assert_int_equal(fixture_commits(f), 0);
        assert_not_refused(set_owner(f, f->delegate, "/d/x", UID_DELEGATE, &rf), &rf);
        assert_int_equal(tree_info(f, "/d/x").owner, UID_DELEGATE);
        assert_int_equal(fixture_commits(f), 1);
}

static void test_the_delegated_group_itself_and_others_are_refused(void **state) {
        Fixture *f = *state;
        Refusal rf;

        /* Its own delegated group the delegate may not reshape, as set limits. */
        assert_refused(set_owner(f, f->delegate, "/d", UID_DELEGATE, &rf), &rf, -EPERM,
                       "/d: permission denied");
        assert_refused(set_owner(f, f->other, "/a", UID_OTHER, &rf), &rf, -EPERM,
                       "/a: permission denied");
        assert_int_equal(tree_info(f, "/a").owner, UID_ROOT);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_the_root_missing_groups_and_no_uid_are_refused(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(set_owner(f, f->root, "/", UID_DELEGATE, &rf), &rf, -EINVAL, "/: the root is root's");
        assert_refused(set_owner(f, f->root, "/nope", UID_DELEGATE, &rf), &rf, -ENOENT,
                       "/nope: no such group");
        assert_refused(set_owner(f, f->root, "/a", (uid_t) -1, &rf), &rf, -EINVAL,
                       "/a: uid %u is no owner", (unsigned) (uid_t) -1);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_the_same_owner_again_saves_nothing(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(set_owner(f, f->root, "/e", UID_OTHER, &rf), &rf);
        assert_int_equal(fixture_commits(f), 0);
        assert_int_equal(count(f, UID_OTHER), 1);
}

static void test_kept_and_session_bytes_are_the_groups_own(void **state) {
        Fixture *f = *state;
        const uint64_t kept = 8 * PAGE, session = 3 * PAGE, child = 5 * PAGE;
        ServiceChargeResult res;
        ServiceCharge c;
        MemGroupInfo info;
        Refusal rf;

        c = kept_bytes("/a", kept);
        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        c = session_bytes("/a", session);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        tree_create(f, "/a/c", UID_ROOT);
        c = kept_bytes("/a/c", child);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);

        info = tree_info(f, "/a"); /* exact: the stats are flushed */
        assert_int_equal(info.current, kept + session + child);
        assert_int_equal(service_info_kept(&info), kept);
        assert_int_equal(service_info_session(&info), session);
        assert_int_equal(info.nr_attached, 1);
        info = tree_info(f, "/a/c");
        assert_int_equal(service_info_kept(&info), child);
        assert_int_equal(service_info_session(&info), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_root_delegates_a_group_and_the_delegate_may_use_it),
                SERVICE_TEST(test_the_group_count_moves_to_the_new_owner),
                SERVICE_TEST(test_a_delegate_takes_a_group_back_but_gives_it_to_nobody_else),
                SERVICE_TEST(test_the_delegated_group_itself_and_others_are_refused),
                SERVICE_TEST(test_the_root_missing_groups_and_no_uid_are_refused),
                SERVICE_TEST(test_the_same_owner_again_saves_nothing),
                SERVICE_TEST(test_kept_and_session_bytes_are_the_groups_own),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
