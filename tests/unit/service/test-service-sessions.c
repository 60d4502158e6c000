/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peers and sessions through the service (service.c, service-charges.c)
 * without a daemon: hello, sessions opened at once (the socket) or on
 * first use (the bus), the per-uid session cap, attach, move and the
 * client counters, each with every refusal it gives.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/session.h"
#include "service-test.h"

#define NO_SUCH_PID 424242

static int charge(Fixture *f, Peer *p, ServiceCharge c, Refusal *rf) {
        ServiceChargeResult res;

        refusal_init(rf);
        return service_charge(f->svc, p, &c, &res, rf);
}

static int attach(Fixture *f, Peer *p, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_attach(f->svc, p, path, rf);
}

static int move(Fixture *f, Peer *p, pid_t pid, const char *path, Refusal *rf) {
        refusal_init(rf);
        return service_move(f->svc, p, pid, path, rf);
}

static int get_client(Fixture *f, Peer *p, pid_t pid, pid_t *ret_pid, uint64_t rss[_MEM_RSS_MAX],
                      Refusal *rf) {
        refusal_init(rf);
        return service_get_client(f->svc, p, pid, true, ret_pid, rss, rf);
}

/* service_peer_new() as a transport calls it, refusals included. */
static int peer_new(Fixture *f, uid_t uid, pid_t pid, bool open_session, Peer **ret, Refusal *rf) {
        PeerCreds creds = { .pid = pid, .uid = uid, .gid = uid };

        refusal_init(rf);
        return service_peer_new(f->svc, &creds, NULL, NULL, open_session, ret, rf);
}

static ServiceCharge with_stat_file(ServiceCharge c) {
        c.stat = "file";
        return c;
}

static const char *attached_to(Peer *p) {
        MemGroup *g = p->session ? atomic_load(&p->session->group) : NULL;

        return g ? g->path : NULL;
}

/* ---- hello --------------------------------------------------------------- */

static void test_hello_tells_the_settings_and_who_the_peer_is(void **state) {
        Fixture *f = *state;
        ServiceSettings s = fixture_settings_default();
        const uint32_t one = 1, later = SERVICE_PROTOCOL_VERSION + 1;
        ServiceHello h = {};
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_hello(f->svc, f->delegate, &one, &h, &rf), &rf);
        assert_int_equal(h.version, SERVICE_PROTOCOL_VERSION);
        assert_int_equal(h.max_frame, s.max_frame);
        assert_true(h.charge_batch == s.charge_batch);
        assert_int_equal(h.pid, PID_DELEGATE);
        assert_int_equal(h.uid, UID_DELEGATE);
        /* Without a version, or a newer one: this daemon's is the answer. */
        assert_not_refused(service_hello(f->svc, f->bus, NULL, &h, &rf), &rf);
        assert_int_equal(h.pid, PID_BUS);
        assert_not_refused(service_hello(f->svc, f->bus, &later, &h, &rf), &rf);
        assert_int_equal(h.version, SERVICE_PROTOCOL_VERSION);
}

static void test_hello_follows_a_reload(void **state) {
        Fixture *f = *state;
        ServiceSettings s = fixture_settings_default();
        ServiceHello h = {};
        Refusal rf;

        s.max_frame *= 2;
        s.charge_batch /= 4;
        service_set_settings(f->svc, &s);
        refusal_init(&rf);
        assert_not_refused(service_hello(f->svc, f->root, NULL, &h, &rf), &rf);
        assert_int_equal(h.max_frame, s.max_frame);
        assert_true(h.charge_batch == s.charge_batch);
}

static void test_hello_refuses_protocol_version_0(void **state) {
        Fixture *f = *state;
        const uint32_t zero = 0;
        ServiceHello h = { .version = 77 };
        Refusal rf;

        refusal_init(&rf);
        assert_refused(service_hello(f->svc, f->delegate, &zero, &h, &rf), &rf, -EINVAL,
                       "protocol version 0 is not supported");
        assert_int_equal(h.version, 77);
}

/* ---- settings -------------------------------------------------------------- */

static void test_settings_read_back_as_set(void **state) {
        Fixture *f = *state;
        ServiceSettings s = fixture_settings_default(), now;

        s.max_frame = 12345;
        s.charge_batch = 3 * PAGE;
        s.read_access = READ_ACCESS_OWNER;
        s.max_sessions_per_uid = 5;
        service_set_settings(f->svc, &s);
        now = service_settings(f->svc);
        assert_int_equal(now.max_frame, s.max_frame);
        assert_true(now.charge_batch == s.charge_batch);
        assert_int_equal(now.read_access, s.read_access);
        /* "The settings in force": a caller that reads them, changes one
         * and sets them back must not lose the session cap. */
        assert_int_equal(now.max_sessions_per_uid, s.max_sessions_per_uid);
}

/* ---- sessions -------------------------------------------------------------- */

static void test_socket_peers_open_their_session_at_once(void **state) {
        Fixture *f = *state;
        Peer *p;

        /* root, delegate and other; the bus peer has none yet. */
        assert_int_equal(service_session_count(f->svc), 3);
        assert_null(f->bus->session);
        p = fixture_peer_new(f, UID_STRANGER, true, false);
        assert_non_null(p->session);
        assert_int_equal(service_session_count(f->svc), 4);
        fixture_peer_free(f, p);
        assert_int_equal(service_session_count(f->svc), 3);
}

static void test_bus_peer_opens_its_session_on_first_use(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->bus, session_bytes("/d/x", 2 * PAGE), &rf), &rf);
        assert_non_null(f->bus->session);
        assert_int_equal(service_session_count(f->svc), 4);
        assert_string_equal(attached_to(f->bus), "/d/x");
        assert_true(tree_usage(f, "/d/x") == 2 * PAGE);
}

static void test_peer_free_releases_what_its_session_holds_not_what_is_kept(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 3 * PAGE), &rf), &rf);
        assert_not_refused(charge(f, f->delegate, kept_bytes("/d", PAGE), &rf), &rf);
        fixture_peer_free(f, f->delegate);
        assert_true(tree_usage(f, "/d/x") == 0);
        assert_true(tree_usage(f, "/d") == PAGE);
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 0);
        assert_int_equal(service_session_count(f->svc), 2);
}

static void test_session_cap_refuses_the_next_socket_session_of_a_uid(void **state) {
        Fixture *f = *state;
        Peer *second = NULL, *third = NULL;
        Refusal rf;

        fixture_settings(f, READ_ACCESS_ALL, 2);
        /* The delegate's session is the uid's first. */
        assert_not_refused(peer_new(f, UID_DELEGATE, PID_EXTRA, true, &second, &rf), &rf);
        assert_refused(peer_new(f, UID_DELEGATE, PID_EXTRA + 1, true, &third, &rf), &rf, -EUSERS,
                       "too many sessions for uid %u", UID_DELEGATE);
        assert_null(third);
        assert_int_equal(service_session_count(f->svc), 4);
        /* One gone, one may come. */
        service_peer_free(second);
        assert_not_refused(peer_new(f, UID_DELEGATE, PID_EXTRA + 1, true, &third, &rf), &rf);
        service_peer_free(third);
}

static void test_session_cap_refuses_a_bus_session_at_its_first_use(void **state) {
        Fixture *f = *state;
        Refusal rf;

        fixture_settings(f, READ_ACCESS_ALL, 1);
        assert_refused(charge(f, f->bus, session_bytes("/d", PAGE), &rf), &rf, -EUSERS,
                       "too many sessions for uid %u", UID_DELEGATE);
        assert_refused(attach(f, f->bus, "/d", &rf), &rf, -EUSERS, "too many sessions for uid %u",
                       UID_DELEGATE);
        assert_null(f->bus->session);
        assert_true(tree_usage(f, "/d") == 0);
        assert_int_equal(service_session_count(f->svc), 3);
        /* A kept charge needs no session. */
        assert_not_refused(charge(f, f->bus, kept_bytes("/d", PAGE), &rf), &rf);
        fixture_peer_free(f, f->delegate);
        assert_not_refused(charge(f, f->bus, session_bytes("/d", PAGE), &rf), &rf);
        assert_non_null(f->bus->session);
}

static void test_session_cap_counts_each_uid_apart_and_never_root(void **state) {
        Fixture *f = *state;
        Peer *p[3] = {}, *q = NULL;
        Refusal rf;

        fixture_settings(f, READ_ACCESS_ALL, 1);
        for (size_t i = 0; i < 3; i++)
                assert_not_refused(peer_new(f, UID_ROOT, PID_EXTRA + (pid_t) i, true, &p[i], &rf), &rf);
        assert_not_refused(peer_new(f, UID_STRANGER, PID_EXTRA + 3, true, &q, &rf), &rf);
        assert_refused(peer_new(f, UID_OTHER, PID_EXTRA + 4, true, &q, &rf), &rf, -EUSERS,
                       "too many sessions for uid %u", UID_OTHER);
        assert_int_equal(service_session_count(f->svc), 3 + 3 + 1);
        service_peer_free(q);
        for (size_t i = 0; i < 3; i++)
                service_peer_free(p[i]);
}

/* ---- attach ---------------------------------------------------------------- */

static void test_attach_places_the_session_and_may_change_while_it_holds_nothing(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(attach(f, f->delegate, "/d/x", &rf), &rf);
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 1);
        assert_not_refused(attach(f, f->delegate, "/d", &rf), &rf);
        assert_string_equal(attached_to(f->delegate), "/d");
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 0);
        assert_int_equal(tree_info(f, "/d").nr_attached, 1);
        assert_int_equal(fixture_commits(f), 0);
        /* A session charge without a path goes there now. */
        assert_not_refused(charge(f, f->delegate, session_bytes(NULL, PAGE), &rf), &rf);
        assert_true(tree_usage(f, "/d") == PAGE);
        assert_true(tree_usage(f, "/d/x") == 0);
}

static void test_attach_of_a_session_holding_charges_is_refused(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", PAGE), &rf), &rf);
        assert_refused(attach(f, f->delegate, "/d/x/y", &rf), &rf, -EBUSY,
                       "the session holds charges; move it instead");
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_true(tree_usage(f, "/d/x") == PAGE);
        assert_int_equal(tree_info(f, "/d/x/y").nr_attached, 0);
}

static void test_attach_refuses_groups_the_caller_may_not_use(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(attach(f, f->delegate, "/a", &rf), &rf, -EPERM, "/a: permission denied");
        assert_refused(attach(f, f->other, "/d/x", &rf), &rf, -EPERM, "/d/x: permission denied");
        assert_refused(attach(f, f->delegate, "/nosuch", &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(attach(f, f->delegate, "/d/", &rf), &rf, -EINVAL, "/d/: empty path component");
        assert_null(attached_to(f->delegate));
        assert_null(attached_to(f->other));
}

static void test_attach_auto_without_a_mirror_says_so(void **state) {
        static const char *const autos[] = { "auto", "", NULL };
        Fixture *f = *state;
        Refusal rf;

        for (size_t i = 0; i < sizeof(autos) / sizeof(autos[0]); i++)
                assert_refused(attach(f, f->delegate, autos[i], &rf), &rf, -ENOENT,
                               "no group given, and no kernel cgroup mirror to place the session by");
        assert_null(attached_to(f->delegate));
        assert_int_equal(fixture_commits(f), 0);
}

static void test_attach_opens_a_bus_session(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(attach(f, f->bus, "/d/x/y", &rf), &rf);
        assert_string_equal(attached_to(f->bus), "/d/x/y");
        assert_int_equal(service_session_count(f->svc), 4);
}

/* The daemon's own peer acts on groups and never opens a session: one
 * would outlive every client. Kept charges it may make. */
static void test_daemon_peer_opens_no_session(void **state) {
        Fixture *f = *state;
        Peer *self = service_daemon_peer(f->svc);
        Refusal rf;

        assert_refused(charge(f, self, session_bytes("/a", PAGE), &rf), &rf, -EINVAL,
                       "the daemon's own requests have no session");
        assert_refused(attach(f, self, "/a", &rf), &rf, -EINVAL, "the daemon's own requests have no session");
        assert_null(self->session);
        assert_int_equal(service_session_count(f->svc), 3);
        assert_int_equal(tree_info(f, "/a").nr_attached, 0);
        assert_not_refused(charge(f, self, kept_bytes("/a", PAGE), &rf), &rf);
        assert_true(tree_info(f, "/a").current == PAGE);
}

/* ---- move ------------------------------------------------------------------ */

static void test_move_of_the_own_session_takes_its_charges(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 3 * PAGE), &rf), &rf);
        assert_not_refused(charge(f, f->delegate, with_stat_file(session_bytes(NULL, PAGE)), &rf), &rf);
        assert_int_equal(move(f, f->delegate, 0, "/d/x/y", &rf), 1);
        assert_not_refused(0, &rf);
        assert_string_equal(attached_to(f->delegate), "/d/x/y");
        assert_true(tree_usage(f, "/d/x/y") == 4 * PAGE);
        assert_true(tree_info(f, "/d/x/y").stat_local[MEM_STAT_FILE] == (int64_t) PAGE);
        assert_true(tree_usage(f, "/d/x") == 4 * PAGE); /* the parent counts its subtree */
        assert_true(tree_info(f, "/d/x").stat_local[MEM_STAT_ANON] == 0);
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 0);
        assert_int_equal(fixture_commits(f), 0);
        /* Its own pid is its own too. */
        assert_int_equal(move(f, f->delegate, PID_DELEGATE, "/d", &rf), 1);
        assert_string_equal(attached_to(f->delegate), "/d");
}

static void test_move_by_root_of_a_pid_moves_every_session_of_it(void **state) {
        Fixture *f = *state;
        Peer *a = fixture_peer_with_pid(f, UID_OTHER, PID_EXTRA, true, false);
        Peer *b = fixture_peer_with_pid(f, UID_OTHER, PID_EXTRA, true, false);
        Refusal rf;

        tree_create(f, "/e/f", UID_ROOT);
        assert_not_refused(charge(f, a, session_bytes("/e", PAGE), &rf), &rf);
        assert_not_refused(charge(f, b, session_bytes("/e/f", 2 * PAGE), &rf), &rf);
        /* Into a group the process's uid could not use itself. */
        assert_int_equal(move(f, f->root, PID_EXTRA, "/b", &rf), 2);
        assert_not_refused(0, &rf);
        assert_string_equal(attached_to(a), "/b");
        assert_string_equal(attached_to(b), "/b");
        assert_true(tree_usage(f, "/b") == 3 * PAGE);
        assert_true(tree_usage(f, "/e") == 0);
        /* The other sessions of the uid stay where they are. */
        assert_null(attached_to(f->other));
}

static void test_move_of_another_pid_is_root_only(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->other, session_bytes("/e", PAGE), &rf), &rf);
        assert_refused(move(f, f->delegate, PID_OTHER, "/d", &rf), &rf, -EPERM,
                       "only root moves other processes");
        assert_refused(move(f, f->other, PID_DELEGATE, "/e", &rf), &rf, -EPERM,
                       "only root moves other processes");
        assert_string_equal(attached_to(f->other), "/e");
        assert_true(tree_usage(f, "/e") == PAGE);
}

static void test_move_into_a_group_not_delegated_is_refused(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d", PAGE), &rf), &rf);
        assert_refused(move(f, f->delegate, 0, "/a", &rf), &rf, -EPERM, "/a: permission denied");
        assert_refused(move(f, f->delegate, 0, "/nosuch", &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(move(f, f->delegate, 0, NULL, &rf), &rf, -EINVAL, "a group path is required");
        assert_string_equal(attached_to(f->delegate), "/d");
        assert_true(tree_usage(f, "/a") == 0);
}

static void test_move_of_a_pid_without_a_session_is_refused(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(move(f, f->root, NO_SUCH_PID, "/a", &rf), &rf, -ESRCH, "pid %d has no session",
                       NO_SUCH_PID);
        /* The bus peer's pid has none until it is used. */
        assert_refused(move(f, f->root, PID_BUS, "/a", &rf), &rf, -ESRCH, "pid %d has no session", PID_BUS);
}

/* Its own session must be attached to be moved (attach it instead); a
 * move by pid takes every session of the process, the ones not attached
 * yet (they hold nothing) included, as cgroup.procs takes every thread. */
static void test_move_of_an_unattached_session_is_refused_but_a_pid_takes_it(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(move(f, f->delegate, 0, "/d", &rf), &rf, -ENOTCONN,
                       "/d: session not attached to a group");
        assert_refused(move(f, f->bus, 0, "/d", &rf), &rf, -ENOTCONN, "/d: session not attached to a group");
        assert_null(attached_to(f->delegate));
        assert_null(f->bus->session);
        refusal_init(&rf);
        assert_int_equal(move(f, f->root, PID_DELEGATE, "/d/x", &rf), 1);
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 1);
}

static void test_move_refused_by_a_max_names_it_and_moves_nothing(void **state) {
        Fixture *f = *state;
        Refusal rf;

        tree_set_max(f, "/d/x/y", PAGE);
        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 3 * PAGE), &rf), &rf);
        assert_refused(move(f, f->delegate, 0, "/d/x/y", &rf), &rf, -EDQUOT,
                       "/d/x/y: limit exceeded (max of /d/x/y)");
        assert_string_equal(rf.refused_by, "/d/x/y");
        assert_refused(move(f, f->root, PID_DELEGATE, "/d/x/y", &rf), &rf, -EDQUOT,
                       "/d/x/y: limit exceeded (max of /d/x/y)");
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_true(tree_usage(f, "/d/x/y") == 0);
        assert_true(tree_usage(f, "/d/x") == 3 * PAGE);
        assert_int_equal(tree_info(f, "/d/x/y").nr_attached, 0);
}

/* ---- client counters --------------------------------------------------------- */

static void test_get_client_reads_the_callers_own_counters(void **state) {
        Fixture *f = *state;
        uint64_t rss[_MEM_RSS_MAX] = {};
        pid_t pid = 0;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d", 3 * PAGE), &rf), &rf);
        assert_not_refused(charge(f, f->delegate, with_stat_file(session_bytes(NULL, PAGE)), &rf), &rf);
        assert_not_refused(charge(f, f->delegate, kept_bytes("/d", 8 * PAGE), &rf), &rf);
        assert_not_refused(get_client(f, f->delegate, 0, &pid, rss, &rf), &rf);
        assert_int_equal(pid, PID_DELEGATE);
        /* The session's charges feed its client; kept charges do not. */
        assert_true(rss[MEM_RSS_ANON] == 3 * PAGE);
        assert_true(rss[MEM_RSS_FILE] == PAGE);
        assert_true(rss[MEM_RSS_SWAP] == 0);
        assert_true(rss[MEM_RSS_SHMEM] == 0);
}

static void test_get_client_of_another_pid_follows_read_access(void **state) {
        Fixture *f = *state;
        uint64_t rss[_MEM_RSS_MAX] = {};
        pid_t pid = 0;
        Refusal rf;

        assert_not_refused(get_client(f, f->other, PID_DELEGATE, &pid, rss, &rf), &rf);
        assert_int_equal(pid, PID_DELEGATE);
        fixture_settings(f, READ_ACCESS_OWNER, 0);
        assert_refused(get_client(f, f->other, PID_DELEGATE, &pid, rss, &rf), &rf, -EPERM,
                       "pid %d: permission denied", PID_DELEGATE);
        assert_not_refused(get_client(f, f->other, PID_OTHER, &pid, rss, &rf), &rf);
        assert_not_refused(get_client(f, f->root, PID_DELEGATE, &pid, rss, &rf), &rf);
        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_refused(get_client(f, f->delegate, PID_OTHER, &pid, rss, &rf), &rf, -EPERM,
                       "pid %d: permission denied", PID_OTHER);
        assert_not_refused(get_client(f, f->delegate, 0, &pid, rss, &rf), &rf);
        assert_int_equal(pid, PID_DELEGATE);
}

static void test_get_client_of_a_pid_without_a_session_is_refused(void **state) {
        Fixture *f = *state;
        uint64_t rss[_MEM_RSS_MAX] = {};
        pid_t pid = 0;
        Refusal rf;

        assert_refused(get_client(f, f->root, NO_SUCH_PID, &pid, rss, &rf), &rf, -ESRCH,
                       "pid %d has no session", NO_SUCH_PID);
        assert_refused(get_client(f, f->bus, 0, &pid, rss, &rf), &rf, -ESRCH, "pid %d has no session",
                       PID_BUS);
        assert_int_equal(pid, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_hello_tells_the_settings_and_who_the_peer_is),
                SERVICE_TEST(test_hello_follows_a_reload),
                SERVICE_TEST(test_hello_refuses_protocol_version_0),
                SERVICE_TEST(test_settings_read_back_as_set),
                SERVICE_TEST(test_socket_peers_open_their_session_at_once),
                SERVICE_TEST(test_bus_peer_opens_its_session_on_first_use),
                SERVICE_TEST(test_peer_free_releases_what_its_session_holds_not_what_is_kept),
                SERVICE_TEST(test_session_cap_refuses_the_next_socket_session_of_a_uid),
                SERVICE_TEST(test_session_cap_refuses_a_bus_session_at_its_first_use),
                SERVICE_TEST(test_session_cap_counts_each_uid_apart_and_never_root),
                SERVICE_TEST(test_attach_places_the_session_and_may_change_while_it_holds_nothing),
                SERVICE_TEST(test_attach_of_a_session_holding_charges_is_refused),
                SERVICE_TEST(test_attach_refuses_groups_the_caller_may_not_use),
                SERVICE_TEST(test_attach_auto_without_a_mirror_says_so),
                SERVICE_TEST(test_attach_opens_a_bus_session),
                SERVICE_TEST(test_daemon_peer_opens_no_session),
                SERVICE_TEST(test_move_of_the_own_session_takes_its_charges),
                SERVICE_TEST(test_move_by_root_of_a_pid_moves_every_session_of_it),
                SERVICE_TEST(test_move_of_another_pid_is_root_only),
                SERVICE_TEST(test_move_into_a_group_not_delegated_is_refused),
                SERVICE_TEST(test_move_of_a_pid_without_a_session_is_refused),
                SERVICE_TEST(test_move_of_an_unattached_session_is_refused_but_a_pid_takes_it),
                SERVICE_TEST(test_move_refused_by_a_max_names_it_and_moves_nothing),
                SERVICE_TEST(test_get_client_reads_the_callers_own_counters),
                SERVICE_TEST(test_get_client_of_another_pid_follows_read_access),
                SERVICE_TEST(test_get_client_of_a_pid_without_a_session_is_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
