/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transient groups: removed when the peer that created them goes, once
 * they have no sessions and no children; kept while they have, and removed
 * when the last of those goes; never one created again by somebody else.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "service-test.h"

static void test_transient_group_goes_with_its_creator(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        /* An ordinary group of the same peer stays. */
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, p, "/d/k", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, p, "/d/t", &rf), &rf);
        assert_true(tree_exists(f, "/d/t"));
        fixture_peer_free(f, p);
        /* Its own session ended first: it did not keep the group. */
        assert_false(tree_exists(f, "/d/t"));
        assert_true(tree_exists(f, "/d/k"));
        assert_int_equal(service_transient_orphans(f->svc), 0);
}

static void test_transient_group_in_use_waits_for_its_last_session(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Peer *user = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, user, "/d/t", &rf), &rf);
        fixture_peer_free(f, p);
        assert_true(tree_exists(f, "/d/t"));
        assert_int_equal(service_transient_orphans(f->svc), 1);
        fixture_peer_free(f, user);
        assert_false(tree_exists(f, "/d/t"));
        assert_int_equal(service_transient_orphans(f->svc), 0);
}

static void test_transient_group_with_a_child_stays_until_it_is_empty(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Peer *later = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, p, "/d/t/c", NULL, false, 0, &rf), &rf);
        fixture_peer_free(f, p);
        assert_true(tree_exists(f, "/d/t"));
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, later, "/d/t/c", &rf), &rf);
        /* The next client to go retries it. */
        fixture_peer_free(f, later);
        assert_false(tree_exists(f, "/d/t"));
}

static void test_transient_group_made_again_by_another_is_left(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, f->delegate, "/d/t", &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->delegate, "/d/t", NULL, false, 0, &rf), &rf);
        fixture_peer_free(f, p);
        assert_true(tree_exists(f, "/d/t"));
}

static void test_transient_removal_is_a_durable_change(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_ROOT, true, false);
        unsigned before;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/a/t", NULL, false, 0, &rf), &rf);
        before = fixture_commits(f);
        fixture_peer_free(f, p);
        assert_false(tree_exists(f, "/a/t"));
        assert_int_equal(fixture_commits(f), before + 1);
        assert_non_null(event_log_find(&f->sink, EVENT_GROUP_REMOVED, -1, "/a/t"));
}

static void test_the_daemon_makes_no_transient_groups(void **state) {
        Fixture *f = *state;
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_create_transient_group(f->svc, service_daemon_peer(f->svc), "/a/t", NULL, false, 0, &rf);
        assert_refused(r, &rf, -EINVAL, "/a/t: the daemon's own groups are never transient");
        assert_false(tree_exists(f, "/a/t"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_transient_group_goes_with_its_creator),
                SERVICE_TEST(test_transient_group_in_use_waits_for_its_last_session),
                SERVICE_TEST(test_transient_group_with_a_child_stays_until_it_is_empty),
                SERVICE_TEST(test_transient_group_made_again_by_another_is_left),
                SERVICE_TEST(test_transient_removal_is_a_durable_change),
                SERVICE_TEST(test_the_daemon_makes_no_transient_groups),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
