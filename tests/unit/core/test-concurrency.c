/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Concurrency: several threads hammer one core for a few seconds, keeping
 * their own exact record of every charge that succeeded, and the core has
 * to agree with the records to the byte.
 *
 * Worker threads never call cmocka: a broken invariant is recorded under
 * a mutex (CHECK) and the main thread fails the test after joining them.
 * Per-thread records are read by other threads only across a join or a
 * barrier, so they need no atomics.
 */

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "counter.h"
#include "group.h"
#include "session.h"
#include "stats.h"

/* ---- the stress test: random operations, exact bookkeeping ------------- */

#define NWORKERS 4
#define NSESS 2
#define CHARGE_MAX_1 65536    /* phase 1: largest random charge */
#define CHARGE_MAX_2 32768    /* phase 2 */
#define SESSION_CAP (1 << 20) /* a session holds at most this */
#define KEPT_CAP (1 << 20)    /* a thread keeps at most this per group */
#define PHASE1_USEC 2000000
#define PHASE2_USEC 1500000
#define PHASE1_OPS 1000000 /* per thread */
/* Phase 1 alternates free windows with windows in which one subtree is
 * banned: nobody charges or moves into it and threads drain what they hold
 * there, so that removals (and re-creations) happen under load. */
#define BAN_WINDOW_USEC 40000
#define ROUND_OPS 200
#define MAX_ROUNDS 1000
/* Phase 2, between barriers: usage may pass max by what is in flight (a
 * try-charge adds before it compares), at most one operation per worker. */
#define INFLIGHT_SLACK ((int64_t) NWORKERS * MAX(CHARGE_MAX_2, SESSION_CAP))

static const char *const pool[] = { "/", "/a", "/a/b", "/a/c", "/d", "/d/e", "/d/e/f", "/g" };
static const int pool_parent[] = { -1, 0, 1, 1, 0, 4, 5, 0 };
#define NPOOL ((int) ELEMENTSOF(pool))

typedef struct Sess {
        MemSession *s;
        int path; /* index in pool, -1: not attached */
        int64_t held[_MEM_STAT_MAX];
} Sess;

typedef struct Stress Stress;

typedef struct Worker {
        pthread_t thread;
        Stress *st;
        unsigned idx;
        pid_t pid;
        uint64_t rng;
        int64_t kept[NPOOL][_MEM_STAT_MAX];
        Sess sess[NSESS];
        int banned; /* pool index whose subtree is banned now, or -1 */
        unsigned long ops, charged, refused, moved, removed, drained;
} Worker;

struct Stress {
        MemCore *core;
        int phase;
        uint64_t start, deadline;
        pthread_barrier_t barrier; /* phase 2: workers + checker */
        _Atomic unsigned arrived;
        _Atomic bool stop;
        unsigned long rounds, slack_checks;
        MemGroup *fixed[NPOOL]; /* phase 2: every pool group, referenced */
        /* Removing a group releases what is kept in it, whoever kept it:
         * kept charges and uncharges hold their group's lock shared, and a
         * removal holds its subtree's exclusively and only goes ahead when
         * nobody's books show anything kept there. */
        pthread_rwlock_t kept_lock[NPOOL];
        _Atomic int64_t kept_total[NPOOL];
        Worker w[NWORKERS];
};

static void kept_lock(Worker *w, int p) {
        pthread_rwlock_rdlock(&w->st->kept_lock[p]);
}

static void kept_unlock(Worker *w, int p) {
        pthread_rwlock_unlock(&w->st->kept_lock[p]);
}

static void kept_note(Worker *w, int p, int it, int64_t delta) {
        w->kept[p][it] += delta;
        atomic_fetch_add(&w->st->kept_total[p], delta);
}

static bool in_subtree(int p, int top) {
        for (; p >= 0; p = pool_parent[p])
                if (p == top)
                        return true;
        return false;
}

static unsigned rnd_item(Worker *w) {
        return (unsigned) (rnd(&w->rng) % _MEM_STAT_MAX);
}

static int64_t sess_total(const Sess *x) {
        int64_t t = 0;

        for (int it = 0; it < _MEM_STAT_MAX; it++)
                t += x->held[it];
        return t;
}

static void sess_verify(Sess *x) {
        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                CHECK(session_held(x->s, it) == (uint64_t) x->held[it],
                      "session holds %llu of item %d, the owner's record %lld",
                      (unsigned long long) session_held(x->s, it), (int) it,
                      (long long) x->held[it]);
        if (x->path >= 0) {
                MemGroup *g = atomic_load(&x->s->group);

                CHECK(g && strcmp(g->path, pool[x->path]) == 0, "session in %s, expected %s",
                      g ? g->path : "(none)", pool[x->path]);
        }
}

static void op_create(Worker *w) {
        int p = 1 + (int) (rnd(&w->rng) % (NPOOL - 1));
        int r = group_create(w->st->core, pool[p], 0);

        CHECK(r == 0 || r == -EEXIST || r == -ENOENT, "group_create(%s): %d", pool[p], r);
}

static bool banned(Worker *w, int p) {
        return w->banned >= 0 && in_subtree(p, w->banned);
}

static void update_ban(Worker *w) {
        uint64_t e = (now_usec() - w->st->start) / BAN_WINDOW_USEC;

        w->banned = w->st->phase == 1 && e % 2 ? 1 + (int) ((e / 2) % (NPOOL - 1)) : -1;
}

static void remove_checked(Worker *w, int p) {
        int64_t kept = 0;
        int r = -EBUSY;

        for (int q = 0; q < NPOOL; q++)
                if (in_subtree(q, p)) {
                        pthread_rwlock_wrlock(&w->st->kept_lock[q]);
                        kept += atomic_load(&w->st->kept_total[q]);
                }
        if (kept == 0)
                r = group_remove(w->st->core, pool[p]);
        for (int q = 0; q < NPOOL; q++)
                if (in_subtree(q, p))
                        pthread_rwlock_unlock(&w->st->kept_lock[q]);

        CHECK(r == 0 || r == -EBUSY || r == -ENOENT, "group_remove(%s): %d", pool[p], r);
        if (r != 0)
                return;
        w->removed++;
        /* What this thread holds below it must have kept it. */
        for (int q = 0; q < NPOOL; q++) {
                if (!in_subtree(q, p))
                        continue;
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        CHECK(w->kept[q][it] == 0, "%s removed with %lld kept in %s", pool[p],
                              (long long) w->kept[q][it], pool[q]);
                for (int i = 0; i < NSESS; i++)
                        CHECK(w->sess[i].path != q, "%s removed with a session in %s", pool[p],
                              pool[q]);
        }
}

static uint64_t rnd_limit(Worker *w, uint64_t lo, uint64_t span) {
        return rnd(&w->rng) % 3 == 0 ? UINT64_MAX : lo + rnd(&w->rng) % span;
}

static void op_limit(Worker *w) {
        int p = 1 + (int) (rnd(&w->rng) % (NPOOL - 1)), r;
        MemGroup *g = find_group(w->st->core, pool[p]);

        if (!g)
                return;
        switch (rnd(&w->rng) % 4) {
        case 0:
                r = group_set_max(g, rnd_limit(w, 512 * 1024, 8 << 20), false);
                CHECK(r == 0 || r == -EBUSY, "group_set_max(%s): %d", pool[p], r);
                break;
        case 1:
                group_set_high(g, rnd_limit(w, 256 * 1024, 8 << 20));
                break;
        case 2:
                group_set_min(g, rnd_limit(w, 0, 2 << 20));
                break;
        default:
                group_set_low(g, rnd_limit(w, 0, 4 << 20));
                break;
        }
        group_unref(g);
}

static unsigned rnd_flags(Worker *w) {
        return rnd(&w->rng) % 2 ? MEM_CHARGE_NO_OOM : 0;
}

static void op_kept_charge(Worker *w, uint64_t maxsz) {
        int p = (int) (rnd(&w->rng) % NPOOL), r;
        unsigned it = rnd_item(w);
        uint64_t bytes = 1 + rnd(&w->rng) % maxsz;
        MemChargeResult res = {};
        int64_t mine = 0;
        MemGroup *g;

        if (banned(w, p))
                return;
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                mine += w->kept[p][i];
        if (mine + (int64_t) bytes > KEPT_CAP)
                return;
        kept_lock(w, p);
        g = find_group(w->st->core, pool[p]);
        if (!g) {
                kept_unlock(w, p);
                return;
        }
        r = group_charge_kept(w->st->core, g, bytes, it, rnd_flags(w), &res);
        if (r == 0) {
                kept_note(w, p, (int) it, (int64_t) bytes);
                w->charged++;
                CHECK(!res.refused, "a successful kept charge names a refuser");
        } else if (r == -EDQUOT) {
                w->refused++;
                CHECK(res.refused, "-EDQUOT without a refusing group");
        } else
                CHECK(r == -ENOENT, "group_charge_kept(%s): %d", pool[p], r);
        charge_result_done(&res);
        group_unref(g);
        kept_unlock(w, p);
}

static void op_kept_uncharge(Worker *w) {
        int start = (int) (rnd(&w->rng) % (NPOOL * _MEM_STAT_MAX)), r;

        for (int k = 0; k < NPOOL * _MEM_STAT_MAX; k++) {
                int slot = (start + k) % (NPOOL * _MEM_STAT_MAX);
                int p = slot / _MEM_STAT_MAX, it = slot % _MEM_STAT_MAX;
                int64_t bytes;
                MemGroup *g;

                if (w->kept[p][it] == 0)
                        continue;
                bytes = 1 + (int64_t) (rnd(&w->rng) % (uint64_t) w->kept[p][it]);
                kept_lock(w, p);
                g = find_group(w->st->core, pool[p]);
                CHECK(g, "%s vanished while %lld were kept in it", pool[p],
                      (long long) w->kept[p][it]);
                if (!g) {
                        kept_unlock(w, p);
                        return;
                }
                r = group_uncharge_kept(w->st->core, g, (uint64_t) bytes, it);
                CHECK(r == 0, "group_uncharge_kept(%s, %lld of %lld): %d", pool[p],
                      (long long) bytes, (long long) w->kept[p][it], r);
                if (r == 0)
                        kept_note(w, p, it, -bytes);
                group_unref(g);
                kept_unlock(w, p);
                return;
        }
}

static void sess_attach(Worker *w, Sess *x) {
        int p = (int) (rnd(&w->rng) % NPOOL), r;
        MemGroup *g;

        if (p == x->path || banned(w, p))
                return;
        g = find_group(w->st->core, pool[p]);
        if (!g)
                return;
        r = session_attach(x->s, g);
        if (sess_total(x) > 0)
                CHECK(r == -EBUSY, "attach while holding %lld: %d", (long long) sess_total(x),
                      r);
        else {
                CHECK(r == 0 || r == -ENOENT, "session_attach(%s): %d", pool[p], r);
                if (r == 0)
                        x->path = p;
        }
        group_unref(g);
        sess_verify(x);
}

static void op_sess_charge(Worker *w, uint64_t maxsz) {
        Sess *x = &w->sess[rnd(&w->rng) % NSESS];
        uint64_t bytes = 1 + rnd(&w->rng) % maxsz;
        unsigned it = rnd_item(w);
        MemChargeResult res = {};
        int r;

        if (!x->s)
                return;
        if (x->path < 0) {
                sess_attach(w, x);
                return;
        }
        if (sess_total(x) + (int64_t) bytes > SESSION_CAP || banned(w, x->path))
                return;
        r = session_charge(x->s, bytes, it, rnd_flags(w), &res);
        if (r == 0) {
                x->held[it] += (int64_t) bytes;
                w->charged++;
        } else if (r == -EDQUOT) {
                w->refused++;
                CHECK(res.refused, "-EDQUOT without a refusing group");
        } else
                CHECK(false, "session_charge(%s): %d", pool[x->path], r);
        charge_result_done(&res);
        sess_verify(x);
}

static void op_sess_uncharge(Worker *w) {
        Sess *x = &w->sess[rnd(&w->rng) % NSESS];
        unsigned start = rnd_item(w);
        int r;

        if (!x->s)
                return;
        if (x->path < 0) {
                r = session_uncharge(x->s, 1, start);
                CHECK(r == -ENOTCONN, "uncharge unattached: %d", r);
                return;
        }
        for (unsigned k = 0; k < _MEM_STAT_MAX; k++) {
                unsigned it = (start + k) % _MEM_STAT_MAX;
                int64_t bytes;

                if (x->held[it] == 0)
                        continue;
                if (rnd(&w->rng) % 8 == 0) {
                        r = session_uncharge(x->s, (uint64_t) x->held[it] + 1, it);
                        CHECK(r == -ERANGE, "uncharge beyond held: %d", r);
                } else {
                        bytes = 1 + (int64_t) (rnd(&w->rng) % (uint64_t) x->held[it]);
                        r = session_uncharge(x->s, (uint64_t) bytes, it);
                        CHECK(r == 0, "session_uncharge(%lld of %lld): %d", (long long) bytes,
                              (long long) x->held[it], r);
                        if (r == 0)
                                x->held[it] -= bytes;
                }
                sess_verify(x);
                return;
        }
        r = session_uncharge(x->s, 1, start);
        CHECK(r == -ERANGE, "uncharge holding nothing: %d", r);
}

static void op_sess_move(Worker *w) {
        Sess *x = &w->sess[rnd(&w->rng) % NSESS];
        int p = (int) (rnd(&w->rng) % NPOOL), r;
        MemChargeResult res = {};
        MemGroup *g;

        if (!x->s || p == x->path || banned(w, p))
                return;
        g = find_group(w->st->core, pool[p]);
        if (!g)
                return;
        r = session_move(x->s, g, &res);
        if (x->path < 0)
                CHECK(r == -ENOTCONN, "move unattached: %d", r);
        else if (r == 0) {
                x->path = p;
                w->moved++;
        } else if (r == -EDQUOT) {
                w->refused++;
                CHECK(res.refused, "-EDQUOT move without a refusing group");
        } else
                CHECK(r == -ENOENT, "session_move(%s -> %s): %d", pool[x->path], pool[p], r);
        charge_result_done(&res);
        group_unref(g);
        sess_verify(x);
}

static void op_sess_recycle(Worker *w) {
        Sess *x = &w->sess[rnd(&w->rng) % NSESS];
        int r;

        session_free(x->s);
        *x = (Sess) { .path = -1 };
        r = session_new(w->st->core, w->pid, 1000, 1000, &x->s);
        CHECK(r == 0, "session_new: %d", r);
        if (r < 0)
                x->s = NULL;
}

static void op_remove(Worker *w) {
        remove_checked(w, 1 + (int) (rnd(&w->rng) % (NPOOL - 1)));
}

/* Give up everything this thread holds in the banned subtree (sessions go
 * to "/", by a move to that ancestor or by an uncharge and an attach),
 * then try to remove the subtree bottom-up. */
static void op_drain(Worker *w) {
        int top = w->banned, r;
        MemGroup *root;

        if (top < 0) {
                op_remove(w);
                return;
        }
        for (int q = 0; q < NPOOL; q++)
                for (int it = 0; it < _MEM_STAT_MAX && in_subtree(q, top); it++) {
                        MemGroup *g;

                        if (w->kept[q][it] == 0)
                                continue;
                        kept_lock(w, q);
                        g = find_group(w->st->core, pool[q]);
                        CHECK(g, "%s vanished while %lld were kept in it", pool[q],
                              (long long) w->kept[q][it]);
                        if (!g) {
                                kept_unlock(w, q);
                                return;
                        }
                        r = group_uncharge_kept(w->st->core, g, (uint64_t) w->kept[q][it], it);
                        CHECK(r == 0, "group_uncharge_kept(%s, all): %d", pool[q], r);
                        if (r == 0)
                                kept_note(w, q, it, -w->kept[q][it]);
                        group_unref(g);
                        kept_unlock(w, q);
                }
        root = find_group(w->st->core, "/");
        CHECK(root, "no root");
        for (int k = 0; root && k < NSESS; k++) {
                Sess *x = &w->sess[k];
                MemChargeResult res = {};

                if (!x->s || x->path < 0 || !in_subtree(x->path, top))
                        continue;
                if (rnd(&w->rng) % 2) {
                        r = session_move(x->s, root, &res);
                        CHECK(r == 0, "session_move(%s -> /): %d", pool[x->path], r);
                        charge_result_done(&res);
                } else {
                        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                                if (x->held[it] == 0)
                                        continue;
                                r = session_uncharge(x->s, (uint64_t) x->held[it], it);
                                CHECK(r == 0, "session_uncharge(all): %d", r);
                                if (r == 0)
                                        x->held[it] = 0;
                        }
                        r = session_attach(x->s, root);
                        CHECK(r == 0, "session_attach(/) holding nothing: %d", r);
                }
                if (r == 0)
                        x->path = 0;
                sess_verify(x);
        }
        group_unref(root);
        w->drained++;
        for (int q = NPOOL - 1; q > 0; q--)
                if (in_subtree(q, top))
                        remove_checked(w, q);
}

static void phase1_op(Worker *w) {
        switch (rnd(&w->rng) % 16) {
        case 0:
                op_create(w);
                break;
        case 1:
                op_drain(w);
                break;
        case 2:
        case 3:
                op_limit(w);
                break;
        case 4:
        case 5:
        case 6:
                op_kept_charge(w, CHARGE_MAX_1);
                break;
        case 7:
        case 8:
                op_kept_uncharge(w);
                break;
        case 9:
        case 10:
                op_sess_charge(w, CHARGE_MAX_1);
                break;
        case 11:
        case 12:
                op_sess_uncharge(w);
                break;
        case 13:
                op_sess_move(w);
                break;
        case 14:
                if (w->sess[0].s)
                        sess_attach(w, &w->sess[rnd(&w->rng) % NSESS]);
                break;
        default:
                if (rnd(&w->rng) % 8 == 0)
                        op_sess_recycle(w);
                else
                        op_sess_move(w);
                break;
        }
        w->ops++;
}

/* Phase 2: limits and the tree are fixed; only charges, uncharges, moves. */
static void phase2_op(Worker *w) {
        switch (rnd(&w->rng) % 8) {
        case 0:
        case 1:
                op_kept_charge(w, CHARGE_MAX_2);
                break;
        case 2:
                op_kept_uncharge(w);
                break;
        case 3:
        case 4:
                op_sess_charge(w, CHARGE_MAX_2);
                break;
        case 5:
                op_sess_uncharge(w);
                break;
        default:
                op_sess_move(w);
                break;
        }
        w->ops++;
}

/*
 * Everything the records say must hold, checked while no worker runs (after
 * a join or inside the phase-2 barrier): usage and stats equal the sum of
 * the live charges in each subtree, kept bytes per item, no usage above
 * its max, nothing negative, and each client's exact RSS.
 */
static void verify_exact(Stress *st, const char *when) {
        int64_t local[NPOOL][_MEM_STAT_MAX] = {}, total[NPOOL][_MEM_STAT_MAX] = {};
        int64_t kept[NPOOL][_MEM_STAT_MAX] = {};
        MemGroup *groups[NPOOL];

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                for (int p = 0; p < NPOOL; p++)
                        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                                kept[p][it] += w->kept[p][it];
                                local[p][it] += w->kept[p][it];
                        }
                for (int k = 0; k < NSESS; k++)
                        if (w->sess[k].path >= 0)
                                for (int it = 0; it < _MEM_STAT_MAX; it++)
                                        local[w->sess[k].path][it] += w->sess[k].held[it];
        }
        for (int p = 0; p < NPOOL; p++)
                for (int q = p; q >= 0; q = pool_parent[q])
                        for (int it = 0; it < _MEM_STAT_MAX; it++)
                                total[q][it] += local[p][it];

        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;
                int64_t sum = 0;

                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        sum += total[p][it];
                groups[p] = find_group(st->core, pool[p]);
                if (!groups[p]) {
                        CHECK(sum == 0, "%s: %s is gone but %lld are charged in it", when,
                              pool[p], (long long) sum);
                        continue;
                }
                CHECK(counter_read(&groups[p]->counter) >= 0, "%s: %s usage negative", when,
                      pool[p]);
                group_read(st->core, groups[p], NULL, false, &info);
                CHECK(info.current == (uint64_t) sum, "%s: %s usage %llu, live charges %lld",
                      when, pool[p], (unsigned long long) info.current, (long long) sum);
                CHECK(info.max == UINT64_MAX || info.current <= info.max,
                      "%s: %s usage %llu above max %llu", when, pool[p],
                      (unsigned long long) info.current, (unsigned long long) info.max);
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        CHECK(info.kept[it] == (uint64_t) kept[p][it],
                              "%s: %s kept[%d] %llu, records %lld", when, pool[p], it,
                              (unsigned long long) info.kept[it], (long long) kept[p][it]);
        }

        core_stats_flush(st->core, true);
        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;

                if (!groups[p])
                        continue;
                group_read(st->core, groups[p], NULL, false, &info);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        CHECK(info.stat[it] == total[p][it],
                              "%s: %s stat[%s] %lld after a forced flush, live %lld", when,
                              pool[p], mem_stat_item_to_string(it), (long long) info.stat[it],
                              (long long) total[p][it]);
                        CHECK(info.stat_local[it] == local[p][it],
                              "%s: %s stat_local[%s] %lld, live %lld", when, pool[p],
                              mem_stat_item_to_string(it), (long long) info.stat_local[it],
                              (long long) local[p][it]);
                }
                group_unref(groups[p]);
        }

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];
                int64_t expect[_MEM_RSS_MAX] = {}, exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];
                int64_t bound = atomic_load(&st->core->rss_threshold) * NSESS;
                int r;

                for (int k = 0; k < NSESS; k++)
                        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                                if (mem_rss_from_stat(it) >= 0)
                                        expect[mem_rss_from_stat(it)] += w->sess[k].held[it];
                r = client_read_rss(st->core, w->pid, true, exact);
                CHECK(r == 0, "%s: client_read_rss(%d): %d", when, (int) w->pid, r);
                r = client_read_rss(st->core, w->pid, false, approx);
                CHECK(r == 0, "%s: client_read_rss(%d, approximate): %d", when, (int) w->pid, r);
                if (r < 0)
                        continue;
                for (int m = 0; m < _MEM_RSS_MAX; m++) {
                        CHECK(exact[m] == expect[m], "%s: pid %d rss %s %lld, held %lld", when,
                              (int) w->pid, mem_rss_to_string(m), (long long) exact[m],
                              (long long) expect[m]);
                        CHECK(approx[m] >= 0 && approx[m] - exact[m] <= bound &&
                                      exact[m] - approx[m] <= bound,
                              "%s: pid %d rss %s approximate %lld, exact %lld", when,
                              (int) w->pid, mem_rss_to_string(m), (long long) approx[m],
                              (long long) exact[m]);
                }
        }
}

static void *worker_main(void *arg) {
        Worker *w = arg;
        Stress *st = w->st;
        int r = core_thread_register(st->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        w->banned = -1;
        if (st->phase == 1) {
                for (unsigned long n = 0; r == 0 && n < PHASE1_OPS; n++) {
                        if (n % 16 == 0) {
                                if (now_usec() >= st->deadline)
                                        break;
                                update_ban(w);
                        }
                        phase1_op(w);
                }
        } else {
                for (;;) {
                        for (unsigned n = 0; r == 0 && n < ROUND_OPS; n++)
                                phase2_op(w);
                        atomic_fetch_add(&st->arrived, 1);
                        pthread_barrier_wait(&st->barrier); /* the checker checks */
                        pthread_barrier_wait(&st->barrier);
                        if (atomic_load(&st->stop))
                                break;
                }
        }
        if (r == 0)
                core_thread_unregister(st->core);
        return NULL;
}

/* Between barriers: with limits fixed, usage may pass max only by the
 * speculative adds in flight. */
static void slack_check(Stress *st) {
        for (int p = 1; p < NPOOL; p++) {
                MemCounter *c = &st->fixed[p]->counter;
                int64_t usage = counter_read(c), max = counter_read_limit(&c->max);

                CHECK(usage >= 0, "%s usage %lld", pool[p], (long long) usage);
                CHECK(usage <= max + INFLIGHT_SLACK, "%s usage %lld, max %lld", pool[p],
                      (long long) usage, (long long) max);
        }
        st->slack_checks++;
}

static void *checker_main(void *arg) {
        Stress *st = arg;
        int r = core_thread_register(st->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (;;) {
                while (atomic_load(&st->arrived) < NWORKERS) {
                        slack_check(st);
                        sched_yield();
                }
                pthread_barrier_wait(&st->barrier);
                atomic_store(&st->arrived, 0);
                if (r == 0)
                        verify_exact(st, "phase 2 barrier");
                st->rounds++;
                if (now_usec() >= st->deadline || st->rounds >= MAX_ROUNDS)
                        atomic_store(&st->stop, true);
                pthread_barrier_wait(&st->barrier);
                if (atomic_load(&st->stop))
                        break;
        }
        if (r == 0)
                core_thread_unregister(st->core);
        return NULL;
}

static void run_workers(Stress *st, int phase, uint64_t usec) {
        pthread_t checker;

        st->phase = phase;
        st->start = now_usec();
        st->deadline = st->start + usec;
        if (phase == 2) {
                assert_int_equal(pthread_barrier_init(&st->barrier, NULL, NWORKERS + 1), 0);
                atomic_store(&st->arrived, 0);
                atomic_store(&st->stop, false);
                assert_int_equal(pthread_create(&checker, NULL, checker_main, st), 0);
        }
        for (unsigned i = 0; i < NWORKERS; i++)
                assert_int_equal(pthread_create(&st->w[i].thread, NULL, worker_main, &st->w[i]),
                                 0);
        for (unsigned i = 0; i < NWORKERS; i++)
                assert_int_equal(pthread_join(st->w[i].thread, NULL), 0);
        if (phase == 2) {
                assert_int_equal(pthread_join(checker, NULL), 0);
                assert_int_equal(pthread_barrier_destroy(&st->barrier), 0);
        }
}

static void test_random_operations_keep_invariants(void **state) {
        MemCore *core = *state;
        uint64_t seed = seed_base();
        unsigned long ops = 0, charged = 0, refused = 0, moved = 0, removed = 0, drained = 0;
        Stress *st = calloc(1, sizeof(*st));

        for (int p = 0; st && p < NPOOL; p++)
                pthread_rwlock_init(&st->kept_lock[p], NULL);

        assert_non_null(st);
        st->core = core;
        print_message("seed %llu (MEMACCT_TEST_SEED)\n", (unsigned long long) seed);
        for (int p = 1; p < NPOOL; p++)
                assert_int_equal(group_create(core, pool[p], 0), 0);
        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                w->st = st;
                w->idx = i;
                w->pid = (pid_t) (2000 + i);
                w->banned = -1;
                w->rng = seed * (2 * i + 1) + 0x9E3779B97F4A7C15ULL;
                for (int k = 0; k < NSESS; k++) {
                        w->sess[k].path = -1;
                        assert_int_equal(session_new(core, w->pid, 1000, 1000, &w->sess[k].s),
                                         0);
                }
        }

        /* Phase 1: everything at once, the tree and limits included. */
        run_workers(st, 1, PHASE1_USEC);
        assert_no_failures();
        verify_exact(st, "after phase 1");
        assert_no_failures();

        /* Phase 2: fixed tree, fixed limits a little above usage. */
        for (int p = 0; p < NPOOL; p++) {
                st->fixed[p] = make_group(core, pool[p]);
                assert_non_null(st->fixed[p]);
                if (p == 0)
                        continue;
                assert_int_equal(group_set_max(st->fixed[p],
                                               read_usage(core, st->fixed[p]) + 65536 +
                                                       rnd(&st->w[0].rng) % (448 * 1024),
                                               false),
                                 0);
        }
        run_workers(st, 2, PHASE2_USEC);
        assert_no_failures();
        verify_exact(st, "after phase 2");
        assert_no_failures();

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                ops += w->ops;
                charged += w->charged;
                refused += w->refused;
                moved += w->moved;
                removed += w->removed;
                drained += w->drained;
        }
        print_message("%lu ops, %lu charges, %lu refusals, %lu moves, %lu drains, "
                      "%lu removals, %lu barrier checks, %lu slack checks\n",
                      ops, charged, refused, moved, drained, removed, st->rounds,
                      st->slack_checks);
        assert_true(charged > 0);
        assert_true(moved > 0);
        assert_true(st->rounds > 0);

        /* Release everything from the main thread: all back to zero. */
        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];
                int64_t rss[_MEM_RSS_MAX];

                for (int k = 0; k < NSESS; k++) {
                        assert_null(session_free(w->sess[k].s));
                        w->sess[k] = (Sess) { .path = -1 };
                }
                for (int p = 0; p < NPOOL; p++)
                        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                                if (w->kept[p][it] == 0)
                                        continue;
                                assert_int_equal(group_uncharge_kept(core, st->fixed[p],
                                                                     (uint64_t) w->kept[p][it],
                                                                     it),
                                                 0);
                                w->kept[p][it] = 0;
                        }
                assert_int_equal(client_read_rss(core, w->pid, true, rss), -ESRCH);
        }
        core_stats_flush(core, true);
        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;

                group_read(core, st->fixed[p], NULL, true, &info);
                assert_int_equal(info.current, 0);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        assert_int_equal(info.stat[it], 0);
                        assert_int_equal(info.stat_local[it], 0);
                        assert_int_equal(info.kept[it], 0);
                }
        }
        for (int p = NPOOL - 1; p > 0; p--)
                assert_int_equal(group_remove(core, pool[p]), 0);
        for (int p = 0; p < NPOOL; p++)
                group_unref(st->fixed[p]);
        assert_int_equal(core_group_count(core), 1);
        free(st);
}

/* ---- moves are atomic for consistent readers ------------------------------ */

#define MOVE_USEC 1000000
#define MOVE_MAX 20000
#define NREADERS 2

typedef struct MoveTest {
        MemCore *core;
        MemSession *s;
        MemGroup *m, *a, *b;
        int64_t n;
        uint64_t deadline;
        uint64_t rng;
        _Atomic bool done;
        unsigned long moves;
        _Atomic unsigned long reads;
        int64_t held[_MEM_STAT_MAX]; /* charger's record */
        unsigned long charges;
} MoveTest;

static void *mover_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *at = t->a;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < MOVE_MAX && now_usec() < t->deadline; i++) {
                MemGroup *dst = at == t->a ? t->b : t->a;
                MemChargeResult res = {};
                int k = session_move(t->s, dst, &res);

                CHECK(k == 0, "session_move: %d", k);
                charge_result_done(&res);
                if (k < 0)
                        break;
                at = dst;
                t->moves++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *consistent_reader_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && !atomic_load(&t->done)) {
                uint64_t out[2] = { 1, 1 };

                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) t->n, "a %llu + b %llu != %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) t->n);
                CHECK((out[0] == 0 && out[1] == (uint64_t) t->n) ||
                              (out[1] == 0 && out[0] == (uint64_t) t->n),
                      "half a move seen: a %llu, b %llu", (unsigned long long) out[0],
                      (unsigned long long) out[1]);
                /* The common ancestor is never charged or uncharged by a move. */
                CHECK(counter_read(&t->m->counter) == t->n, "/m usage %lld during moves",
                      (long long) counter_read(&t->m->counter));
                atomic_fetch_add_explicit(&t->reads, 1, memory_order_relaxed);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void move_test_init(MemCore *core, MoveTest *t, const char *top, pid_t pid) {
        char pa[32], pb[32];

        snprintf(pa, sizeof(pa), "%s/a", top);
        snprintf(pb, sizeof(pb), "%s/b", top);
        *t = (MoveTest) { .core = core, .rng = seed_base() };
        t->m = make_group(core, top);
        t->a = make_group(core, pa);
        t->b = make_group(core, pb);
        assert_non_null(t->m);
        assert_non_null(t->a);
        assert_non_null(t->b);
        assert_int_equal(session_new(core, pid, 1000, 1000, &t->s), 0);
        assert_int_equal(session_attach(t->s, t->a), 0);
}

static void move_test_done(MoveTest *t) {
        assert_null(session_free(t->s));
        assert_int_equal(read_usage(t->core, t->m), 0);
        group_unref(t->a);
        group_unref(t->b);
        group_unref(t->m);
}

static void test_move_atomic_for_consistent_readers(void **state) {
        MemCore *core = *state;
        pthread_t mover, readers[NREADERS];
        MoveTest t;
        uint64_t out[2];

        move_test_init(core, &t, "/m", 900);
        assert_int_equal(session_charge(t.s, 1 << 20, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(t.s, 12345, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(session_charge(t.s, 3 * PAGE, MEM_STAT_KERNEL, 0, NULL), 0);
        t.n = (1 << 20) + 12345 + 3 * PAGE;
        t.deadline = now_usec() + MOVE_USEC;

        for (unsigned i = 0; i < NREADERS; i++)
                assert_int_equal(pthread_create(&readers[i], NULL, consistent_reader_main, &t),
                                 0);
        assert_int_equal(pthread_create(&mover, NULL, mover_main, &t), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        for (unsigned i = 0; i < NREADERS; i++)
                assert_int_equal(pthread_join(readers[i], NULL), 0);
        assert_no_failures();
        print_message("%lu moves, %lu consistent reads\n", t.moves, atomic_load(&t.reads));
        assert_true(t.moves >= 10);
        assert_true(atomic_load(&t.reads) > 0);

        /* Where the mover left it, with its stats. */
        core_read_usage_consistent(core, (MemGroup *const[]) { t.a, t.b }, 2, out);
        assert_int_equal(out[t.moves % 2], t.n);
        assert_int_equal(out[1 - t.moves % 2], 0);
        assert_ptr_equal(atomic_load(&t.s->group), t.moves % 2 ? t.b : t.a);
        {
                MemGroupInfo in, away;

                group_read(core, t.moves % 2 ? t.b : t.a, NULL, true, &in);
                group_read(core, t.moves % 2 ? t.a : t.b, NULL, true, &away);
                assert_int_equal(in.stat[MEM_STAT_ANON], 1 << 20);
                assert_int_equal(in.stat[MEM_STAT_FILE], 12345);
                assert_int_equal(in.stat[MEM_STAT_KERNEL], 3 * PAGE);
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        assert_int_equal(away.stat[it], 0);
        }
        move_test_done(&t);
}

/* ---- the session's own charges race moves of it (fast path 3) ----------- */

static void *session_charger_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < 200000; i++) {
                unsigned it = (unsigned) (rnd(&t->rng) % _MEM_STAT_MAX);
                uint64_t out[2];
                int64_t sum = 0;
                int k;

                if (i % 64 == 0 && now_usec() >= t->deadline)
                        break;
                if (t->held[it] > 0 && rnd(&t->rng) % 3 == 0) {
                        int64_t bytes = 1 + (int64_t) (rnd(&t->rng) % (uint64_t) t->held[it]);

                        k = session_uncharge(t->s, (uint64_t) bytes, it);
                        CHECK(k == 0, "session_uncharge: %d", k);
                        if (k == 0)
                                t->held[it] -= bytes;
                } else {
                        uint64_t bytes = 1 + rnd(&t->rng) % (3 * PAGE);

                        k = session_charge(t->s, bytes, it, 0, NULL);
                        CHECK(k == 0, "session_charge: %d", k);
                        if (k == 0)
                                t->held[it] += (int64_t) bytes;
                }
                t->charges++;
                for (int j = 0; j < _MEM_STAT_MAX; j++) {
                        CHECK(session_held(t->s, j) == (uint64_t) t->held[j],
                              "held[%d] %llu, record %lld", j,
                              (unsigned long long) session_held(t->s, j),
                              (long long) t->held[j]);
                        sum += t->held[j];
                }
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) sum, "a %llu + b %llu, held %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) sum);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_session_charges_race_moves(void **state) {
        MemCore *core = *state;
        pthread_t mover, charger;
        MemGroupInfo in, away, top;
        int64_t exact[_MEM_RSS_MAX], expect[_MEM_RSS_MAX] = {}, sum = 0;
        MemGroup *g;
        MoveTest t;

        move_test_init(core, &t, "/n", 901);
        t.deadline = now_usec() + MOVE_USEC;
        assert_int_equal(pthread_create(&charger, NULL, session_charger_main, &t), 0);
        assert_int_equal(pthread_create(&mover, NULL, mover_main, &t), 0);
        assert_int_equal(pthread_join(charger, NULL), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        assert_no_failures();
        print_message("%lu charges/uncharges, %lu moves\n", t.charges, t.moves);
        assert_true(t.moves > 0);
        assert_true(t.charges > 0);

        /* Every stat update landed on the group the charge was in. */
        g = atomic_load(&t.s->group);
        assert_ptr_equal(g, t.moves % 2 ? t.b : t.a);
        core_stats_flush(core, true);
        group_read(core, g, NULL, false, &in);
        group_read(core, g == t.a ? t.b : t.a, NULL, false, &away);
        group_read(core, t.m, NULL, false, &top);
        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                assert_int_equal(in.stat[it], t.held[it]);
                assert_int_equal(in.stat_local[it], t.held[it]);
                assert_int_equal(away.stat[it], 0);
                assert_int_equal(away.stat_local[it], 0);
                assert_int_equal(top.stat[it], t.held[it]);
                sum += t.held[it];
                if (mem_rss_from_stat(it) >= 0)
                        expect[mem_rss_from_stat(it)] += t.held[it];
        }
        assert_int_equal(in.current, sum);
        assert_int_equal(away.current, 0);
        assert_int_equal(top.current, sum);
        assert_int_equal(client_read_rss(core, 901, true, exact), 0);
        for (int m = 0; m < _MEM_RSS_MAX; m++)
                assert_int_equal(exact[m], expect[m]);
        move_test_done(&t);
}

/* ---- session_free races client_move -------------------------------------- */

#define FREE_PID 902

static void *session_churn_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < 100000 && now_usec() < t->deadline; i++) {
                MemSession *s[3] = {};
                unsigned n = 1 + (unsigned) (rnd(&t->rng) % 3);
                int64_t sum = 0, rss[_MEM_RSS_MAX];
                uint64_t out[2];
                int k;

                for (unsigned j = 0; j < n; j++) {
                        uint64_t bytes = 1 + rnd(&t->rng) % (64 * PAGE);

                        k = session_new(t->core, FREE_PID, 1000, 1000, &s[j]);
                        CHECK(k == 0, "session_new: %d", k);
                        if (k < 0)
                                break;
                        k = session_attach(s[j], rnd(&t->rng) % 2 ? t->a : t->b);
                        CHECK(k == 0, "session_attach: %d", k);
                        k = session_charge(s[j], bytes, MEM_STAT_ANON, 0, NULL);
                        CHECK(k == 0, "session_charge: %d", k);
                        if (k == 0)
                                sum += (int64_t) bytes;
                }
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) sum, "a %llu + b %llu, held %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) sum);
                for (unsigned j = 0; j < n; j++)
                        session_free(s[(j + i) % n]);
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] == 0 && out[1] == 0, "after free: a %llu, b %llu",
                      (unsigned long long) out[0], (unsigned long long) out[1]);
                k = client_read_rss(t->core, FREE_PID, true, rss);
                CHECK(k == -ESRCH, "client_read_rss after the last free: %d", k);
                t->charges++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *client_mover_main(void *arg) {
        MoveTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && !atomic_load(&t->done); i++) {
                MemChargeResult res = {};
                int k = client_move(t->core, FREE_PID, i % 2 ? t->a : t->b, &res);

                /* -ENOTCONN: a session of the pid not attached yet. */
                CHECK(k >= 0 || k == -ESRCH || k == -ENOTCONN, "client_move: %d", k);
                if (k > 0)
                        t->moves += (unsigned long) k;
                charge_result_done(&res);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_session_free_races_client_move(void **state) {
        MemCore *core = *state;
        pthread_t churn, mover;
        MoveTest t;
        int64_t rss[_MEM_RSS_MAX];

        move_test_init(core, &t, "/p", 903);
        t.deadline = now_usec() + MOVE_USEC;
        assert_int_equal(pthread_create(&mover, NULL, client_mover_main, &t), 0);
        assert_int_equal(pthread_create(&churn, NULL, session_churn_main, &t), 0);
        assert_int_equal(pthread_join(churn, NULL), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        assert_no_failures();
        print_message("%lu session rounds, %lu sessions moved by client_move\n", t.charges,
                      t.moves);
        assert_true(t.charges > 0);
        assert_true(t.moves > 0);
        assert_int_equal(read_usage(core, t.a), 0);
        assert_int_equal(read_usage(core, t.b), 0);
        assert_int_equal(client_read_rss(core, FREE_PID, true, rss), -ESRCH);
        move_test_done(&t);
}

/* ---- lookups race removal and re-creation of the same path ---------------- */

#define GET_USEC 1000000
#define NGETTERS 4

typedef struct GetTest {
        MemCore *core;
        uint64_t deadline;
        _Atomic bool done;
        unsigned long removes;
        _Atomic unsigned long gets, kept;
} GetTest;

static void *remover_main(void *arg) {
        GetTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && now_usec() < t->deadline) {
                int k = group_create(t->core, "/r", 0);

                CHECK(k == 0, "group_create(/r): %d", k);
                /* Only references and kept charges are in it: removal
                 * takes both (references keep the memory, not the group). */
                k = group_remove(t->core, "/r");
                CHECK(k == 0, "group_remove(/r): %d", k);
                t->removes++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *getter_main(void *arg) {
        GetTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && !atomic_load(&t->done); i++) {
                MemGroup *g;
                int k = group_get(t->core, "/r", &g);

                CHECK(k == 0 || k == -ENOENT, "group_get(/r): %d", k);
                if (k < 0)
                        continue;
                CHECK(atomic_load(&g->refs) >= 1, "group_get() returned a group with %u refs",
                      atomic_load(&g->refs));
                k = group_charge_kept(t->core, g, PAGE, MEM_STAT_FILE, 0, NULL);
                CHECK(k == 0 || k == -ENOENT, "group_charge_kept(/r): %d", k);
                if (k == 0)
                        atomic_fetch_add(&t->kept, 1);
                /* Run every queued free now: a group this thread still holds a
                 * reference to must not be among them. */
                if (i % 256 == 0)
                        urcu_memb_barrier();
                CHECK(strcmp(g->path, "/r") == 0 && atomic_load(&g->refs) >= 1,
                      "a referenced group was freed under its holder");
                group_unref(g);
                atomic_fetch_add(&t->gets, 1);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

/*
 * A lookup may find a group just before its removal unlinks it and drops
 * the tree's reference: the reference it then takes must not bring a
 * count of 0 back to life (the group is queued for freeing by then), and
 * kept charges that raced the removal must all be released with it.
 */
static void test_group_get_races_remove(void **state) {
        MemCore *core = *state;
        pthread_t remover, getters[NGETTERS];
        GetTest t = { .core = core };
        MemGroup *root = find_group(core, "/");
        MemGroupInfo info;

        assert_non_null(root);
        t.deadline = now_usec() + GET_USEC;
        for (unsigned i = 0; i < NGETTERS; i++)
                assert_int_equal(pthread_create(&getters[i], NULL, getter_main, &t), 0);
        assert_int_equal(pthread_create(&remover, NULL, remover_main, &t), 0);
        assert_int_equal(pthread_join(remover, NULL), 0);
        for (unsigned i = 0; i < NGETTERS; i++)
                assert_int_equal(pthread_join(getters[i], NULL), 0);
        assert_no_failures();
        print_message("%lu removals, %lu references taken, %lu kept charges\n", t.removes,
                      atomic_load(&t.gets), atomic_load(&t.kept));
        assert_true(t.removes > 0);
        assert_true(atomic_load(&t.gets) > 0);

        /* Every removal took its kept charges along. */
        urcu_memb_barrier();
        core_stats_flush(core, true);
        group_read(core, root, NULL, false, &info);
        assert_int_equal(info.current, 0);
        for (int it = 0; it < _MEM_STAT_MAX; it++)
                assert_int_equal(info.stat[it], 0);
        assert_int_equal(core_group_count(core), 1);
        group_unref(root);
}

/* ---- a refused removal must not disturb the group's users ----------------- */

#define REFUSE_USEC 500000
#define NKEEPERS 2

typedef struct RefuseTest {
        MemCore *core;
        MemGroup *g;
        uint64_t deadline;
        _Atomic bool done;
        unsigned long refusals;
        _Atomic unsigned long charges, enoent_charges;
        _Atomic int64_t kept; /* bytes the keepers hold, all items */
} RefuseTest;

static void *refuser_main(void *arg) {
        RefuseTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && now_usec() < t->deadline) {
                int k = group_remove(t->core, "/x");

                CHECK(k == -EBUSY, "group_remove(/x) with a session attached: %d", k);
                t->refusals++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *keeper_main(void *arg) {
        RefuseTest *t = arg;
        int64_t mine = 0;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && !atomic_load(&t->done)) {
                int k = group_charge_kept(t->core, t->g, PAGE, MEM_STAT_SHMEM, 0, NULL);

                /* "Being removed" may cover an attempt that is then refused. */
                CHECK(k == 0 || k == -ENOENT, "group_charge_kept(/x): %d", k);
                if (k == -ENOENT)
                        atomic_fetch_add(&t->enoent_charges, 1);
                if (k == 0) {
                        mine += PAGE;
                        atomic_fetch_add(&t->charges, 1);
                }
                if (mine == 0)
                        continue;
                /* The group is never removed: releasing what is kept in it
                 * cannot fail. */
                k = group_uncharge_kept(t->core, t->g, PAGE, MEM_STAT_SHMEM);
                CHECK(k == 0, "group_uncharge_kept(/x) while a removal was refused: %d", k);
                if (k == 0)
                        mine -= PAGE;
        }
        atomic_fetch_add(&t->kept, mine);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_refused_remove_keeps_group_usable(void **state) {
        MemCore *core = *state;
        pthread_t refuser, keepers[NKEEPERS];
        RefuseTest t = { .core = core };
        MemSession *s;
        MemGroupInfo info;

        t.g = make_group(core, "/x");
        assert_non_null(t.g);
        assert_int_equal(session_new(core, 904, 1000, 1000, &s), 0);
        assert_int_equal(session_attach(s, t.g), 0);
        t.deadline = now_usec() + REFUSE_USEC;
        for (unsigned i = 0; i < NKEEPERS; i++)
                assert_int_equal(pthread_create(&keepers[i], NULL, keeper_main, &t), 0);
        assert_int_equal(pthread_create(&refuser, NULL, refuser_main, &t), 0);
        assert_int_equal(pthread_join(refuser, NULL), 0);
        for (unsigned i = 0; i < NKEEPERS; i++)
                assert_int_equal(pthread_join(keepers[i], NULL), 0);
        print_message("%lu refused removals, %lu kept charges, %lu refused with -ENOENT\n",
                      t.refusals, atomic_load(&t.charges), atomic_load(&t.enoent_charges));
        core_stats_flush(core, true);
        group_read(core, t.g, NULL, false, &info);
        assert_null(session_free(s));

        assert_no_failures();
        assert_true(t.refusals > 0);
        assert_true(atomic_load(&t.charges) > 0);
        assert_int_equal(info.current, atomic_load(&t.kept));
        assert_int_equal(info.kept[MEM_STAT_SHMEM], atomic_load(&t.kept));
        assert_int_equal(info.stat[MEM_STAT_SHMEM], atomic_load(&t.kept));
        assert_int_equal(info.nr_attached, 1);
        assert_int_equal(group_remove(core, "/x"), 0);
        group_unref(t.g);
}

/* ---- batched statistics from several threads ------------------------------ */

#define NUPDATERS 4
#define STAT_ITERS 400000 /* per thread, per run */
#define STAT_USEC 500000

typedef struct StatTest {
        MemCore *core;
        MemGroup *g;
        bool uncharge;
        uint64_t deadline;
        _Atomic unsigned running;
        int64_t bound[_MEM_STAT_MAX]; /* planned final totals of the charging run */
        unsigned long flusher_reads;
} StatTest;

typedef struct Updater {
        pthread_t thread;
        StatTest *t;
        unsigned idx;
        int64_t done[_MEM_STAT_MAX]; /* bytes kept by this thread, by item */
} Updater;

static uint64_t stat_bytes(unsigned idx, unsigned long i) {
        return PAGE * (1 + (i + idx) % 4) - (i % 7);
}

static void *updater_main(void *arg) {
        Updater *u = arg;
        StatTest *t = u->t;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < STAT_ITERS; i++) {
                unsigned it = (u->idx + (unsigned) i) % _MEM_STAT_MAX;
                uint64_t bytes = stat_bytes(u->idx, i);
                int k;

                if (i % 256 == 0) {
                        if (now_usec() >= t->deadline)
                                break;
                        /* Two CPUs, six threads: let the flusher in. */
                        if (i % 4096 == 0)
                                sched_yield();
                }
                if (!t->uncharge) {
                        k = group_charge_kept(t->core, t->g, bytes, it, 0, NULL);
                        CHECK(k == 0, "group_charge_kept: %d", k);
                        if (k == 0)
                                u->done[it] += (int64_t) bytes;
                } else {
                        if (u->done[it] == 0)
                                continue;
                        bytes = MIN(bytes, (uint64_t) u->done[it]);
                        k = group_uncharge_kept(t->core, t->g, bytes, it);
                        CHECK(k == 0, "group_uncharge_kept: %d", k);
                        if (k == 0)
                                u->done[it] -= (int64_t) bytes;
                }
        }
        /* The uncharging run releases whatever is left. */
        for (int it = 0; r == 0 && t->uncharge && it < _MEM_STAT_MAX; it++) {
                if (u->done[it] == 0)
                        continue;
                CHECK(group_uncharge_kept(t->core, t->g, (uint64_t) u->done[it], it) == 0,
                      "group_uncharge_kept(rest)");
                u->done[it] = 0;
        }
        atomic_fetch_sub(&t->running, 1);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

/* Only non-forced flushes while the updaters run: totals move one way and
 * stay within what was (or will be) charged. */
static void *flusher_main(void *arg) {
        StatTest *t = arg;
        int64_t last[_MEM_STAT_MAX];
        int r = core_thread_register(t->core);
        MemGroupInfo info;

        CHECK(r == 0, "core_thread_register: %d", r);
        group_read(t->core, t->g, NULL, false, &info);
        memcpy(last, info.stat, sizeof(last));
        while (r == 0 && atomic_load(&t->running) > 0) {
                core_stats_flush(t->core, false);
                group_read(t->core, t->g, NULL, false, &info);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        int64_t v = info.stat[it];

                        CHECK(v >= 0 && v <= t->bound[it], "stat[%d] %lld outside [0, %lld]", it,
                              (long long) v, (long long) t->bound[it]);
                        CHECK(t->uncharge ? v <= last[it] : v >= last[it],
                              "stat[%d] went from %lld to %lld while %scharging", it,
                              (long long) last[it], (long long) v, t->uncharge ? "un" : "");
                        last[it] = v;
                }
                t->flusher_reads++;
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void run_updaters(StatTest *t, Updater *u) {
        pthread_t flusher;

        t->deadline = now_usec() + STAT_USEC;
        atomic_store(&t->running, NUPDATERS);
        assert_int_equal(pthread_create(&flusher, NULL, flusher_main, t), 0);
        for (unsigned i = 0; i < NUPDATERS; i++)
                assert_int_equal(pthread_create(&u[i].thread, NULL, updater_main, &u[i]), 0);
        for (unsigned i = 0; i < NUPDATERS; i++)
                assert_int_equal(pthread_join(u[i].thread, NULL), 0);
        assert_int_equal(pthread_join(flusher, NULL), 0);
        assert_no_failures();
}

static void assert_stats_equal(StatTest *t, MemGroup *root, const int64_t *expect) {
        MemGroupInfo info, rinfo;
        int64_t sum = 0;

        group_read(t->core, t->g, NULL, false, &info);
        group_read(t->core, root, NULL, false, &rinfo);
        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                assert_int_equal(info.stat[it], expect[it]);
                assert_int_equal(info.stat_local[it], expect[it]);
                assert_int_equal(rinfo.stat[it], expect[it]);
                assert_int_equal(rinfo.stat_local[it], 0);
                assert_int_equal(info.kept[it], expect[it]);
                sum += expect[it];
        }
        assert_int_equal(info.current, sum);
}

/*
 * Nobody forces a flush: keep updating (net zero) from this thread until a
 * non-forced flush runs, which must happen within the threshold of fast
 * path 2, and must then show every update made so far by every thread.
 */
static void assert_unforced_flush_catches_up(StatTest *t, MemGroup *root,
                                             const int64_t *expect) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        unsigned long limit = (cfg.max_threads + 2ul) * (MEM_STAT_BATCH + 1);
        unsigned long i;

        for (i = 0; i < limit; i++) {
                uint64_t before = atomic_load(&t->core->stats.flushes);

                core_stats_flush(t->core, false);
                if (atomic_load(&t->core->stats.flushes) != before)
                        break;
                assert_int_equal(group_charge_kept(t->core, t->g, PAGE, MEM_STAT_OTHER, 0, NULL),
                                 0);
                assert_int_equal(group_uncharge_kept(t->core, t->g, PAGE, MEM_STAT_OTHER), 0);
        }
        assert_true(i < limit);
        assert_stats_equal(t, root, expect);
}

static void test_stats_concurrent_updates_flush_exact(void **state) {
        MemCore *core = *state;
        StatTest t = { .core = core };
        Updater u[NUPDATERS];
        int64_t expect[_MEM_STAT_MAX] = {}, zero[_MEM_STAT_MAX] = {};
        MemGroup *root;

        t.g = make_group(core, "/s");
        root = find_group(core, "/");
        assert_non_null(t.g);
        assert_non_null(root);
        for (unsigned i = 0; i < NUPDATERS; i++) {
                u[i] = (Updater) { .t = &t, .idx = i };
                for (unsigned long k = 0; k < STAT_ITERS; k++)
                        t.bound[(i + k) % _MEM_STAT_MAX] += (int64_t) stat_bytes(i, k);
        }

        /* Charging run. */
        run_updaters(&t, u);
        for (unsigned i = 0; i < NUPDATERS; i++)
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        expect[it] += u[i].done[it];
        print_message("%lu flusher reads, %llu non-forced flushes (pressure %d, threads %u)\n",
                      t.flusher_reads,
                      (unsigned long long) atomic_load(&core->stats.flushes),
                      atomic_load(&core->stats.flush_pressure),
                      atomic_load(&core->stats.nthreads));
        assert_true(atomic_load(&core->stats.flushes) > 0);
        assert_unforced_flush_catches_up(&t, root, expect);
        core_stats_flush(core, true);
        assert_stats_equal(&t, root, expect);
        for (int it = 0; it < _MEM_STAT_MAX; it++)
                t.bound[it] = expect[it];

        /* Uncharging run: the same threads give everything back. */
        t.uncharge = true;
        t.flusher_reads = 0;
        run_updaters(&t, u);
        for (unsigned i = 0; i < NUPDATERS; i++)
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        assert_int_equal(u[i].done[it], 0);
        assert_unforced_flush_catches_up(&t, root, zero);
        core_stats_flush(core, true);
        assert_stats_equal(&t, root, zero);

        assert_int_equal(group_remove(core, "/s"), 0);
        group_unref(t.g);
        group_unref(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_random_operations_keep_invariants),
                CORE_TEST(test_move_atomic_for_consistent_readers),
                CORE_TEST(test_session_charges_race_moves),
                CORE_TEST(test_group_get_races_remove),
                CORE_TEST(test_refused_remove_keeps_group_usable),
                CORE_TEST(test_session_free_races_client_move),
                CORE_TEST(test_stats_concurrent_updates_flush_exact),
        };

        return cmocka_run_group_tests_name("concurrency", tests, NULL, NULL);
}
