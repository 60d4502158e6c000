/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service_list_sessions() and service_get_info() without a daemon: who
 * sees which sessions (root all; another uid its own and those attached
 * in a subtree delegated to it), what each says (uid, transport, group,
 * bytes), the subtree filter, the request count, and that a memory
 * event carries the pid and uid of the request that raised it.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/group.h"
#include "service-test.h"

#define LISTED_MAX 16

typedef struct Listed {
        ServiceSession v[LISTED_MAX];
        char groups[LISTED_MAX][64];
        char transports[LISTED_MAX][16];
        size_t n;
} Listed;

static int collect(void *userdata, const ServiceSession *s) {
        Listed *l = userdata;

        if (l->n == LISTED_MAX)
                return -ENOSPC;
        l->v[l->n] = *s;
        snprintf(l->groups[l->n], sizeof(l->groups[0]), "%s", s->group);
        snprintf(l->transports[l->n], sizeof(l->transports[0]), "%s", s->transport);
        l->n++;
        return 0;
}

static Listed list(Fixture *f, Peer *p, const char *path) {
        Listed l = {};
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_list_sessions(f->svc, p, path, collect, &l, &rf), &rf);
        return l;
}

/* The index of the session of @pid in @l, or -1. */
static int find(const Listed *l, pid_t pid) {
        for (size_t i = 0; i < l->n; i++)
                if (l->v[i].pid == pid)
                        return (int) i;
        return -1;
}

static void charge_session(Fixture *f, Peer *p, const char *path, uint64_t bytes) {
        ServiceChargeResult res;
        ServiceCharge c = session_bytes(path, bytes);
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, p, &c, &res, &rf), &rf);
}

static void test_root_sees_every_session_with_what_it_holds(void **state) {
        Fixture *f = *state;
        Listed l;
        int i;

        charge_session(f, f->root, "/a", 3 * PAGE);
        charge_session(f, f->delegate, "/d/x", 2 * PAGE);
        charge_session(f, f->bus, "/d", PAGE); /* opens the bus peer's session */
        l = list(f, f->root, NULL);
        /* root, delegate, other (socket-made, session open), bus. */
        assert_int_equal(l.n, 4);
        i = find(&l, PID_ROOT);
        assert_true(i >= 0);
        assert_int_equal(l.v[i].uid, UID_ROOT);
        assert_string_equal(l.groups[i], "/a");
        assert_int_equal(l.v[i].bytes, 3 * PAGE);
        assert_string_equal(l.transports[i], "socket");
        i = find(&l, PID_BUS);
        assert_true(i >= 0);
        assert_string_equal(l.transports[i], "bus");
        assert_int_equal(l.v[i].bytes, PAGE);
        i = find(&l, PID_OTHER);
        assert_true(i >= 0);
        assert_string_equal(l.groups[i], ""); /* not attached */
        assert_int_equal(l.v[i].bytes, 0);
}

static void test_a_delegate_sees_its_own_and_those_in_its_subtree(void **state) {
        Fixture *f = *state;
        Listed l;

        charge_session(f, f->root, "/d/x", PAGE); /* root's, in the delegate's subtree */
        charge_session(f, f->other, "/e", PAGE);  /* another uid's, elsewhere */
        l = list(f, f->delegate, NULL);
        /* Its own (the bus peer has opened none), and root's in /d/x. */
        assert_int_equal(l.n, 2);
        assert_true(find(&l, PID_DELEGATE) >= 0);
        assert_true(find(&l, PID_ROOT) >= 0);
        assert_true(find(&l, PID_OTHER) < 0);
        l = list(f, f->other, NULL);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.v[0].pid, PID_OTHER);
}

static void test_a_path_narrows_the_list_to_a_subtree(void **state) {
        Fixture *f = *state;
        Listed l;
        Refusal rf;

        charge_session(f, f->root, "/d/x/y", PAGE);
        charge_session(f, f->delegate, "/d", PAGE);
        l = list(f, f->root, "/d/x");
        assert_int_equal(l.n, 1);
        assert_int_equal(l.v[0].pid, PID_ROOT);
        l = list(f, f->root, "/d");
        assert_int_equal(l.n, 2);
        refusal_init(&rf);
        assert_refused(service_list_sessions(f->svc, f->root, "/nope", collect, &l, &rf), &rf, -ENOENT,
                       "/nope: no such group");
}

static void test_info_counts_requests_sessions_and_groups(void **state) {
        Fixture *f = *state;
        ServiceInfo info;
        Refusal rf;

        service_request_served(f->svc);
        service_request_served(f->svc);
        refusal_init(&rf);
        assert_not_refused(service_get_info(f->svc, f->delegate, &info, &rf), &rf);
        assert_int_equal(info.requests, 2);
        assert_int_equal(info.groups, TEST_TREE_GROUPS);
        assert_int_equal(info.sessions, service_session_count(f->svc));
        assert_string_equal(info.state, "saved"); /* nothing waits to be saved */
        assert_string_equal(info.state_cause, "");
        assert_true(strncmp(info.version, "memacctd ", 9) == 0);
        /* Under read = root, the daemon's state is root's to read. */
        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_refused(service_get_info(f->svc, f->delegate, &info, &rf), &rf, -EPERM,
                       "only root reads the daemon's state ([access] read = root)");
        refusal_init(&rf);
        assert_not_refused(service_get_info(f->svc, f->root, &info, &rf), &rf);
}

typedef struct ByLog {
        pid_t pid[8];
        uid_t uid[8];
        MemEvent event[8];
        size_t n;
} ByLog;

static void by_sink(const EventItem *ev, void *userdata) {
        ByLog *l = userdata;

        if (ev->kind == EVENT_MEMORY && l->n < 8) {
                l->pid[l->n] = ev->pid;
                l->uid[l->n] = ev->uid;
                l->event[l->n++] = ev->event;
        }
}

static void test_memory_events_carry_the_requester(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        ServiceCharge c;
        ByLog log = {};
        Refusal rf;

        events_set_sink(service_events(f->svc), by_sink, &log);
        tree_set_max(f, "/d/x", PAGE);
        c = kept_bytes("/d/x", 2 * PAGE);
        refusal_init(&rf);
        assert_int_equal(service_charge(f->svc, f->delegate, &c, &res, &rf), -EDQUOT);
        /* max, then oom, both the delegate's. */
        assert_int_equal(log.n, 2);
        assert_int_equal(log.event[0], MEM_EVENT_MAX);
        assert_int_equal(log.pid[0], PID_DELEGATE);
        assert_int_equal(log.uid[0], UID_DELEGATE);
        assert_int_equal(log.pid[1], PID_DELEGATE);
        /* The next one root's: the requester does not outlive its request. */
        refusal_init(&rf);
        assert_int_equal(service_charge(f->svc, f->root, &c, &res, &rf), -EDQUOT);
        assert_int_equal(log.n, 4);
        assert_int_equal(log.pid[2], PID_ROOT);
        assert_int_equal(log.uid[2], UID_ROOT);
        /* Raised outside any request: nobody's. */
        {
                MemGroup *g = NULL;

                assert_int_equal(group_get(f->core, "/d/x", &g), 0);
                group_event_raise(g, MEM_EVENT_HIGH);
                group_unref(g);
        }
        assert_int_equal(log.n, 5);
        assert_int_equal(log.pid[4], 0);
        assert_int_equal(log.uid[4], 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_root_sees_every_session_with_what_it_holds),
                SERVICE_TEST(test_a_delegate_sees_its_own_and_those_in_its_subtree),
                SERVICE_TEST(test_a_path_narrows_the_list_to_a_subtree),
                SERVICE_TEST(test_info_counts_requests_sessions_and_groups),
                SERVICE_TEST(test_memory_events_carry_the_requester),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
