/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What one uid may make the daemon hold (registry.c's UidUsage, enforced
 * in service-groups.c, service-charges.c and service.c): groups per
 * owner and for all owners but root, subscriptions per uid across its
 * peers, socket connections, and the output bound the socket pauses on.
 * Root is never refused; a released count can be taken again; the group
 * counts start from the tree that was there before the service.
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

static void set_bounds(Fixture *f, RegistryBounds b) {
        ServiceSettings s = fixture_settings_default();

        s.bounds = b;
        service_set_settings(f->svc, &s);
}

static unsigned count(Fixture *f, uid_t uid, UidResource what) {
        return registry_uid_count(f->svc->registry, uid, what);
}

static int create(Fixture *f, Peer *p, const char *path, bool has_owner, uid_t owner, Refusal *rf) {
        refusal_init(rf);
        return service_create_group(f->svc, p, path, NULL, has_owner, owner, rf);
}

static int subscribe(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_subscribe(f->svc, p, path, rf);
}

/* The tree was made before the service: /d is UID_DELEGATE's, /e UID_OTHER's. */
static void test_group_counts_start_from_the_tree(void **state) {
        Fixture *f = *state;

        assert_int_equal(count(f, UID_DELEGATE, UID_GROUPS), 1);
        assert_int_equal(count(f, UID_OTHER, UID_GROUPS), 1);
        assert_int_equal(count(f, UID_STRANGER, UID_GROUPS), 0);
}

static void test_groups_per_uid_bounds_the_owner_not_root(void **state) {
        Fixture *f = *state;
        const unsigned max = 3;
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .per_uid[UID_GROUPS] = max });
        /* /d counts: max - 1 more fit. */
        for (unsigned i = 1; i < max; i++) {
                char path[32];

                snprintf(path, sizeof(path), "/d/g%u", i);
                assert_not_refused(create(f, f->delegate, path, false, 0, &rf), &rf);
        }
        assert_int_equal(count(f, UID_DELEGATE, UID_GROUPS), max);
        assert_refused(create(f, f->delegate, "/d/g9", false, 0, &rf), &rf, -ENOSPC,
                       "/d/g9: uid %u owns too many groups ([limits] groups-per-uid = %u)", UID_DELEGATE, max);
        assert_false(tree_exists(f, "/d/g9"));
        /* Root gives it one more anyway; it counts. */
        assert_not_refused(create(f, f->root, "/a/given", true, UID_DELEGATE, &rf), &rf);
        assert_int_equal(count(f, UID_DELEGATE, UID_GROUPS), max + 1);
        /* Removing gives the count back. */
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, f->delegate, "/d/g1", &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, f->root, "/a/given", &rf), &rf);
        assert_int_equal(count(f, UID_DELEGATE, UID_GROUPS), max - 1);
        assert_not_refused(create(f, f->delegate, "/d/g9", false, 0, &rf), &rf);
        /* Another uid has its own count. */
        assert_not_refused(create(f, f->other, "/e/h", false, 0, &rf), &rf);
        assert_int_equal(count(f, UID_OTHER, UID_GROUPS), 2);
}

static void test_groups_of_all_uids_but_root_keep_roots_room(void **state) {
        Fixture *f = *state;
        const unsigned total = 4; /* /d and /e hold two */
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .total[UID_GROUPS] = total });
        assert_not_refused(create(f, f->delegate, "/d/g1", false, 0, &rf), &rf);
        assert_not_refused(create(f, f->other, "/e/h1", false, 0, &rf), &rf);
        assert_refused(create(f, f->delegate, "/d/g2", false, 0, &rf), &rf, -ENOSPC,
                       "/d/g2: the %u groups uids other than root may own are used up (the rest of "
                       "[limits] groups is root's)", total);
        /* Root's own groups are not counted at all. */
        assert_not_refused(create(f, f->root, "/a/z", false, 0, &rf), &rf);
        assert_int_equal(count(f, UID_ROOT, UID_GROUPS), 0);
}

static void test_subscriptions_per_uid_count_every_peer_of_the_uid(void **state) {
        Fixture *f = *state;
        Peer *second = fixture_peer_new(f, UID_DELEGATE, true, true);
        const unsigned max = 3;
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .per_uid[UID_SUBSCRIPTIONS] = max });
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        assert_not_refused(subscribe(f, f->delegate, "/", &rf), &rf);
        assert_not_refused(subscribe(f, second, "/d/x", &rf), &rf);
        assert_refused(subscribe(f, f->delegate, "/d", &rf), &rf, -ENOSPC,
                       "too many subscriptions for uid %u ([limits] subscriptions-per-uid = %u)", UID_DELEGATE,
                       max);
        assert_int_equal(count(f, UID_DELEGATE, UID_SUBSCRIPTIONS), max);
        /* Root is never refused. */
        for (unsigned i = 0; i <= max; i++)
                assert_not_refused(subscribe(f, f->root, "/", &rf), &rf);
        /* A peer's end gives its subscriptions back. */
        fixture_peer_free(f, second);
        assert_int_equal(count(f, UID_DELEGATE, UID_SUBSCRIPTIONS), max - 1);
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
}

static void test_subscriptions_in_total_leave_root_out(void **state) {
        Fixture *f = *state;
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .total[UID_SUBSCRIPTIONS] = 2 });
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        assert_not_refused(subscribe(f, f->other, "/e", &rf), &rf);
        assert_refused(subscribe(f, f->other, "/", &rf), &rf, -ENOSPC,
                       "too many subscriptions ([limits] subscriptions = 2)");
        assert_not_refused(subscribe(f, f->root, "/", &rf), &rf);
}

/* However many of its subscriptions cover the group: one push per event. */
static void test_a_subscriber_gets_each_event_once(void **state) {
        Fixture *f = *state;
        MemGroup *g = NULL;
        Refusal rf;

        assert_not_refused(subscribe(f, f->delegate, "/", &rf), &rf);
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        assert_not_refused(subscribe(f, f->delegate, "/d/x", &rf), &rf);
        assert_not_refused(subscribe(f, f->other, "/d", &rf), &rf);
        assert_int_equal(group_get(f->core, "/d/x/y", &g), 0);
        group_event_raise(g, MEM_EVENT_HIGH);
        group_event_raise(g, MEM_EVENT_MAX);
        group_unref(g);
        assert_int_equal(event_log_count(&f->delegate_inbox, EVENT_MEMORY, MEM_EVENT_HIGH), 1);
        assert_int_equal(event_log_count(&f->delegate_inbox, EVENT_MEMORY, MEM_EVENT_MAX), 1);
        assert_int_equal(event_log_count(&f->other_inbox, EVENT_MEMORY, MEM_EVENT_HIGH), 1);
}

static void test_connections_per_uid_and_in_total(void **state) {
        Fixture *f = *state;
        PeerCreds d = { .pid = 1, .uid = UID_DELEGATE }, o = { .pid = 2, .uid = UID_OTHER },
                  r = { .pid = 3, .uid = UID_ROOT };
        UidUsage *u[8] = {};
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .per_uid[UID_CONNECTIONS] = 2, .total[UID_CONNECTIONS] = 3 });
        refusal_init(&rf);
        assert_not_refused(service_connection_open(f->svc, &d, &u[0], &rf), &rf);
        assert_not_refused(service_connection_open(f->svc, &d, &u[1], &rf), &rf);
        assert_refused(service_connection_open(f->svc, &d, &u[2], &rf), &rf, -EUSERS,
                       "too many connections for uid %u ([limits] connections-per-uid = 2)", UID_DELEGATE);
        refusal_init(&rf);
        assert_not_refused(service_connection_open(f->svc, &o, &u[3], &rf), &rf);
        assert_refused(service_connection_open(f->svc, &o, &u[4], &rf), &rf, -EUSERS,
                       "too many connections ([limits] connections = 3)");
        /* Root gets in past both. */
        refusal_init(&rf);
        assert_not_refused(service_connection_open(f->svc, &r, &u[5], &rf), &rf);
        assert_int_equal(count(f, UID_DELEGATE, UID_CONNECTIONS), 2);
        u[0] = service_connection_close(f->svc, u[0]);
        assert_int_equal(count(f, UID_DELEGATE, UID_CONNECTIONS), 1);
        assert_not_refused(service_connection_open(f->svc, &o, &u[4], &rf), &rf);
        for (size_t i = 0; i < 8; i++)
                u[i] = service_connection_close(f->svc, u[i]);
        assert_int_equal(count(f, UID_OTHER, UID_CONNECTIONS), 0);
}

static void test_output_over_its_bounds_never_for_root(void **state) {
        Fixture *f = *state;
        PeerCreds d = { .pid = 1, .uid = UID_DELEGATE }, o = { .pid = 2, .uid = UID_OTHER },
                  r = { .pid = 3, .uid = UID_ROOT };
        UidUsage *ud = NULL, *uo = NULL, *ur = NULL;
        Refusal rf;

        set_bounds(f, (RegistryBounds) { .output_per_uid = 100, .output_total = 150 });
        refusal_init(&rf);
        assert_not_refused(service_connection_open(f->svc, &d, &ud, &rf), &rf);
        assert_not_refused(service_connection_open(f->svc, &o, &uo, &rf), &rf);
        assert_not_refused(service_connection_open(f->svc, &r, &ur, &rf), &rf);
        service_output_add(f->svc, ud, 100);
        assert_false(service_output_over(f->svc, ud));
        service_output_add(f->svc, ud, 1);
        assert_true(service_output_over(f->svc, ud));
        assert_false(service_output_over(f->svc, uo));
        /* 101 + 50: the total is over, for every uid but root. */
        service_output_add(f->svc, uo, 50);
        assert_true(service_output_over(f->svc, uo));
        service_output_add(f->svc, ur, 1000);
        assert_false(service_output_over(f->svc, ur));
        service_output_add(f->svc, ud, -101);
        assert_false(service_output_over(f->svc, ud));
        assert_false(service_output_over(f->svc, uo));
        service_output_add(f->svc, uo, -50);
        service_output_add(f->svc, ur, -1000);
        ud = service_connection_close(f->svc, ud);
        uo = service_connection_close(f->svc, uo);
        ur = service_connection_close(f->svc, ur);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_group_counts_start_from_the_tree, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_groups_per_uid_bounds_the_owner_not_root, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_groups_of_all_uids_but_root_keep_roots_room, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_subscriptions_per_uid_count_every_peer_of_the_uid,
                                                service_setup, service_teardown),
                cmocka_unit_test_setup_teardown(test_subscriptions_in_total_leave_root_out, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_a_subscriber_gets_each_event_once, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_connections_per_uid_and_in_total, service_setup,
                                                service_teardown),
                cmocka_unit_test_setup_teardown(test_output_over_its_bounds_never_for_root, service_setup,
                                                service_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
