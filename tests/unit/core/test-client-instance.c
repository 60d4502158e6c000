/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Clients are process instances (session.c, move.c): the sessions two
 * processes opened with the same pid, one after the other, are two
 * clients, and a move names one of them; a move for one uid leaves the
 * sessions of another uid of the same process; sessions with no instance
 * (in-process callers) go with any instance of their pid.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core-test.h"
#include "session.h"

enum {
        PID = 300,
        OLD = 7, /* the instance that had PID first, now gone */
        NEW = 9, /* the one that has it now */
        UID_VICTIM = 1001,
        UID_ATTACKER = 1002,
};

static MemSession *charged(MemCore *core, uint64_t instance, uid_t uid, MemGroup *g, uint64_t bytes) {
        MemSession *s = NULL;

        assert_int_equal(session_new_process(core, PID, instance, uid, uid, &s), 0);
        assert_int_equal(session_attach(s, g), 0);
        assert_int_equal(session_charge(s, bytes, MEM_STAT_ANON, 0, NULL), 0);
        return s;
}

static int move(MemCore *core, uint64_t instance, uid_t uid, MemGroup *dst) {
        MemChargeResult res = {};
        int r = client_move_process(core, PID, instance, uid, dst, &res);

        charge_result_done(&res);
        return r;
}

static void test_move_of_a_recycled_pid_leaves_the_old_process_sessions(void **state) {
        MemCore *core = *state;
        MemGroup *v = make_group(core, "/v"), *a = make_group(core, "/a"), *b = make_group(core, "/b");
        MemSession *victim = charged(core, OLD, UID_VICTIM, v, 16 * PAGE);
        MemSession *attacker = charged(core, NEW, UID_ATTACKER, a, PAGE);

        /* The attacker's move of "its own" pid, as the service makes it. */
        assert_int_equal(move(core, NEW, UID_ATTACKER, b), 1);
        assert_int_equal(usage_of(v), 16 * PAGE);
        assert_int_equal(usage_of(a), 0);
        assert_int_equal(usage_of(b), PAGE);
        /* Root's, of whatever has the pid now: the same one session. */
        assert_int_equal(move(core, NEW, MEM_UID_ANY, a), 1);
        assert_int_equal(usage_of(v), 16 * PAGE);
        assert_int_equal(usage_of(a), PAGE);
        /* An instance with no session: nothing to move, nothing moved. */
        assert_int_equal(move(core, NEW + 1, MEM_UID_ANY, b), -ESRCH);
        assert_int_equal(usage_of(v), 16 * PAGE);
        assert_int_equal(usage_of(b), 0);

        assert_null(session_free(attacker));
        assert_int_equal(move(core, NEW, MEM_UID_ANY, b), -ESRCH);
        assert_int_equal(usage_of(v), 16 * PAGE);
        assert_null(session_free(victim));
        assert_int_equal(usage_of(v), 0);
        group_unref(v);
        group_unref(a);
        group_unref(b);
}

static void test_move_for_one_uid_leaves_the_process_sessions_of_another(void **state) {
        MemCore *core = *state;
        MemGroup *v = make_group(core, "/v"), *b = make_group(core, "/b");
        MemSession *mine = charged(core, NEW, UID_ATTACKER, v, 2 * PAGE);
        MemSession *theirs = charged(core, NEW, UID_VICTIM, v, 3 * PAGE);

        assert_int_equal(move(core, NEW, UID_ATTACKER, b), 1);
        assert_int_equal(usage_of(b), 2 * PAGE);
        assert_int_equal(usage_of(v), 3 * PAGE);
        assert_int_equal(move(core, NEW, MEM_UID_ANY, b), 2);
        assert_int_equal(usage_of(b), 5 * PAGE);
        assert_int_equal(usage_of(v), 0);
        assert_null(session_free(mine));
        assert_null(session_free(theirs));
        group_unref(v);
        group_unref(b);
}

static void test_sessions_without_instance_go_with_any_instance_of_their_pid(void **state) {
        MemCore *core = *state;
        MemGroup *v = make_group(core, "/v"), *b = make_group(core, "/b");
        MemSession *plain = charged(core, 0, UID_VICTIM, v, PAGE);
        MemSession *stamped = charged(core, NEW, UID_VICTIM, v, 4 * PAGE);
        MemSession *old = charged(core, OLD, UID_VICTIM, v, 8 * PAGE);
        int64_t rss[_MEM_RSS_MAX];

        assert_int_equal(move(core, NEW, MEM_UID_ANY, b), 2);
        assert_int_equal(usage_of(b), 5 * PAGE);
        assert_int_equal(usage_of(v), 8 * PAGE);
        /* Instance 0 names only the instance-less ones. */
        assert_int_equal(move(core, 0, MEM_UID_ANY, v), 1);
        assert_int_equal(usage_of(b), 4 * PAGE);
        /* A read by instance is that process's counters alone. */
        assert_int_equal(client_read_rss_process(core, PID, OLD, true, rss), 0);
        assert_int_equal(rss[MEM_RSS_ANON], 8 * PAGE);
        assert_int_equal(client_read_rss_process(core, PID, NEW, true, rss), 0);
        assert_int_equal(rss[MEM_RSS_ANON], 4 * PAGE);
        assert_null(session_free(stamped));
        /* No client of that instance: the pid's instance-less one. */
        assert_int_equal(client_read_rss_process(core, PID, NEW, true, rss), 0);
        assert_int_equal(rss[MEM_RSS_ANON], PAGE);
        assert_null(session_free(plain));
        assert_int_equal(client_read_rss_process(core, PID, NEW, true, rss), -ESRCH);
        assert_null(session_free(old));
        group_unref(v);
        group_unref(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_move_of_a_recycled_pid_leaves_the_old_process_sessions),
                CORE_TEST(test_move_for_one_uid_leaves_the_process_sessions_of_another),
                CORE_TEST(test_sessions_without_instance_go_with_any_instance_of_their_pid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
