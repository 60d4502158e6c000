/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moves: a session, or every session of a client, to another group with
 * everything it holds. Atomic for readers (core_read_usage_consistent():
 * move_seq is odd while the two sides disagree) and, for a client, all
 * or nothing: either every session of the process is in @dst afterwards
 * or none moved. A process is a pid and its instance (session.c): the
 * sessions a process that had the pid before left open are not its.
 *
 * The protocol is the kernel's mem_cgroup_start_move() around
 * mem_cgroup_move_account(): the mover raises the global moving count
 * (fast path 3: the stat path skips the per-group lock while it is 0) and
 * each source group's moving_account, waits one grace period so that
 * every stat update that did not see them is finished, and then takes
 * the sources' move_locks, which the updates that did see them take too.
 * From then on nothing a session holds changes under the mover. Only the
 * levels below each common ancestor are charged and uncharged: the
 * ancestors count the bytes already, and charging them twice for a
 * moment could refuse a move at a limit it does not really approach.
 *
 * A client's sessions are charged to @dst first, every one, and only
 * then uncharged from their sources: a refusal of any undoes the charges
 * of the ones before it and moves nothing. Movers are serialised by
 * move_mutex, so the several move_locks one mover holds (one per source
 * group, taken in address order) never meet another mover's; every other
 * holder of a move_lock holds one and takes no other.
 */

#include <stdlib.h>

#include "charge.h"
#include "group-internal.h"
#include "region.h"
#include "session-internal.h"

/* One session's part of a move. */
typedef struct MoveItem {
        MemSession *s;
        MemGroup *src; /* NULL: not attached (it holds nothing) */
        MemGroup *top; /* the common ancestor of src and dst */
        uint64_t total;
        bool charged;  /* dst is charged for it */
        uint32_t regions_charged; /* the device region slots dst is charged for it in */
} MoveItem;

typedef struct Move {
        MemCore *core;
        MemGroup *dst;
        MoveItem *v;
        size_t n;
        MemGroup **srcs; /* the distinct sources, in address order */
        size_t nsrcs;
} Move;

static int cmp_ptr(const void *a, const void *b) {
        uintptr_t x = (uintptr_t) *(MemGroup *const *) a, y = (uintptr_t) *(MemGroup *const *) b;

        return x < y ? -1 : x > y;
}

/* The distinct source groups of @m, sorted: the order their locks are taken in. */
static void move_sources(Move *m) {
        size_t k = 0;

        for (size_t i = 0; i < m->n; i++)
                if (m->v[i].src && m->v[i].src != m->dst)
                        m->srcs[m->nsrcs++] = m->v[i].src;
        qsort(m->srcs, m->nsrcs, sizeof(*m->srcs), cmp_ptr);
        for (size_t i = 0; i < m->nsrcs; i++)
                if (k == 0 || m->srcs[i] != m->srcs[k - 1])
                        m->srcs[k++] = m->srcs[i];
        m->nsrcs = k;
}

/* mem_cgroup_start_move(): raise the flags, wait out the updates that did
 * not see them, then hold the sources still. */
static void move_begin(Move *m) {
        atomic_fetch_add(&m->core->moving, 1);
        for (size_t i = 0; i < m->nsrcs; i++)
                atomic_fetch_add(&m->srcs[i]->moving_account, 1);
        urcu_memb_synchronize_rcu();
        rcu_tsan_grace_period();
        for (size_t i = 0; i < m->nsrcs; i++)
                pthread_mutex_lock(&m->srcs[i]->move_lock);
        atomic_fetch_add(&m->core->move_seq, 1);
}

static void move_end(Move *m) {
        atomic_fetch_add(&m->core->move_seq, 1);
        for (size_t i = m->nsrcs; i-- > 0;)
                pthread_mutex_unlock(&m->srcs[i]->move_lock);
        for (size_t i = 0; i < m->nsrcs; i++)
                atomic_fetch_sub(&m->srcs[i]->moving_account, 1);
        atomic_fetch_sub(&m->core->moving, 1);
}

static int64_t region_held_of(const MoveItem *it, unsigned slot) {
        _Atomic int64_t *held = atomic_load_explicit(&it->s->region_held, memory_order_acquire);

        return held ? load64(&held[slot]) : 0;
}

/* Undo what move_charge() charged to @dst for the first @n items. */
static void move_uncharge_dst(Move *m, size_t n) {
        for (size_t j = 0; j < n; j++) {
                MoveItem *it = &m->v[j];

                if (it->charged)
                        counter_uncharge(&m->dst->counter, &it->top->counter, it->total);
                for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++)
                        if (it->regions_charged & (1u << slot))
                                region_move_uncharge(m->dst, it->top, slot,
                                                     (uint64_t) region_held_of(it, slot));
                it->charged = false;
                it->regions_charged = 0;
        }
}

/* Charge @dst for @it's device region charges, up to the common ancestor.
 * In core_read_lock(). */
static int move_charge_regions(Move *m, MoveItem *it, MemChargeResult *res) {
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                int64_t h = region_held_of(it, slot);
                int r;

                if (h <= 0)
                        continue;
                r = region_move_charge(m->dst, it->top, slot, (uint64_t) h, res);
                if (r < 0)
                        return r;
                it->regions_charged |= 1u << slot;
        }
        return 0;
}

/* Charge @dst for every item, up to each common ancestor, memory and
 * every device region; on a refusal undo the ones charged and say who
 * refused. Sources locked. */
static int move_charge(Move *m, MemChargeResult *res) {
        int r = 0;

        core_read_lock();
        for (size_t i = 0; i < m->n && r == 0; i++) {
                MoveItem *it = &m->v[i];
                MemCounter *fail = NULL;

                if (!it->src || it->src == m->dst)
                        continue;
                it->top = group_common_ancestor(it->src, m->dst);
                for (MemStatItem k = 0; k < _MEM_STAT_MAX; k++)
                        it->total += (uint64_t) load64(&it->s->held[k]);
                if (it->total > 0) {
                        /* A move raises no high events (nor does the kernel's). */
                        r = counter_try_charge(&m->dst->counter, &it->top->counter, it->total, &fail);
                        if (r == -EDQUOT) {
                                MemGroup *refused = group_from_counter(fail);

                                group_event_raise(refused, MEM_EVENT_MAX);
                                res->refused = group_ref(refused);
                        }
                        it->charged = r >= 0;
                        r = MIN(r, 0);
                }
                if (r == 0)
                        r = move_charge_regions(m, it, res);
                if (r < 0)
                        move_uncharge_dst(m, i + 1);
        }
        core_read_unlock();
        return r;
}

/* Everything is charged to @dst: take it off the sources, move the
 * statistics, publish the new group. Sources locked. */
static void move_commit(Move *m) {
        unsigned slot = core_thread_slot(m->core);

        for (size_t i = 0; i < m->n; i++) {
                MoveItem *it = &m->v[i];

                if (it->src == m->dst)
                        continue;
                if (it->src) {
                        if (it->charged)
                                counter_uncharge(&it->src->counter, &it->top->counter, it->total);
                        for (unsigned rs = 1; rs < MEM_REGION_MAX; rs++)
                                if (it->regions_charged & (1u << rs))
                                        region_move_uncharge(it->src, it->top, rs,
                                                             (uint64_t) region_held_of(it, rs));
                        for (MemStatItem k = 0; k < _MEM_STAT_MAX; k++) {
                                int64_t h = load64(&it->s->held[k]);

                                stats_mod(&m->core->stats, slot, it->src->id, k, -h);
                                stats_mod(&m->core->stats, slot, m->dst->id, k, h);
                        }
                }
                atomic_store_explicit(&it->s->group, m->dst, memory_order_release);
        }
}

/*
 * Move the @m->n sessions of @m->v to @m->dst, all or none. Caller holds
 * move_mutex (and clients_lock for a client's sessions). Return: 0;
 * -EDQUOT (res->refused set); -ENOENT (@dst is being removed); -ENOMEM.
 */
static int move_all(Move *m, MemChargeResult *res) {
        size_t attached = 0;
        int r = 0;

        /* Count the sessions in @dst first: a removal then waits for us. */
        for (; attached < m->n && r == 0; attached++)
                if (m->v[attached].src != m->dst)
                        r = group_attach(m->dst);
        if (r < 0)
                attached--;
        if (r == 0) {
                move_sources(m);
                move_begin(m);
                r = move_charge(m, res);
                if (r == 0)
                        core_read_lock(), move_commit(m), core_read_unlock();
                move_end(m);
        }
        /* Each session holds a reference to its group: the old one goes,
         * or, when nothing moved, the new one taken above. */
        for (size_t i = 0; i < attached; i++) {
                MemGroup *g = r == 0 ? m->v[i].src : m->dst;

                if (m->v[i].src != m->dst && g)
                        group_detach(g);
        }
        if (r == 0 && m->core->move_hook)
                for (size_t i = 0; i < m->n; i++)
                        if (m->v[i].src != m->dst)
                                m->core->move_hook(m->v[i].s, m->dst, m->core->move_hook_userdata);
        return r;
}

int session_move(MemSession *s, MemGroup *dst, MemChargeResult *ret) {
        MemChargeResult res = {};
        MemGroup *srcs[1];
        MoveItem item = { .s = s };
        Move m = { .core = s->core, .dst = dst, .v = &item, .n = 1, .srcs = srcs };
        int r = 0;

        pthread_mutex_lock(&s->core->move_mutex);
        item.src = atomic_load(&s->group);
        if (!item.src)
                r = -ENOTCONN; /* its own move: attach it instead */
        else if (item.src != dst)
                r = move_all(&m, &res);
        pthread_mutex_unlock(&s->core->move_mutex);
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);
        return r;
}

int client_move(MemCore *core, pid_t pid, MemGroup *dst, MemChargeResult *ret) {
        return client_move_process(core, pid, 0, MEM_UID_ANY, dst, ret);
}

/* Does @s belong to the move? The sessions of another uid of the same
 * process (one that changed uid between two connects) stay. */
static bool move_takes(const MemSession *s, uid_t uid) {
        return uid == MEM_UID_ANY || s->uid == uid;
}

int client_move_process(MemCore *core, pid_t pid, uint64_t instance, uid_t uid, MemGroup *dst,
                        MemChargeResult *ret) {
        MemChargeResult res = {};
        Move m = { .core = core, .dst = dst };
        MemClient *cs[2];
        size_t ncs = 0;
        MemSession *s;
        int r = 0;

        pthread_mutex_lock(&core->clients_lock);
        /* The process's own client and, for in-process peers that named
         * no instance, the pid's. Distinct keys: never the same client. */
        core_read_lock();
        cs[ncs] = client_lookup(core, pid, instance);
        if (cs[ncs])
                ncs++;
        if (instance != 0) {
                cs[ncs] = client_lookup(core, pid, 0);
                if (cs[ncs])
                        ncs++;
        }
        core_read_unlock();
        /* clients_lock keeps the clients and their sessions alive. */
        for (size_t i = 0; i < ncs; i++)
                cds_list_for_each_entry(s, &cs[i]->sessions, client_link)
                        if (move_takes(s, uid))
                                m.n++;
        if (m.n == 0) {
                r = -ESRCH;
                goto out;
        }
        m.v = calloc(m.n, sizeof(*m.v));
        m.srcs = calloc(m.n, sizeof(*m.srcs));
        if (!m.v || !m.srcs) {
                r = -ENOMEM;
                goto out;
        }
        m.n = 0;
        pthread_mutex_lock(&core->move_mutex);
        /* A session not attached yet holds nothing: it is attached to
         * @dst with the others, as writing a pid to cgroup.procs moves
         * every thread of the process. */
        for (size_t i = 0; i < ncs; i++)
                cds_list_for_each_entry(s, &cs[i]->sessions, client_link)
                        if (move_takes(s, uid))
                                m.v[m.n++] = (MoveItem) { .s = s, .src = atomic_load(&s->group) };
        r = move_all(&m, &res);
        pthread_mutex_unlock(&core->move_mutex);
out:
        pthread_mutex_unlock(&core->clients_lock);
        free(m.v);
        free(m.srcs);
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);
        return r < 0 ? r : (int) m.n;
}
