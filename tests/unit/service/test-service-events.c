/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the service tells the outside (service.c, events.c) without a
 * daemon: the commit callback for exactly the durable changes, the sink
 * (the bus's role) for group changes and memory events, subscriptions
 * (the socket's role) for the memory events of a subtree through an
 * EventDelivery, the moved session's notice, and the refusals of
 * subscribe.
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

static int subscribe(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_subscribe(f->svc, p, path, rf);
}

static int charge(Fixture *f, Peer *p, ServiceCharge c, Refusal *rf) {
        ServiceChargeResult res;

        refusal_init(rf);
        return service_charge(f->svc, p, &c, &res, rf);
}

/* A memory event on @path, raised as the core raises them. */
static void raise_event(Fixture *f, const char *path, MemEvent ev) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(f->core, path, &g), 0);
        group_event_raise(g, ev);
        group_unref(g);
}

static int ignore_read(void *userdata, const char *path, const MemGroupInfo *info) {
        (void) userdata, (void) path, (void) info;
        return 0;
}

/* ---- commits ----------------------------------------------------------------- */

/* Every operation that changes nothing durable, once, on a tree with a session. */
static void run_non_durable_operations(Fixture *f) {
        ServiceCharge u = session_bytes(NULL, PAGE);
        uint64_t rss[_MEM_RSS_MAX];
        ServiceHello h;
        Refusal rf;
        pid_t pid;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 2 * PAGE), &rf), &rf);
        refusal_init(&rf);
        assert_not_refused(service_uncharge(f->svc, f->delegate, &u, &rf), &rf);
        assert_not_refused(service_move(f->svc, f->delegate, 0, "/d/x/y", &rf), &rf);
        assert_not_refused(service_attach(f->svc, f->other, "/e", &rf), &rf);
        assert_not_refused(
                service_get_group(f->svc, f->root, "/d", NULL, SERVICE_READ_EXACT, ignore_read, NULL, &rf),
                &rf);
        assert_not_refused(
                service_list_groups(f->svc, NULL, "/", SERVICE_READ_RECURSIVE, ignore_read, NULL, &rf), &rf);
        assert_not_refused(service_reset_peak(f->svc, f->delegate, "/d", &rf), &rf);
        assert_not_refused(service_hello(f->svc, f->bus, NULL, &h, &rf), &rf);
        assert_not_refused(service_get_client(f->svc, f->delegate, 0, true, &pid, rss, &rf), &rf);
        assert_not_refused(service_subscribe(f->svc, f->delegate, "/d", &rf), &rf);
}

static void test_commit_is_called_for_exactly_the_durable_changes(void **state) {
        Fixture *f = *state;
        MemLimits l = limits_max(64 * PAGE);
        ServiceCharge k = kept_bytes("/c", PAGE);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->root, "/c", &l, false, 0, &rf), &rf);
        assert_int_equal(fixture_commits(f), 1);
        assert_not_refused(service_set_limits(f->svc, f->root, "/c", &l, false, &rf), &rf);
        assert_int_equal(fixture_commits(f), 2);
        assert_not_refused(charge(f, f->root, k, &rf), &rf);
        assert_int_equal(fixture_commits(f), 3);
        assert_not_refused(service_uncharge(f->svc, f->root, &k, &rf), &rf);
        assert_int_equal(fixture_commits(f), 4);
        assert_not_refused(service_remove_group(f->svc, f->root, "/c", &rf), &rf);
        assert_int_equal(fixture_commits(f), 5);
        run_non_durable_operations(f);
        assert_int_equal(fixture_commits(f), 5);
}

static void test_refused_operations_commit_nothing(void **state) {
        Fixture *f = *state;
        MemLimits l = limits_max(PAGE);
        ServiceCharge k = kept_bytes("/a", PAGE);
        Refusal rf;

        tree_set_max(f, "/a", PAGE);
        refusal_init(&rf);
        assert_true(service_create_group(f->svc, f->delegate, "/c", NULL, false, 0, &rf) < 0);
        assert_true(service_remove_group(f->svc, f->delegate, "/d", &rf) < 0);
        assert_true(service_set_limits(f->svc, f->other, "/d/x", &l, false, &rf) < 0);
        assert_true(charge(f, f->root, kept_bytes("/a", 2 * PAGE), &rf) < 0);
        assert_true(service_uncharge(f->svc, f->root, &k, &rf) < 0);
        assert_int_equal(fixture_commits(f), 0);
}

/* ---- the sink ------------------------------------------------------------------ */

static void test_sink_hears_every_group_change_in_order(void **state) {
        Fixture *f = *state;
        MemLimits l1 = { .set = MEM_LIMIT_MAX | MEM_LIMIT_MIN, .max = 8 * PAGE, .min = PAGE };
        MemLimits l2 = { .set = MEM_LIMIT_HIGH, .high = 4 * PAGE };
        static const EventKind kinds[] = { EVENT_GROUP_ADDED, EVENT_LIMITS_CHANGED, EVENT_LIMITS_CHANGED,
                                           EVENT_GROUP_REMOVED };
        const unsigned masks[] = { 0, l1.set, l2.set, 0 };
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_create_group(f->svc, f->delegate, "/d/c", &l1, false, 0, &rf), &rf);
        assert_not_refused(service_set_limits(f->svc, f->delegate, "/d/c", &l2, false, &rf), &rf);
        assert_not_refused(service_remove_group(f->svc, f->delegate, "/d/c", &rf), &rf);
        assert_int_equal(f->sink.n, 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(f->sink.v[i].kind, kinds[i]);
                assert_string_equal(f->sink.v[i].path, "/d/c");
                assert_int_equal(f->sink.v[i].limits, masks[i]);
        }
        /* Group changes go to the sink only, not to subscribers. */
        assert_int_equal(f->delegate_inbox.n, 0);
}

static void test_sink_hears_the_max_event_of_a_refused_charge(void **state) {
        Fixture *f = *state;
        MemGroupInfo info;
        Refusal rf;

        tree_set_max(f, "/d", PAGE);
        assert_int_equal(charge(f, f->delegate, session_bytes("/d/x", 2 * PAGE), &rf), -EDQUOT);
        info = tree_info(f, "/d");
        /* Max on the first try, oom when no drain could help. */
        assert_int_equal(f->sink.n, 2);
        assert_int_equal(f->sink.v[0].kind, EVENT_MEMORY);
        assert_int_equal(f->sink.v[0].event, MEM_EVENT_MAX);
        assert_string_equal(f->sink.v[0].path, "/d");
        assert_int_equal(f->sink.v[0].count, info.events_local[MEM_EVENT_MAX]);
        assert_int_equal(f->sink.v[1].kind, EVENT_MEMORY);
        assert_int_equal(f->sink.v[1].event, MEM_EVENT_OOM);
        assert_int_equal(f->sink.v[1].count, info.events_local[MEM_EVENT_OOM]);
        assert_false(f->sink.overflow);
}

/* ---- subscriptions ----------------------------------------------------------- */

static void test_subscription_delivers_the_memory_events_of_its_subtree_only(void **state) {
        static const char *const raised[] = { "/d", "/d/x/y", "/dx", "/e", "/" };
        Fixture *f = *state;
        Refusal rf;

        tree_create(f, "/dx", UID_ROOT); /* a sibling whose name starts with "d" */
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        for (size_t i = 0; i < sizeof(raised) / sizeof(raised[0]); i++)
                raise_event(f, raised[i], MEM_EVENT_HIGH);
        assert_int_equal(f->delegate_inbox.n, 2);
        assert_string_equal(f->delegate_inbox.v[0].path, "/d");
        assert_string_equal(f->delegate_inbox.v[1].path, "/d/x/y");
        assert_int_equal(f->delegate_inbox.v[1].kind, EVENT_MEMORY);
        assert_int_equal(f->delegate_inbox.v[1].event, MEM_EVENT_HIGH);
        assert_int_equal(f->delegate_inbox.v[1].count, 1);
        /* Nobody else subscribed; the sink hears all of them. */
        assert_int_equal(f->other_inbox.n, 0);
        assert_int_equal(event_log_count(&f->sink, EVENT_MEMORY, MEM_EVENT_HIGH), 5);
}

static void test_subscription_to_the_root_hears_every_group(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(subscribe(f, f->other, NULL, &rf), &rf);
        assert_not_refused(subscribe(f, f->root, "", &rf), &rf);
        raise_event(f, "/d/x", MEM_EVENT_LOW);
        raise_event(f, "/e", MEM_EVENT_MAX);
        raise_event(f, "/e", MEM_EVENT_MAX);
        assert_int_equal(f->other_inbox.n, 3);
        assert_int_equal(f->root_inbox.n, 3);
        assert_non_null(event_log_find(&f->other_inbox, EVENT_MEMORY, MEM_EVENT_LOW, "/d/x"));
        /* The count is the group's local count after the event. */
        assert_int_equal(f->other_inbox.v[2].count, 2);
}

static void test_subscription_delivers_a_refused_charge_as_it_happens(void **state) {
        Fixture *f = *state;
        Refusal rf;

        tree_set_max(f, "/d/x", PAGE);
        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        assert_int_equal(charge(f, f->delegate, session_bytes("/d/x/y", 2 * PAGE), &rf), -EDQUOT);
        assert_non_null(event_log_find(&f->delegate_inbox, EVENT_MEMORY, MEM_EVENT_MAX, "/d/x"));
        assert_non_null(event_log_find(&f->delegate_inbox, EVENT_MEMORY, MEM_EVENT_OOM, "/d/x"));
        assert_int_equal(f->delegate_inbox.n, f->sink.n);
}

static void test_subscribers_of_one_delivery_share_one_encoding(void **state) {
        Fixture *f = *state;
        Peer *second = fixture_peer_new(f, UID_STRANGER, true, true);
        Refusal rf;

        assert_not_refused(subscribe(f, f->delegate, "/d", &rf), &rf);
        assert_not_refused(subscribe(f, second, "/", &rf), &rf);
        raise_event(f, "/d/x", MEM_EVENT_HIGH);
        raise_event(f, "/d", MEM_EVENT_MAX);
        assert_int_equal(test_delivery_encodes, 2);
        assert_int_equal(f->delegate_inbox.n, 2);
        assert_int_equal(fixture_peer_inbox(f, second)->n, 2);
}

/* A second transport that delivers events: its own encodings, counted apart. */
static unsigned other_encodes;

static int other_encode(const EventItem *ev, uint8_t **ret, size_t *ret_len) {
        int r = test_delivery.encode(ev, ret, ret_len);

        /* The same format, but counted as this delivery's, not test_delivery's. */
        test_delivery_encodes--;
        other_encodes++;
        return r;
}

static void other_push(void *userdata, const uint8_t *buf, size_t len) {
        test_delivery.push(userdata, buf, len);
}

static const EventDelivery other_delivery = { .encode = other_encode, .push = other_push };

/* events.h: encode is "called once per event for all the subscribers
 * that share this delivery", whatever the order they subscribed in. */
static void test_each_delivery_encodes_an_event_once_whatever_the_order(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_with_delivery(f, UID_STRANGER, &other_delivery);
        Refusal rf;

        assert_not_refused(subscribe(f, f->delegate, "/", &rf), &rf);
        assert_not_refused(subscribe(f, p, "/", &rf), &rf);
        assert_not_refused(subscribe(f, f->other, "/", &rf), &rf);
        test_delivery_encodes = other_encodes = 0;
        raise_event(f, "/a", MEM_EVENT_HIGH);
        assert_int_equal(f->delegate_inbox.n, 1);
        assert_int_equal(fixture_peer_inbox(f, p)->n, 1);
        assert_int_equal(f->other_inbox.n, 1);
        assert_int_equal(other_encodes, 1);
        assert_int_equal(test_delivery_encodes, 1);
}

static void test_subscriptions_stop_when_the_peer_is_freed(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_STRANGER, true, true);
        EventLog *inbox = fixture_peer_inbox(f, p);
        Refusal rf;

        assert_not_refused(subscribe(f, p, "/", &rf), &rf);
        assert_not_refused(subscribe(f, p, "/d", &rf), &rf);
        raise_event(f, "/e", MEM_EVENT_HIGH);
        assert_int_equal(inbox->n, 1);
        fixture_peer_free(f, p);
        raise_event(f, "/e", MEM_EVENT_HIGH);
        raise_event(f, "/d", MEM_EVENT_HIGH);
        assert_int_equal(inbox->n, 1);
        /* The others' deliveries go on. */
        assert_int_equal(event_log_count(&f->sink, EVENT_MEMORY, MEM_EVENT_HIGH), 3);
}

static void test_subscribe_refuses_a_transport_that_cannot_deliver(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(subscribe(f, f->bus, "/d", &rf), &rf, -EINVAL, "this transport cannot deliver events");
        assert_refused(subscribe(f, service_daemon_peer(f->svc), "/", &rf), &rf, -EINVAL,
                       "this transport cannot deliver events");
        assert_int_equal(f->bus->subscriber.nsubs, 0);
}

static void test_subscribe_refuses_missing_and_malformed_groups(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(subscribe(f, f->delegate, "/nosuch", &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(subscribe(f, f->delegate, "d", &rf), &rf, -EINVAL, "d: path must start with '/'");
        assert_refused(subscribe(f, f->delegate, "/d/x/y/z/w", &rf), &rf, -EMLINK, "/d/x/y/z/w: too deep");
        assert_int_equal(f->delegate->subscriber.nsubs, 0);
}

static void test_subscribe_follows_read_access(void **state) {
        Fixture *f = *state;
        Refusal rf;

        fixture_settings(f, READ_ACCESS_OWNER, 0);
        assert_refused(subscribe(f, f->delegate, "/e", &rf), &rf, -EPERM, "/e: permission denied");
        assert_refused(subscribe(f, f->delegate, NULL, &rf), &rf, -EPERM, "/: permission denied");
        assert_not_refused(subscribe(f, f->delegate, "/d/x", &rf), &rf);
        assert_not_refused(subscribe(f, f->root, "/e", &rf), &rf);
        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_refused(subscribe(f, f->delegate, "/d", &rf), &rf, -EPERM, "/d: permission denied");
        assert_not_refused(subscribe(f, f->root, NULL, &rf), &rf);
        assert_int_equal(f->delegate->subscriber.nsubs, 1);
        assert_int_equal(f->root->subscriber.nsubs, 2);
}

/* A reload that closes reads (SIGHUP) is for what the peers see from then
 * on: events included (authz_may_read()), not only new subscriptions. */
static void test_subscription_stops_delivering_what_a_reload_forbids(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(subscribe(f, f->other, "/", &rf), &rf);
        raise_event(f, "/d", MEM_EVENT_HIGH);
        assert_int_equal(f->other_inbox.n, 1);
        fixture_settings(f, READ_ACCESS_OWNER, 0);
        raise_event(f, "/d", MEM_EVENT_HIGH);
        raise_event(f, "/e", MEM_EVENT_HIGH); /* its own: still readable */
        assert_int_equal(event_log_count(&f->other_inbox, EVENT_MEMORY, MEM_EVENT_HIGH), 2);
        assert_string_equal(f->other_inbox.v[1].path, "/e");
}

static void test_subscriptions_are_bounded_per_connection(void **state) {
        Fixture *f = *state;
        Refusal rf;

        for (unsigned i = 0; i < SERVICE_SUBSCRIPTIONS_MAX; i++)
                assert_not_refused(subscribe(f, f->delegate, i % 2 ? "/d" : "/d/x", &rf), &rf);
        assert_refused(subscribe(f, f->delegate, "/d", &rf), &rf, -ENOSPC,
                       "too many subscriptions on one connection");
        assert_int_equal(f->delegate->subscriber.nsubs, SERVICE_SUBSCRIPTIONS_MAX);
        /* The bound is per connection. */
        assert_not_refused(subscribe(f, f->other, "/d", &rf), &rf);
}

/* ---- moves ----------------------------------------------------------------- */

static void test_moved_session_is_told_where_it_is_now(void **state) {
        Fixture *f = *state;
        const Recorded *moved;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d", PAGE), &rf), &rf);
        refusal_init(&rf);
        assert_int_equal(service_move(f->svc, f->root, PID_DELEGATE, "/d/x/y", &rf), 1);
        moved = event_log_find(&f->delegate_inbox, EVENT_MOVED, -1, NULL);
        assert_non_null(moved);
        assert_string_equal(moved->path, "/d/x/y");
        /* Its own move too; no subscription needed. */
        assert_int_equal(service_move(f->svc, f->delegate, 0, "/d/x", &rf), 1);
        assert_int_equal(event_log_count(&f->delegate_inbox, EVENT_MOVED, -1), 2);
        assert_string_equal(f->delegate_inbox.v[f->delegate_inbox.n - 1].path, "/d/x");
}

static void test_moved_notice_goes_to_the_moved_session_only(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(subscribe(f, f->other, "/", &rf), &rf);
        assert_not_refused(charge(f, f->delegate, session_bytes("/d", PAGE), &rf), &rf);
        assert_not_refused(charge(f, f->bus, session_bytes("/d", PAGE), &rf), &rf);
        refusal_init(&rf);
        assert_int_equal(service_move(f->svc, f->root, PID_DELEGATE, "/d/x", &rf), 1);
        /* The bus peer has no delivery: moved all the same, told nothing. */
        assert_int_equal(service_move(f->svc, f->root, PID_BUS, "/d/x", &rf), 1);
        assert_int_equal(event_log_count(&f->delegate_inbox, EVENT_MOVED, -1), 1);
        assert_int_equal(event_log_count(&f->other_inbox, EVENT_MOVED, -1), 0);
        assert_int_equal(event_log_count(&f->root_inbox, EVENT_MOVED, -1), 0);
        assert_int_equal(event_log_count(&f->sink, EVENT_MOVED, -1), 0);
        assert_true(tree_usage(f, "/d/x") == 2 * PAGE);
}

static void test_refused_move_tells_nothing(void **state) {
        Fixture *f = *state;
        Refusal rf;

        tree_set_max(f, "/d/x", PAGE);
        assert_not_refused(charge(f, f->delegate, session_bytes("/d", 2 * PAGE), &rf), &rf);
        refusal_init(&rf);
        assert_int_equal(service_move(f->svc, f->delegate, 0, "/d/x", &rf), -EDQUOT);
        assert_int_equal(event_log_count(&f->delegate_inbox, EVENT_MOVED, -1), 0);
        /* The refusal raised max on the group that refused. */
        assert_non_null(event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_MAX, "/d/x"));
}

/* ---- which subscriptions an event reaches ---------------------------------------- */

static void test_path_within_matches_whole_components(void **state) {
        (void) state;
        assert_true(events_path_within("/d", "/d"));
        assert_true(events_path_within("/d/x/y", "/d"));
        assert_true(events_path_within("/anything", "/"));
        assert_true(events_path_within("/", "/"));
        assert_false(events_path_within("/dx", "/d"));
        assert_false(events_path_within("/d", "/d/x"));
        assert_false(events_path_within("/", "/d"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_commit_is_called_for_exactly_the_durable_changes),
                SERVICE_TEST(test_refused_operations_commit_nothing),
                SERVICE_TEST(test_sink_hears_every_group_change_in_order),
                SERVICE_TEST(test_sink_hears_the_max_event_of_a_refused_charge),
                SERVICE_TEST(test_subscription_delivers_the_memory_events_of_its_subtree_only),
                SERVICE_TEST(test_subscription_to_the_root_hears_every_group),
                SERVICE_TEST(test_subscription_delivers_a_refused_charge_as_it_happens),
                SERVICE_TEST(test_subscribers_of_one_delivery_share_one_encoding),
                SERVICE_TEST(test_each_delivery_encodes_an_event_once_whatever_the_order),
                SERVICE_TEST(test_subscriptions_stop_when_the_peer_is_freed),
                SERVICE_TEST(test_subscribe_refuses_a_transport_that_cannot_deliver),
                SERVICE_TEST(test_subscribe_refuses_missing_and_malformed_groups),
                SERVICE_TEST(test_subscribe_follows_read_access),
                SERVICE_TEST(test_subscription_stops_delivering_what_a_reload_forbids),
                SERVICE_TEST(test_subscriptions_are_bounded_per_connection),
                SERVICE_TEST(test_moved_session_is_told_where_it_is_now),
                SERVICE_TEST(test_moved_notice_goes_to_the_moved_session_only),
                SERVICE_TEST(test_refused_move_tells_nothing),
                SERVICE_TEST(test_path_within_matches_whole_components),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
