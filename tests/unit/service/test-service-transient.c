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
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "service-test.h"
#include "service/service-internal.h"

/* @path made as a restart restores a group saved transient: marked, and
 * an orphan of the service, removable after @grace_msec. */
static void restored_transient(Fixture *f, const char *path, uid_t owner, const char *grace_msec) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;

        tree_create(f, path, owner);
        assert_int_equal(group_get(f->core, path, &g), 0);
        atomic_store(&g->transient, true);
        assert_int_equal(setenv("MEMACCTD_TRANSIENT_GRACE_MSEC", grace_msec, 1), 0);
        assert_int_equal(service_transient_restore(f->svc), 0);
        assert_int_equal(unsetenv("MEMACCTD_TRANSIENT_GRACE_MSEC"), 0);
}

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

static void test_restored_transient_group_waits_for_the_grace_period(void **state) {
        Fixture *f = *state;

        restored_transient(f, "/d/r", UID_DELEGATE, "600000");
        assert_int_equal(service_transient_orphans(f->svc), 1);
        service_transient_tick(f->svc);
        assert_true(tree_exists(f, "/d/r"));
        assert_int_equal(service_transient_orphans(f->svc), 1);
}

static void test_restored_transient_group_goes_when_empty_after_it(void **state) {
        Fixture *f = *state;
        Peer *user = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        restored_transient(f, "/d/r", UID_DELEGATE, "0");
        refusal_init(&rf);
        assert_not_refused(service_attach(f->svc, user, "/d/r", &rf), &rf);
        /* Busy: the housekeeping tick leaves it. */
        service_transient_tick(f->svc);
        assert_true(tree_exists(f, "/d/r"));
        fixture_peer_free(f, user);
        assert_false(tree_exists(f, "/d/r"));
        assert_int_equal(service_transient_orphans(f->svc), 0);
}

static void test_restored_transient_group_with_kept_charges_stays(void **state) {
        Fixture *f = *state;
        _cleanup_(group_unrefp) MemGroup *g = NULL;

        restored_transient(f, "/d/r", UID_DELEGATE, "0");
        assert_int_equal(group_get(f->core, "/d/r", &g), 0);
        atomic_store(&g->kept[0], 4096);
        service_transient_tick(f->svc);
        assert_true(tree_exists(f, "/d/r"));
        atomic_store(&g->kept[0], 0);
        service_transient_tick(f->svc);
        assert_false(tree_exists(f, "/d/r"));
}

static void test_owner_claims_a_restored_group_back(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        restored_transient(f, "/d/r", UID_DELEGATE, "0");
        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/r", NULL, false, 0, &rf), &rf);
        assert_int_equal(service_transient_orphans(f->svc), 0);
        /* Its creator now: the tick does not touch it, its going does. */
        service_transient_tick(f->svc);
        assert_true(tree_exists(f, "/d/r"));
        /* Claimed once: a second claim finds no orphan. */
        refusal_init(&rf);
        assert_int_equal(service_create_transient_group(f->svc, p, "/d/r", NULL, false, 0, &rf), -EEXIST);
        fixture_peer_free(f, p);
        assert_false(tree_exists(f, "/d/r"));
}

static void test_root_claims_a_restored_group_back(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_ROOT, true, false);
        Refusal rf;

        restored_transient(f, "/d/r", UID_DELEGATE, "0");
        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/r", NULL, false, 0, &rf), &rf);
        assert_int_equal(service_transient_orphans(f->svc), 0);
}

static void test_claims_that_stay_eexist(void **state) {
        Fixture *f = *state;
        Peer *creator = fixture_peer_new(f, UID_DELEGATE, true, false);
        Peer *other = fixture_peer_new(f, UID_OTHER, true, false);
        Peer *same = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        restored_transient(f, "/d/r", UID_DELEGATE, "600000");
        /* Another uid: not its group to claim; refused as its create
         * would be (not delegated to it). */
        refusal_init(&rf);
        assert_int_equal(service_create_transient_group(f->svc, other, "/d/r", NULL, false, 0, &rf), -EPERM);
        assert_int_equal(service_transient_orphans(f->svc), 1);
        /* An ordinary create never claims. */
        refusal_init(&rf);
        assert_int_equal(service_create_group(f->svc, same, "/d/r", NULL, false, 0, &rf), -EEXIST);
        assert_int_equal(service_transient_orphans(f->svc), 1);
        /* An ordinary group is never claimed. */
        refusal_init(&rf);
        assert_int_equal(service_create_transient_group(f->svc, same, "/d/x", NULL, false, 0, &rf), -EEXIST);
        /* A transient group whose creator is there is not an orphan. */
        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, creator, "/d/t", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_int_equal(service_create_transient_group(f->svc, same, "/d/t", NULL, false, 0, &rf), -EEXIST);
}

static void test_a_transient_create_marks_the_group(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        _cleanup_(group_unrefp) MemGroup *t = NULL, *k = NULL;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, p, "/d/k", NULL, false, 0, &rf), &rf);
        assert_int_equal(group_get(f->core, "/d/t", &t), 0);
        assert_int_equal(group_get(f->core, "/d/k", &k), 0);
        assert_true(atomic_load(&t->transient));
        assert_false(atomic_load(&k->transient));
}

static void test_a_stopping_daemon_keeps_transient_groups(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_transient_group(f->svc, p, "/d/t", NULL, false, 0, &rf), &rf);
        service_stopping(f->svc);
        fixture_peer_free(f, p);
        assert_true(tree_exists(f, "/d/t"));
        assert_int_equal(service_transient_orphans(f->svc), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_transient_group_goes_with_its_creator),
                SERVICE_TEST(test_transient_group_in_use_waits_for_its_last_session),
                SERVICE_TEST(test_transient_group_with_a_child_stays_until_it_is_empty),
                SERVICE_TEST(test_transient_group_made_again_by_another_is_left),
                SERVICE_TEST(test_transient_removal_is_a_durable_change),
                SERVICE_TEST(test_the_daemon_makes_no_transient_groups),
                SERVICE_TEST(test_restored_transient_group_waits_for_the_grace_period),
                SERVICE_TEST(test_restored_transient_group_goes_when_empty_after_it),
                SERVICE_TEST(test_restored_transient_group_with_kept_charges_stays),
                SERVICE_TEST(test_owner_claims_a_restored_group_back),
                SERVICE_TEST(test_root_claims_a_restored_group_back),
                SERVICE_TEST(test_claims_that_stay_eexist),
                SERVICE_TEST(test_a_transient_create_marks_the_group),
                SERVICE_TEST(test_a_stopping_daemon_keeps_transient_groups),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
