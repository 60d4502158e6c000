/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The random operations of core-concurrency-random (random-ops.h).
 *
 * Each operation picks its target and its size from the worker's own
 * random numbers, calls the core, checks the answer against what the
 * worker's records allow (CHECK: these run on worker threads), and updates
 * the records only for what succeeded. A worker's records are its own: it
 * never reads another's, except kept_total, the atomic sum per group that
 * lets a removal know whether anyone keeps charges there.
 */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "random-ops.h"
#include "session.h"
#include "stats.h"

const char *const pool[] = { "/", "/a", "/a/b", "/a/c", "/d", "/d/e", "/d/e/f", "/g" };
const int pool_parent[] = { -1, 0, 1, 1, 0, 4, 5, 0 };
_Static_assert(ELEMENTSOF(pool) == NPOOL && ELEMENTSOF(pool_parent) == NPOOL, "pool size");

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

void update_ban(Worker *w) {
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

void phase1_op(Worker *w) {
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
void phase2_op(Worker *w) {
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
