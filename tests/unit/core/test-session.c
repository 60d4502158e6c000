/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions and clients (session.h)
 *
 * A session's charges belong to it: they follow it on a move and are
 * released when it ends. Kept charges belong to the group and do neither.
 * A client is every session of one pid; its RSS counters are fed by the
 * sessions' split deltas (fast path 4), so the exact read always equals
 * what the sessions hold, per member, and the approximate read lags it by
 * at most rss_threshold per session per member.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "charge.h"
#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

#define PAGE 4096
#define MAX_REFS 32

typedef struct Fixture {
        MemCore *core;
        MemGroup *refs[MAX_REFS];
        unsigned nrefs;
} Fixture;

static int setup(void **state) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        if (core_new(&cfg, &f->core) < 0) {
                free(f);
                return -1;
        }
        if (core_thread_register(f->core) < 0) {
                core_free(f->core);
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        for (unsigned i = 0; i < f->nrefs; i++)
                group_unref(f->refs[i]);
        core_thread_unregister(f->core);
        core_free(f->core);
        free(f);
        return 0;
}

/* Create @path (its parent must exist) and return a reference the
 * fixture drops at teardown. */
static MemGroup *grp(Fixture *f, const char *path) {
        MemGroup *g = NULL;
        int r;

        if (strcmp(path, "/") != 0) {
                r = group_create(f->core, path, 0);
                if (r != -EEXIST)
                        assert_int_equal(r, 0);
        }
        assert_int_equal(group_get(f->core, path, &g), 0);
        assert_non_null(g);
        assert_true(f->nrefs < MAX_REFS);
        f->refs[f->nrefs++] = g;
        return g;
}

static MemGroupInfo info_of(Fixture *f, MemGroup *g, bool exact) {
        MemGroupInfo info;

        group_read(f->core, g, NULL, exact, &info);
        return info;
}

static uint64_t current(Fixture *f, MemGroup *g) {
        return info_of(f, g, false).current;
}

static MemSession *new_session(Fixture *f, pid_t pid) {
        MemSession *s = NULL;

        assert_int_equal(session_new(f->core, pid, 1000, 1000, &s), 0);
        assert_non_null(s);
        return s;
}

static MemGroup *attached(MemSession *s) {
        return atomic_load(&s->group);
}

/*
 * The client invariant: exact RSS equals the sum of what the sessions
 * hold per member; approximate is never negative and within
 * @threshold × sessions of exact.
 */
static void check_rss(Fixture *f, pid_t pid, MemSession *const *sessions, size_t n,
                      int64_t threshold) {
        int64_t expect[_MEM_RSS_MAX] = {}, exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];

        for (size_t i = 0; i < n; i++)
                for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++) {
                        MemRss m = mem_rss_from_stat(it);

                        if (m >= 0)
                                expect[m] += (int64_t) session_held(sessions[i], it);
                }
        assert_int_equal(client_read_rss(f->core, pid, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, pid, false, approx), 0);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++) {
                int64_t d = exact[m] - approx[m];

                assert_int_equal(exact[m], expect[m]);
                assert_true(approx[m] >= 0);
                assert_true(d <= threshold * (int64_t) n && -d <= threshold * (int64_t) n);
        }
}

static void test_session_charges_only_while_attached_and_releases_on_free(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a"), *root = grp(f, "/");
        MemSession *s = new_session(f, 100);
        MemGroupInfo info;

        assert_int_equal(s->pid, 100);
        assert_int_equal(s->uid, 1000);
        assert_int_equal(s->gid, 1000);
        assert_null(attached(s));

        /* Not attached: nothing to charge. */
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), -ENOTCONN);
        assert_int_equal(session_uncharge(s, PAGE, MEM_STAT_ANON), -ENOTCONN);
        assert_int_equal(current(f, root), 0);

        assert_int_equal(session_attach(s, a), 0);
        assert_ptr_equal(attached(s), a);
        assert_int_equal(info_of(f, a, false).nr_attached, 1);

        assert_int_equal(session_charge(s, 10000, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_held(s, MEM_STAT_ANON), 10000);
        assert_int_equal(session_held(s, MEM_STAT_FILE), 0);
        assert_int_equal(current(f, a), 10000);
        assert_int_equal(current(f, root), 10000);

        /* Bad items are refused and change nothing. */
        assert_int_equal(session_charge(s, PAGE, _MEM_STAT_MAX, 0, NULL), -EINVAL);
        assert_int_equal(session_uncharge(s, PAGE, _MEM_STAT_MAX), -EINVAL);
        assert_int_equal(current(f, a), 10000);

        assert_int_equal(session_uncharge(s, 4000, MEM_STAT_ANON), 0);
        assert_int_equal(session_held(s, MEM_STAT_ANON), 6000);

        info = info_of(f, a, true);
        assert_int_equal(info.current, 6000);
        assert_int_equal(info.stat[MEM_STAT_ANON], 6000);
        assert_int_equal(info.stat_local[MEM_STAT_ANON], 6000);
        assert_int_equal(info.kept[MEM_STAT_ANON], 0);
        info = info_of(f, root, true);
        assert_int_equal(info.current, 6000);
        assert_int_equal(info.stat[MEM_STAT_ANON], 6000);
        assert_int_equal(info.stat_local[MEM_STAT_ANON], 0);

        assert_null(session_free(s));
        info = info_of(f, a, true);
        assert_int_equal(info.current, 0);
        assert_int_equal(info.nr_attached, 0);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        assert_int_equal(current(f, root), 0);
        assert_null(session_free(NULL));
}

static void test_session_free_releases_held_not_kept(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a"), *root = grp(f, "/");
        MemSession *s = new_session(f, 101);
        MemGroupInfo info;

        assert_int_equal(group_charge_kept(f->core, a, 2 * PAGE, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(session_charge(s, 3 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(current(f, a), 6 * PAGE);
        assert_int_equal(current(f, root), 6 * PAGE);

        assert_null(session_free(s));

        info = info_of(f, a, true);
        assert_int_equal(info.current, 2 * PAGE);
        assert_int_equal(info.kept[MEM_STAT_FILE], 2 * PAGE);
        assert_int_equal(info.kept[MEM_STAT_ANON], 0);
        assert_int_equal(info.stat[MEM_STAT_FILE], 2 * PAGE);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        assert_int_equal(current(f, root), 2 * PAGE);

        /* The kept charge is the group's: it outlives the session and goes
         * only with an explicit uncharge or with the group itself. */
        assert_int_equal(group_uncharge_kept(f->core, a, PAGE, MEM_STAT_FILE), 0);
        assert_int_equal(current(f, root), PAGE);
        assert_int_equal(group_remove(f->core, "/a"), 0);
        assert_int_equal(current(f, root), 0);
        info = info_of(f, root, true);
        assert_int_equal(info.stat[MEM_STAT_FILE], 0);
        assert_int_equal(info.stat_local[MEM_STAT_FILE], 0);
}

static void test_session_uncharge_beyond_held_is_erange(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a");
        MemSession *s = new_session(f, 102);

        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(session_charge(s, 2 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge_kept(f->core, a, PAGE, MEM_STAT_FILE, 0, NULL), 0);

        assert_int_equal(session_uncharge(s, 2 * PAGE + 1, MEM_STAT_ANON), -ERANGE);
        assert_int_equal(session_held(s, MEM_STAT_ANON), 2 * PAGE);
        assert_int_equal(current(f, a), 3 * PAGE);

        /* The group holds FILE bytes, but they are kept, not the session's. */
        assert_int_equal(session_uncharge(s, PAGE, MEM_STAT_FILE), -ERANGE);
        assert_int_equal(session_held(s, MEM_STAT_FILE), 0);
        assert_int_equal(current(f, a), 3 * PAGE);
        assert_int_equal(info_of(f, a, false).kept[MEM_STAT_FILE], PAGE);

        /* Exactly what is held is fine. */
        assert_int_equal(session_uncharge(s, 2 * PAGE, MEM_STAT_ANON), 0);
        assert_int_equal(session_held(s, MEM_STAT_ANON), 0);
        assert_int_equal(current(f, a), PAGE);
        assert_int_equal(session_uncharge(s, 1, MEM_STAT_ANON), -ERANGE);
        assert_int_equal(current(f, a), PAGE);

        assert_null(session_free(s));
        assert_int_equal(current(f, a), PAGE);
        assert_int_equal(group_uncharge_kept(f->core, a, PAGE, MEM_STAT_FILE), 0);
}

static void test_session_attach_refused_while_holding_or_to_removed_group(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a"), *b = grp(f, "/b"), *c = grp(f, "/c");
        MemSession *s = new_session(f, 103);

        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_SHMEM, 0, NULL), 0);

        /* Holding charges: changing group is a move, not an attach. */
        assert_int_equal(session_attach(s, b), -EBUSY);
        assert_ptr_equal(attached(s), a);
        assert_int_equal(current(f, a), PAGE);
        assert_int_equal(current(f, b), 0);
        assert_int_equal(info_of(f, b, false).nr_attached, 0);

        assert_int_equal(session_uncharge(s, PAGE, MEM_STAT_SHMEM), 0);
        assert_int_equal(session_attach(s, b), 0);
        assert_ptr_equal(attached(s), b);
        assert_int_equal(info_of(f, a, false).nr_attached, 0);
        assert_int_equal(info_of(f, b, false).nr_attached, 1);

        /* A group being removed takes no new session. */
        assert_int_equal(group_remove(f->core, "/c"), 0);
        assert_int_equal(session_attach(s, c), -ENOENT);
        assert_ptr_equal(attached(s), b);

        assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(current(f, b), PAGE);
        assert_int_equal(current(f, a), 0);
        assert_null(session_free(s));
        assert_int_equal(current(f, b), 0);
}

static void test_group_remove_refused_while_attached(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a"), *b = grp(f, "/b"), *c = grp(f, "/c");
        MemSession *s = new_session(f, 104), *t = new_session(f, 105);

        /* Attached with nothing charged is enough to keep the group. */
        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(group_remove(f->core, "/a"), -EBUSY);
        assert_null(session_free(s));
        assert_int_equal(group_remove(f->core, "/a"), 0);

        /* Re-attaching elsewhere lets the old group go. */
        assert_int_equal(session_attach(t, b), 0);
        assert_int_equal(group_remove(f->core, "/b"), -EBUSY);
        assert_int_equal(session_attach(t, c), 0);
        assert_int_equal(group_remove(f->core, "/b"), 0);
        assert_int_equal(group_remove(f->core, "/c"), -EBUSY);
        assert_null(session_free(t));
        assert_int_equal(group_remove(f->core, "/c"), 0);
}

static void test_session_move_takes_held_not_kept_across_subtrees(void **state) {
        Fixture *f = *state;
        MemGroup *root = grp(f, "/"), *a = grp(f, "/a"), *ax = grp(f, "/a/x");
        MemGroup *b = grp(f, "/b"), *by = grp(f, "/b/y");
        MemSession *s = new_session(f, 106), *list[1];
        MemChargeResult res = {};
        MemGroupInfo info, root_before;

        list[0] = s;
        assert_int_equal(session_attach(s, ax), 0);
        assert_int_equal(session_charge(s, 20000, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(session_charge(s, 3 * PAGE, MEM_STAT_KERNEL, 0, NULL), 0);
        assert_int_equal(group_charge_kept(f->core, ax, PAGE, MEM_STAT_FILE, 0, NULL), 0);
        root_before = info_of(f, root, true);
        assert_int_equal(root_before.current, 20000 + 5 * PAGE);
        check_rss(f, 106, list, 1, 64 * PAGE);

        assert_int_equal(session_move(s, by, &res), 0);
        assert_null(res.refused);
        charge_result_done(&res);
        assert_ptr_equal(attached(s), by);

        /* Held bytes moved; the kept page stayed. */
        assert_int_equal(session_held(s, MEM_STAT_ANON), 20000);
        assert_int_equal(session_held(s, MEM_STAT_FILE), PAGE);
        assert_int_equal(session_held(s, MEM_STAT_KERNEL), 3 * PAGE);
        info = info_of(f, ax, true);
        assert_int_equal(info.current, PAGE);
        assert_int_equal(info.nr_attached, 0);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        assert_int_equal(info.stat[MEM_STAT_FILE], PAGE);
        assert_int_equal(info.stat[MEM_STAT_KERNEL], 0);
        assert_int_equal(info.kept[MEM_STAT_FILE], PAGE);
        info = info_of(f, a, true);
        assert_int_equal(info.current, PAGE);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        assert_int_equal(info.stat[MEM_STAT_FILE], PAGE);

        info = info_of(f, by, true);
        assert_int_equal(info.current, 20000 + 4 * PAGE);
        assert_int_equal(info.nr_attached, 1);
        assert_int_equal(info.stat[MEM_STAT_ANON], 20000);
        assert_int_equal(info.stat_local[MEM_STAT_ANON], 20000);
        assert_int_equal(info.stat[MEM_STAT_FILE], PAGE);
        assert_int_equal(info.stat[MEM_STAT_KERNEL], 3 * PAGE);
        assert_int_equal(info.kept[MEM_STAT_FILE], 0);
        info = info_of(f, b, true);
        assert_int_equal(info.current, 20000 + 4 * PAGE);
        assert_int_equal(info.stat[MEM_STAT_ANON], 20000);
        assert_int_equal(info.stat_local[MEM_STAT_ANON], 0);

        /* The common ancestor saw nothing. */
        info = info_of(f, root, true);
        assert_int_equal(info.current, root_before.current);
        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                assert_int_equal(info.stat[it], root_before.stat[it]);

        /* RSS belongs to the client, not the group. */
        check_rss(f, 106, list, 1, 64 * PAGE);

        /* Further charges and uncharges go to the new group. */
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_uncharge(s, 20000, MEM_STAT_ANON), 0);
        assert_int_equal(current(f, by), 5 * PAGE);
        assert_int_equal(current(f, ax), PAGE);

        /* The old group can go once the kept page is released. */
        assert_int_equal(group_uncharge_kept(f->core, ax, PAGE, MEM_STAT_FILE), 0);
        assert_int_equal(group_remove(f->core, "/a/x"), 0);
        assert_int_equal(group_remove(f->core, "/b/y"), -EBUSY);
        assert_null(session_free(s));
        assert_int_equal(current(f, root), 0);
        assert_int_equal(group_remove(f->core, "/b/y"), 0);
}

static void assert_move_refused(Fixture *f, MemSession *s, MemGroup *dst, MemGroup *refuser,
                                MemGroup *const *watch, size_t n) {
        uint64_t before[8], held[_MEM_STAT_MAX];
        MemGroup *src = attached(s);
        MemChargeResult res = {};

        assert_true(n <= ELEMENTSOF(before));
        for (size_t i = 0; i < n; i++)
                before[i] = current(f, watch[i]);
        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                held[it] = session_held(s, it);

        assert_int_equal(session_move(s, dst, &res), -EDQUOT);
        assert_ptr_equal(res.refused, refuser);
        charge_result_done(&res);
        assert_null(res.refused);

        assert_ptr_equal(attached(s), src);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(current(f, watch[i]), before[i]);
        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                assert_int_equal(session_held(s, it), held[it]);
        assert_int_equal(info_of(f, src, false).nr_attached, 1);
        assert_int_equal(info_of(f, dst, false).nr_attached, 0);
}

static void test_session_move_refused_by_max(void **state) {
        Fixture *f = *state;
        MemGroup *root = grp(f, "/"), *a = grp(f, "/a"), *ax = grp(f, "/a/x");
        MemGroup *az = grp(f, "/a/z"), *b = grp(f, "/b"), *by = grp(f, "/b/y");
        MemGroup *watch[] = { root, a, ax, az, b, by };
        MemSession *s = new_session(f, 107);
        MemChargeResult res = {};
        MemGroupInfo info;

        assert_int_equal(session_attach(s, ax), 0);
        assert_int_equal(session_charge(s, 40000, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge_kept(f->core, by, PAGE, MEM_STAT_FILE, 0, NULL), 0);

        /* The destination itself cannot take it. */
        assert_int_equal(group_set_max(by, 40000, false), 0);
        assert_move_refused(f, s, by, by, watch, ELEMENTSOF(watch));
        info = info_of(f, by, true);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        info = info_of(f, ax, true);
        assert_int_equal(info.stat[MEM_STAT_ANON], 40000);

        /* An ancestor of the destination cannot. */
        assert_int_equal(group_set_max(by, UINT64_MAX, false), 0);
        assert_int_equal(group_set_max(b, 40000 + PAGE - 1, false), 0);
        assert_move_refused(f, s, by, b, watch, ELEMENTSOF(watch));

        /* Exactly enough room is enough. */
        assert_int_equal(group_set_max(b, 40000 + PAGE, false), 0);
        assert_int_equal(session_move(s, by, &res), 0);
        charge_result_done(&res);
        assert_int_equal(current(f, b), 40000 + PAGE);
        assert_int_equal(current(f, a), 0);
        assert_int_equal(current(f, root), 40000 + PAGE);

        /* The common ancestor is not charged again: /b at its max does not
         * stop a move inside /b. */
        assert_int_equal(group_create(f->core, "/b/w", 0), 0);
        {
                MemGroup *bw = grp(f, "/b/w");

                assert_int_equal(session_move(s, bw, &res), 0);
                charge_result_done(&res);
                assert_ptr_equal(attached(s), bw);
                assert_int_equal(current(f, bw), 40000);
                assert_int_equal(current(f, by), PAGE);
                assert_int_equal(current(f, b), 40000 + PAGE);
        }

        /* Not attached, or a destination being removed. */
        {
                MemSession *t = new_session(f, 107);

                assert_int_equal(session_move(t, az, &res), -ENOTCONN);
                charge_result_done(&res);
                assert_null(session_free(t));
        }
        assert_int_equal(group_remove(f->core, "/a/z"), 0);
        assert_int_equal(session_move(s, az, &res), -ENOENT);
        charge_result_done(&res);
        assert_int_equal(current(f, b), 40000 + PAGE);

        assert_null(session_free(s));
        assert_int_equal(group_uncharge_kept(f->core, by, PAGE, MEM_STAT_FILE), 0);
        assert_int_equal(current(f, root), 0);
}

static void test_client_move_moves_every_session_of_the_pid_or_none(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a"), *b = grp(f, "/b"), *c = grp(f, "/c"), *d = grp(f, "/d");
        MemSession *s[3], *other = new_session(f, 301);
        MemChargeResult res = {};
        int r;

        for (unsigned i = 0; i < 3; i++) {
                s[i] = new_session(f, 300);
                assert_int_equal(session_attach(s[i], i == 0 ? a : b), 0);
                assert_int_equal(session_charge(s[i], (i + 1) * PAGE, MEM_STAT_ANON, 0, NULL),
                                 0);
        }
        assert_int_equal(session_attach(other, a), 0);
        assert_int_equal(session_charge(other, 10 * PAGE, MEM_STAT_FILE, 0, NULL), 0);

        assert_int_equal(client_move(f->core, 300, c, &res), 3);
        charge_result_done(&res);
        for (unsigned i = 0; i < 3; i++)
                assert_ptr_equal(attached(s[i]), c);
        assert_ptr_equal(attached(other), a);
        assert_int_equal(current(f, c), 6 * PAGE);
        assert_int_equal(current(f, a), 10 * PAGE);
        assert_int_equal(current(f, b), 0);
        assert_int_equal(info_of(f, c, false).nr_attached, 3);

        assert_int_equal(client_move(f->core, 999, c, &res), -ESRCH);
        charge_result_done(&res);

        /* /d takes at most two of the three (5 pages of 6): the move is
         * refused, by /d, and none of them moves. */
        assert_int_equal(group_set_max(d, 5 * PAGE, false), 0);
        r = client_move(f->core, 300, d, &res);
        assert_int_equal(r, -EDQUOT);
        assert_ptr_equal(res.refused, d);
        charge_result_done(&res);
        for (unsigned i = 0; i < 3; i++)
                assert_ptr_equal(attached(s[i]), c);
        assert_int_equal(current(f, d), 0);
        assert_int_equal(current(f, c), 6 * PAGE);
        assert_int_equal(info_of(f, d, false).nr_attached, 0);
        assert_int_equal(info_of(f, c, false).nr_attached, 3);
        assert_int_equal(info_of(f, d, false).events_local[MEM_EVENT_MAX], 1);
        /* With room for all three it moves them all. */
        assert_int_equal(group_set_max(d, 6 * PAGE, false), 0);
        assert_int_equal(client_move(f->core, 300, d, &res), 3);
        charge_result_done(&res);
        for (unsigned i = 0; i < 3; i++)
                assert_ptr_equal(attached(s[i]), d);
        assert_int_equal(current(f, d), 6 * PAGE);
        assert_int_equal(current(f, c), 0);
        assert_int_equal(info_of(f, d, false).nr_attached, 3);

        for (unsigned i = 0; i < 3; i++)
                assert_null(session_free(s[i]));
        assert_int_equal(client_move(f->core, 300, c, &res), -ESRCH);
        charge_result_done(&res);
        assert_int_equal(client_move(f->core, 301, c, &res), 1);
        charge_result_done(&res);
        assert_int_equal(current(f, c), 10 * PAGE);
        assert_null(session_free(other));
        assert_int_equal(current(f, c), 0);
        assert_int_equal(current(f, d), 0);
}

static void test_rss_from_stat_maps_only_rss_items(void **state) {
        (void) state;

        assert_int_equal(mem_rss_from_stat(MEM_STAT_ANON), MEM_RSS_ANON);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_FILE), MEM_RSS_FILE);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_SHMEM), MEM_RSS_SHMEM);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_SWAP), MEM_RSS_SWAP);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_KERNEL), -EINVAL);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_SOCK), -EINVAL);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_DEVICE), -EINVAL);
        assert_int_equal(mem_rss_from_stat(MEM_STAT_OTHER), -EINVAL);
        assert_int_equal(mem_rss_from_stat(_MEM_STAT_MAX), -EINVAL);
        assert_int_equal(mem_rss_from_stat(_MEM_STAT_INVALID), -EINVAL);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++)
                assert_non_null(mem_rss_to_string(m));
}

static void test_rss_exact_equals_held_and_approximate_lags_by_threshold(void **state) {
        Fixture *f = *state;
        const int64_t T = 64 * PAGE; /* the default threshold */
        MemGroup *a = grp(f, "/a");
        MemSession *s = new_session(f, 400), *list[1];
        int64_t exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];

        list[0] = s;
        assert_int_equal(client_read_rss(f->core, 400, true, exact), 0);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++)
                assert_int_equal(exact[m], 0);

        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(session_charge(s, 10 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(session_charge(s, 2 * PAGE, MEM_STAT_SWAP, 0, NULL), 0);
        assert_int_equal(session_charge(s, 3 * PAGE, MEM_STAT_SHMEM, 0, NULL), 0);
        assert_int_equal(session_charge(s, 100 * PAGE, MEM_STAT_KERNEL, 0, NULL), 0);
        assert_int_equal(session_charge(s, 100 * PAGE, MEM_STAT_SOCK, 0, NULL), 0);
        check_rss(f, 400, list, 1, T);

        /* Below the threshold only the exact read sees them. */
        assert_int_equal(client_read_rss(f->core, 400, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, 400, false, approx), 0);
        assert_int_equal(exact[MEM_RSS_ANON], 10 * PAGE);
        assert_int_equal(exact[MEM_RSS_FILE], PAGE);
        assert_int_equal(exact[MEM_RSS_SWAP], 2 * PAGE);
        assert_int_equal(exact[MEM_RSS_SHMEM], 3 * PAGE);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++)
                assert_int_equal(approx[m], 0);

        /* Passing it syncs that member, and only that member. */
        assert_int_equal(session_charge(s, T, MEM_STAT_ANON, 0, NULL), 0);
        check_rss(f, 400, list, 1, T);
        assert_int_equal(client_read_rss(f->core, 400, false, approx), 0);
        assert_int_equal(approx[MEM_RSS_ANON], T + 10 * PAGE);
        assert_int_equal(approx[MEM_RSS_FILE], 0);
        assert_int_equal(approx[MEM_RSS_SWAP], 0);
        assert_int_equal(approx[MEM_RSS_SHMEM], 0);

        /* A small uncharge shows in exact at once, in approximate later. */
        assert_int_equal(session_uncharge(s, 4 * PAGE, MEM_STAT_ANON), 0);
        check_rss(f, 400, list, 1, T);
        assert_int_equal(client_read_rss(f->core, 400, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, 400, false, approx), 0);
        assert_int_equal(exact[MEM_RSS_ANON], T + 6 * PAGE);
        assert_int_equal(approx[MEM_RSS_ANON], T + 10 * PAGE);

        /* A large one passes -threshold and syncs. */
        assert_int_equal(session_uncharge(s, T + 6 * PAGE, MEM_STAT_ANON), 0);
        check_rss(f, 400, list, 1, T);
        assert_int_equal(client_read_rss(f->core, 400, false, approx), 0);
        assert_int_equal(approx[MEM_RSS_ANON], 0);

        /* Many small steps keep the bound at every step. */
        for (unsigned i = 0; i < 300; i++) {
                assert_int_equal(session_charge(s, PAGE, MEM_STAT_FILE, 0, NULL), 0);
                check_rss(f, 400, list, 1, T);
        }
        for (unsigned i = 0; i < 301; i++) {
                assert_int_equal(session_uncharge(s, PAGE, MEM_STAT_FILE), 0);
                check_rss(f, 400, list, 1, T);
        }
        assert_int_equal(client_read_rss(f->core, 400, true, exact), 0);
        assert_int_equal(exact[MEM_RSS_FILE], 0);

        assert_null(session_free(s));
        assert_int_equal(client_read_rss(f->core, 400, true, exact), -ESRCH);
        assert_int_equal(client_read_rss(f->core, 400, false, approx), -ESRCH);
}

static void test_rss_threshold_sets_how_far_approximate_lags(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a");
        MemSession *s = new_session(f, 401), *list[1];
        int64_t approx[_MEM_RSS_MAX];

        list[0] = s;
        assert_int_equal(session_attach(s, a), 0);

        core_set_rss_threshold(f->core, 4 * PAGE);
        assert_int_equal(session_charge(s, 3 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        check_rss(f, 401, list, 1, 4 * PAGE);
        assert_int_equal(client_read_rss(f->core, 401, false, approx), 0);
        assert_int_equal(approx[MEM_RSS_ANON], 0);
        assert_int_equal(session_charge(s, 2 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        check_rss(f, 401, list, 1, 4 * PAGE);
        assert_int_equal(client_read_rss(f->core, 401, false, approx), 0);
        assert_int_equal(approx[MEM_RSS_ANON], 5 * PAGE);

        /* Threshold 0: every change syncs at once. */
        core_set_rss_threshold(f->core, 0);
        for (unsigned i = 1; i <= 5; i++) {
                assert_int_equal(session_charge(s, 100, MEM_STAT_SWAP, 0, NULL), 0);
                assert_int_equal(client_read_rss(f->core, 401, false, approx), 0);
                assert_int_equal(approx[MEM_RSS_SWAP], 100 * i);
                check_rss(f, 401, list, 1, 0);
        }
        assert_null(session_free(s));
}

static void test_rss_shared_by_sessions_of_a_pid_and_folded_on_free(void **state) {
        Fixture *f = *state;
        const int64_t T = 64 * PAGE;
        MemGroup *a = grp(f, "/a"), *b = grp(f, "/b");
        MemSession *s1 = new_session(f, 500), *s2 = new_session(f, 500);
        MemSession *s3 = new_session(f, 501), *both[2] = { s1, s2 }, *only[1] = { s2 };
        int64_t exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];

        assert_non_null(s1->client);
        assert_ptr_equal(s1->client, s2->client);
        assert_ptr_not_equal(s1->client, s3->client);
        assert_int_equal(s1->client->pid, 500);

        assert_int_equal(session_attach(s1, a), 0);
        assert_int_equal(session_attach(s2, b), 0);
        assert_int_equal(session_attach(s3, a), 0);

        /* s1: T + 1 page synced, then a residue of -2 pages. */
        assert_int_equal(session_charge(s1, T + PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_uncharge(s1, 2 * PAGE, MEM_STAT_ANON), 0);
        /* s2: T + 1 page synced, and one FILE page of residue. */
        assert_int_equal(session_charge(s2, T + PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(s2, PAGE, MEM_STAT_FILE, 0, NULL), 0);
        /* s3 belongs to another client. */
        assert_int_equal(session_charge(s3, T + PAGE, MEM_STAT_SHMEM, 0, NULL), 0);

        check_rss(f, 500, both, 2, T);
        assert_int_equal(client_read_rss(f->core, 500, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, 500, false, approx), 0);
        assert_int_equal(exact[MEM_RSS_ANON], 2 * T);
        assert_int_equal(approx[MEM_RSS_ANON], 2 * T + 2 * PAGE);
        assert_int_equal(exact[MEM_RSS_SHMEM], 0);

        /* Freeing s1 takes its whole contribution away, synced part and
         * residue, from both reads. */
        assert_null(session_free(s1));
        check_rss(f, 500, only, 1, T);
        assert_int_equal(client_read_rss(f->core, 500, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, 500, false, approx), 0);
        assert_int_equal(exact[MEM_RSS_ANON], T + PAGE);
        assert_int_equal(approx[MEM_RSS_ANON], T + PAGE);
        assert_int_equal(exact[MEM_RSS_FILE], PAGE);
        assert_int_equal(approx[MEM_RSS_FILE], 0);

        assert_null(session_free(s2));
        assert_int_equal(client_read_rss(f->core, 500, true, exact), -ESRCH);
        assert_int_equal(client_read_rss(f->core, 500, false, approx), -ESRCH);
        assert_int_equal(client_read_rss(f->core, 501, true, exact), 0);
        assert_int_equal(exact[MEM_RSS_SHMEM], T + PAGE);
        assert_null(session_free(s3));
        assert_int_equal(client_read_rss(f->core, 501, true, exact), -ESRCH);
}

static void test_rss_ignores_kept_charges(void **state) {
        Fixture *f = *state;
        MemGroup *a = grp(f, "/a");
        MemSession *s = new_session(f, 600), *list[1] = { s };
        int64_t exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];

        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(group_charge_kept(f->core, a, 200 * PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge_kept(f->core, a, 200 * PAGE, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(client_read_rss(f->core, 600, true, exact), 0);
        assert_int_equal(client_read_rss(f->core, 600, false, approx), 0);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++) {
                assert_int_equal(exact[m], 0);
                assert_int_equal(approx[m], 0);
        }

        assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        check_rss(f, 600, list, 1, 64 * PAGE);
        assert_int_equal(group_uncharge_kept(f->core, a, 200 * PAGE, MEM_STAT_ANON), 0);
        check_rss(f, 600, list, 1, 64 * PAGE);
        assert_int_equal(client_read_rss(f->core, 600, true, exact), 0);
        assert_int_equal(exact[MEM_RSS_ANON], PAGE);
        assert_int_equal(exact[MEM_RSS_FILE], 0);

        assert_null(session_free(s));
        assert_int_equal(current(f, a), 200 * PAGE);
        assert_int_equal(group_uncharge_kept(f->core, a, 200 * PAGE, MEM_STAT_FILE), 0);
}

static void test_client_read_rss_knows_a_pid_only_while_it_has_sessions(void **state) {
        Fixture *f = *state;
        MemSession *s;
        int64_t rss[_MEM_RSS_MAX];

        assert_int_equal(client_read_rss(f->core, 700, true, rss), -ESRCH);
        assert_int_equal(client_read_rss(f->core, 700, false, rss), -ESRCH);

        /* A client exists from its first session on, attached or not. */
        s = new_session(f, 700);
        assert_int_equal(client_read_rss(f->core, 700, true, rss), 0);
        for (MemRss m = 0; m < _MEM_RSS_MAX; m++)
                assert_int_equal(rss[m], 0);
        assert_int_equal(client_read_rss(f->core, 701, true, rss), -ESRCH);
        assert_null(session_free(s));
        assert_int_equal(client_read_rss(f->core, 700, true, rss), -ESRCH);
}

/* A test that gets a Fixture from setup(). */
#define SESSION_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                SESSION_TEST(test_session_charges_only_while_attached_and_releases_on_free),
                SESSION_TEST(test_session_free_releases_held_not_kept),
                SESSION_TEST(test_session_uncharge_beyond_held_is_erange),
                SESSION_TEST(test_session_attach_refused_while_holding_or_to_removed_group),
                SESSION_TEST(test_group_remove_refused_while_attached),
                SESSION_TEST(test_session_move_takes_held_not_kept_across_subtrees),
                SESSION_TEST(test_session_move_refused_by_max),
                SESSION_TEST(test_client_move_moves_every_session_of_the_pid_or_none),
                cmocka_unit_test(test_rss_from_stat_maps_only_rss_items),
                SESSION_TEST(test_rss_exact_equals_held_and_approximate_lags_by_threshold),
                SESSION_TEST(test_rss_threshold_sets_how_far_approximate_lags),
                SESSION_TEST(test_rss_shared_by_sessions_of_a_pid_and_folded_on_free),
                SESSION_TEST(test_rss_ignores_kept_charges),
                SESSION_TEST(test_client_read_rss_knows_a_pid_only_while_it_has_sessions),
        };

        return cmocka_run_group_tests_name("session", tests, NULL, NULL);
}
