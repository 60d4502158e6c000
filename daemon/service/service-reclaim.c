/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim: before a max refuses a charge, the holders of memory that can
 * be given back are asked for it (docs/reclaim.md).
 *
 * A peer declares what it can give back (service_set_reclaimable()): its
 * session's charges in memory, or in a device region. When a charge is
 * refused, service_reclaim_start() collects the reclaimable holders
 * attached below the refusing group, plans how much each group gives by
 * the kernel's rules (core/reclaim.h), splits each group's share among
 * its holders by what they hold, and sends each a request (EVENT_RECLAIM
 * through its transport). The charging peer is parked on the round: its
 * transport holds the request, serves its other work (and everyone
 * else's) meanwhile, and serves the request again when every holder has
 * answered or the deadline passed; the charge then tries again, up to
 * SERVICE_RECLAIM_TRIES times, as try_charge_memcg() retries after
 * reclaim.
 *
 * A holder answers by uncharging what it freed, then ReclaimDone; what it
 * then holds less than when asked is counted released. One that does not
 * answer by the deadline counts late and is skipped by later rounds until
 * it answers again; one that goes away answers by going (its session's
 * charges go with it).
 *
 * Pressure: the time a refused charge waits for its rounds is a stall
 * of the group it charges (its session's group, or the kept charge's
 * group) and of every ancestor (core/pressure.h): stall_begin() when a
 * charge parks, stall_end() when its round ends or it goes. A SetLimits
 * or a proactive Reclaim that waits is an admin's action, not a charge
 * held up, and does not count: the kernel counts the writer of
 * memory.max or memory.reclaim as stalled in its own cgroup, and an
 * admin here usually has no session, so no group, to stall.
 *
 * Locking: reclaim_lock guards the rounds and every peer's PeerReclaim
 * but waiting and tries (the peer's own thread). It is taken before the
 * registry's peers lock (collect_one() runs under it) and never inside a
 * core read-side section. A round belongs to its waiter: it ends when the
 * waiter serves its request again or goes. Peers a round asked, and their
 * sessions, stay valid while it refers to them: a peer that goes is first
 * taken off the registry's list (no round collects it after that), then
 * out of every round under reclaim_lock (service_peer_leaving()), and
 * only then does its session end.
 */

#include <errno.h>
#include <stdlib.h>

#include "core/pressure.h"
#include "core/reclaim.h"
#include "core/region.h"
#include "core/session.h"
#include "service-internal.h"

/* What one holder was asked, and what it held then. */
typedef struct ReclaimAsk {
        Peer *p; /* NULL once it answered or went */
        int64_t bytes;
        int64_t held;
} ReclaimAsk;

struct ReclaimRound {
        uint64_t id;
        int key;
        Peer *waiter;      /* NULL: nobody waits (a group over high): freed once done or late */
        MemGroup *target;  /* a round nobody waits for: its group, with a reference */
        ReclaimAsk *asks;
        size_t n;
        unsigned outstanding;
        uint64_t deadline_usec;
        uint64_t released; /* what the holders gave back, as measured */
        ReclaimRound *next; /* svc->rounds */
};

#define RECLAIM_TIMEOUT_USEC_DEFAULT (1000 * 1000)

/* What @p's session holds of what it declared reclaimable in @key now. Its session is alive. */
static int64_t held_in(Peer *p, int key) {
        uint32_t items = (atomic_load(&p->reclaim.parts) & 1) ? UINT32_MAX : atomic_load(&p->reclaim.items);
        uint64_t sum = 0;

        if (!p->session)
                return 0;
        if (key != MEM_REGION_MEMORY)
                return (int64_t) session_held_region(p->session, key);
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (items & (UINT32_C(1) << i))
                        sum += session_held(p->session, i);
        return (int64_t) sum;
}

/* Is @p reclaimable in @key (memory: any item)? */
static bool reclaimable_in(Peer *p, int key) {
        if (key == MEM_REGION_MEMORY && atomic_load(&p->reclaim.items))
                return true;
        return atomic_load(&p->reclaim.parts) & (UINT32_C(1) << region_slot(key));
}

int service_set_reclaimable(Service *svc, Peer *p, const char *region, const char *stat, bool on,
                            Refusal *rf) {
        _Atomic uint32_t *set;
        uint32_t bit;
        int key, r;

        r = service_peer_region_key(svc, p, region, &key, rf);
        if (r < 0)
                return r;
        if (!p->subscriber.delivery)
                return refusal_set(rf, -EOPNOTSUPP, "this transport cannot carry reclaim requests");
        set = &p->reclaim.parts;
        bit = UINT32_C(1) << region_slot(key);
        if (stat && *stat) {
                MemStatItem item = mem_stat_item_from_string(stat);

                if (key != MEM_REGION_MEMORY)
                        return refusal_set(rf, -EINVAL, "stat items are memory's; region %s has none", region);
                if (item < 0)
                        return refusal_set(rf, -EINVAL, "unknown stat item '%s'", stat);
                set = &p->reclaim.items;
                bit = UINT32_C(1) << item;
        }
        pthread_mutex_lock(&svc->reclaim_lock);
        if (on)
                atomic_fetch_or(set, bit);
        else
                atomic_fetch_and(set, ~bit);
        pthread_mutex_unlock(&svc->reclaim_lock);
        return 0;
}

void service_reclaim_set_timeout(Service *svc, uint64_t usec) {
        atomic_store_explicit(&svc->reclaim_timeout_usec, usec ? usec : RECLAIM_TIMEOUT_USEC_DEFAULT,
                              memory_order_relaxed);
}

typedef struct Collect {
        Peer *waiter;
        MemGroup *target;
        int key;
        Peer **peers;
        ReclaimHolder *holders;
        size_t n, cap;
        int r;
} Collect;

/* registry_for_each_session(): one more holder, with a reference to its group. */
static int collect_one(Peer *p, void *userdata) {
        Collect *c = userdata;
        MemGroup *g;
        int64_t held;

        if (p == c->waiter || !reclaimable_in(p, c->key) || p->reclaim.skip)
                return 0;
        held = held_in(p, c->key);
        if (held <= 0)
                return 0;
        if (c->n == c->cap) {
                size_t cap = c->cap ? 2 * c->cap : 16;
                ReclaimHolder *h = realloc(c->holders, cap * sizeof(*h));
                Peer **v = h ? realloc(c->peers, cap * sizeof(*v)) : NULL;

                if (h)
                        c->holders = h;
                if (!v)
                        return c->r = -ENOMEM;
                c->peers = v;
                c->cap = cap;
        }
        core_read_lock();
        g = atomic_load(&p->session->group);
        if (g && group_is_descendant(g, c->target))
                g = group_ref(g);
        else
                g = NULL;
        core_read_unlock();
        if (!g)
                return 0;
        c->peers[c->n] = p;
        c->holders[c->n++] = (ReclaimHolder) { .group = g, .bytes = held };
        return 0;
}

/* Ask @p for @bytes in @rr. Reclaim lock held. */
static void ask(Service *svc, ReclaimRound *rr, Peer *p, int64_t bytes, int64_t held) {
        char name[MEM_REGION_NAME_MAX + 1];
        EventItem ev = {
                .kind = EVENT_RECLAIM,
                .count = (uint64_t) bytes,
                .id = rr->id,
        };

        if (rr->key != MEM_REGION_MEMORY && core_region_name(svc->core, rr->key, name) == 0)
                ev.region = name;
        /* Lost (out of memory): it is not waited for. */
        if (events_send(&p->subscriber, &ev) < 0)
                return;
        rr->asks[rr->n++] = (ReclaimAsk) { .p = p, .bytes = bytes, .held = held };
        rr->outstanding++;
        p->reclaim.asked += (uint64_t) bytes;
}

/* Ask every holder its share of its group's take. Reclaim lock held. */
static void ask_all(Service *svc, ReclaimRound *rr, Collect *c, const ReclaimNode *v) {
        for (size_t i = 0; i < c->n; i++) {
                const ReclaimNode *node;
                int64_t share;

                if (c->holders[i].node < 0)
                        continue;
                node = &v[c->holders[i].node];
                if (node->take <= 0 || node->reclaimable <= 0)
                        continue;
                /* The group's take, in proportion to what each holds, rounded up. */
                share = (int64_t) (((__int128) node->take * c->holders[i].bytes + node->reclaimable - 1) /
                                   node->reclaimable);
                share = MIN(share, c->holders[i].bytes);
                if (share > 0)
                        ask(svc, rr, c->peers[i], share, c->holders[i].bytes);
        }
}

static uint64_t round_free(Service *svc, ReclaimRound *rr);

/* Free the rounds nobody waits for that are answered or past their deadline. Reclaim lock held. */
static void sweep(Service *svc) {
        uint64_t now = service_now_usec();

        for (ReclaimRound *rr = svc->rounds, *next; rr; rr = next) {
                next = rr->next;
                if (!rr->waiter && (rr->outstanding == 0 || now >= rr->deadline_usec))
                        (void) round_free(svc, rr);
        }
}

/* A round nobody waits for of @target in @key is in progress. Reclaim lock held. */
static bool high_round_running(Service *svc, MemGroup *target, int key) {
        for (ReclaimRound *rr = svc->rounds; rr; rr = rr->next)
                if (!rr->waiter && rr->target == target && rr->key == key)
                        return true;
        return false;
}

/*
 * Ask the holders below @target (not @p) for @need bytes in @key; with
 * @park, @p waits for the round (-EINPROGRESS), else nobody does (0).
 */
static int round_start(Service *svc, Peer *p, MemGroup *target, int key, int64_t need, bool park) {
        Collect c = { .waiter = p, .target = target, .key = key };
        ReclaimNode *v = NULL;
        ReclaimOutcome out = {};
        ReclaimRound *rr = NULL;
        bool recursive;
        size_t n = 0;
        int r = 0;

        pthread_mutex_lock(&svc->reclaim_lock);
        sweep(svc);
        if (!park && high_round_running(svc, target, key))
                goto out; /* one at a time per group: its holders are asked already */
        (void) registry_for_each_session(svc->registry, collect_one, &c);
        if (c.r < 0 || c.n == 0) {
                r = c.r;
                goto out;
        }
        r = reclaim_snapshot(svc->core, target, key, c.holders, c.n, &v, &n, &recursive);
        if (r >= 0)
                r = reclaim_plan(v, n, need, recursive, &out);
        if (r < 0 || out.planned == 0) {
                r = r == -ENOENT ? 0 : r;
                goto out;
        }
        rr = calloc(1, sizeof(*rr));
        if (rr)
                rr->asks = calloc(c.n, sizeof(*rr->asks));
        if (!rr || !rr->asks) {
                r = -ENOMEM;
                goto out;
        }
        rr->id = ++svc->reclaim_next_id;
        rr->key = key;
        rr->waiter = park ? p : NULL;
        rr->deadline_usec = service_now_usec() +
                            atomic_load_explicit(&svc->reclaim_timeout_usec, memory_order_relaxed);
        ask_all(svc, rr, &c, v);
        if (rr->n == 0)
                goto out; /* every request was lost */
        /* Low events where the plan reclaims below low (memcg_low_reclaim). */
        for (size_t i = 0; i < c.n; i++)
                if (c.holders[i].node >= 0 && v[c.holders[i].node].low_event) {
                        if (key == MEM_REGION_MEMORY)
                                group_event_raise(c.holders[i].group, MEM_EVENT_LOW);
                        else
                                region_group_event(svc->core, c.holders[i].group, key, MEM_EVENT_LOW);
                        v[c.holders[i].node].low_event = false; /* once per group */
                }
        rr->next = svc->rounds;
        svc->rounds = rr;
        if (park) {
                p->reclaim.waiting = TAKE_PTR(rr);
                r = -EINPROGRESS;
        } else {
                rr->target = group_ref(target);
                rr = NULL;
        }
out:
        pthread_mutex_unlock(&svc->reclaim_lock);
        if (rr)
                free(rr->asks);
        free(rr);
        free(v);
        for (size_t i = 0; i < c.n; i++)
                group_unref(c.holders[i].group);
        free(c.holders);
        free(c.peers);
        return r;
}

/*
 * @p's charge of @g waits from now: a stall of @g and its ancestors,
 * psi_memstall_enter(). Without memory for a record it waits uncounted.
 * @p's thread.
 */
static void stall_begin(Service *svc, Peer *p, MemGroup *g) {
        if (pressure_stall_begin(svc->core, g, service_now_usec()) == 0)
                p->reclaim.stalled = group_ref(g);
}

/* psi_memstall_leave(): @p's charge stops waiting, if it stalled. @p's thread. */
static void stall_end(Service *svc, Peer *p) {
        if (!p->reclaim.stalled)
                return;
        pressure_stall_end(svc->core, p->reclaim.stalled, service_now_usec());
        p->reclaim.stalled = group_unref(p->reclaim.stalled);
}

int service_reclaim_start(Service *svc, Peer *p, MemGroup *charged, MemGroup *refused, int key,
                          uint64_t bytes) {
        int r;

        r = round_start(svc, p, refused, key, reclaim_need(refused, key, bytes), true);
        if (r == -EINPROGRESS)
                stall_begin(svc, p, charged);
        return r;
}

void service_reclaim_high(Service *svc, Peer *p, MemGroup *g, int key) {
        MemGroup *over[8];
        int64_t by[8];
        size_t n;

        /* mem_cgroup_handle_over_high(): each group of the path above its
         * high is asked for its overage; the charge does not wait. */
        n = reclaim_over_high(g, key, over, by, ELEMENTSOF(over));
        for (size_t i = 0; i < n; i++) {
                (void) round_start(svc, p, over[i], key, by[i], false);
                group_unref(over[i]);
        }
}

/*
 * What the holder of @a gave back since it was asked, at most what it was
 * asked: two rounds may ask one holder at once (a refusal's and a group's
 * over high), and each counts only its own share of the drop. Reclaim
 * lock held.
 */
static uint64_t ask_released(const ReclaimRound *rr, const ReclaimAsk *a) {
        int64_t now = held_in(a->p, rr->key);

        return now < a->held ? (uint64_t) MIN(a->held - now, a->bytes) : 0;
}

/* Unlink and free @rr; late holders count so. Return: what the holders
 * gave back in all. Reclaim lock held. */
static uint64_t round_free(Service *svc, ReclaimRound *rr) {
        uint64_t released = rr->released;

        for (ReclaimRound **i = &svc->rounds; *i; i = &(*i)->next)
                if (*i == rr) {
                        *i = rr->next;
                        break;
                }
        for (size_t i = 0; i < rr->n; i++)
                if (rr->asks[i].p) {
                        /* It may have given without answering in time. */
                        released += ask_released(rr, &rr->asks[i]);
                        rr->asks[i].p->reclaim.late++;
                        rr->asks[i].p->reclaim.skip = true;
                }
        if (rr->target)
                group_unref(rr->target);
        free(rr->asks);
        free(rr);
        return released;
}

bool service_reclaim_end(Service *svc, Peer *p, uint64_t *ret_released) {
        ReclaimRound *rr = p->reclaim.waiting;
        uint64_t released;

        if (!rr)
                return false;
        pthread_mutex_lock(&svc->reclaim_lock);
        released = round_free(svc, rr);
        pthread_mutex_unlock(&svc->reclaim_lock);
        p->reclaim.waiting = NULL;
        stall_end(svc, p);
        if (ret_released)
                *ret_released = released;
        return true;
}

uint64_t service_reclaim_wait_usec(Service *svc, Peer *p) {
        ReclaimRound *rr = p->reclaim.waiting;
        uint64_t now, left = 0;

        if (!rr)
                return UINT64_MAX;
        now = service_now_usec();
        pthread_mutex_lock(&svc->reclaim_lock);
        if (rr->outstanding > 0 && now < rr->deadline_usec)
                left = rr->deadline_usec - now;
        pthread_mutex_unlock(&svc->reclaim_lock);
        return left;
}

/* @rr's request to @p is answered. Reclaim lock held. */
static void answered(ReclaimRound *rr, ReclaimAsk *a) {
        a->p = NULL;
        if (--rr->outstanding == 0 && rr->waiter && rr->waiter->reclaim.wake)
                rr->waiter->reclaim.wake(rr->waiter->reclaim.wake_userdata);
}

int service_reclaim_done(Service *svc, Peer *p, uint64_t id, bool cannot) {
        pthread_mutex_lock(&svc->reclaim_lock);
        p->reclaim.skip = false;
        if (cannot)
                p->reclaim.refused++;
        for (ReclaimRound *rr = svc->rounds; rr; rr = rr->next) {
                if (rr->id != id)
                        continue;
                for (size_t i = 0; i < rr->n; i++)
                        if (rr->asks[i].p == p) {
                                uint64_t given = ask_released(rr, &rr->asks[i]);

                                p->reclaim.released += given;
                                rr->released += given;
                                answered(rr, &rr->asks[i]);
                        }
                break;
        }
        sweep(svc);
        pthread_mutex_unlock(&svc->reclaim_lock);
        return 0;
}

void service_peer_leaving(void *userdata, Peer *p) {
        Service *svc = userdata;

        pthread_mutex_lock(&svc->reclaim_lock);
        if (p->reclaim.waiting) {
                (void) round_free(svc, p->reclaim.waiting);
                p->reclaim.waiting = NULL;
        }
        for (ReclaimRound *rr = svc->rounds; rr; rr = rr->next)
                for (size_t i = 0; i < rr->n; i++)
                        if (rr->asks[i].p == p) {
                                /* Its charges went with its session. */
                                p->reclaim.released += (uint64_t) rr->asks[i].held;
                                rr->released += (uint64_t) rr->asks[i].held;
                                answered(rr, &rr->asks[i]);
                        }
        sweep(svc);
        pthread_mutex_unlock(&svc->reclaim_lock);
        /* On its thread (the registry's hook), which owns stalled. */
        stall_end(svc, p);
}

int service_reclaim(Service *svc, Peer *p, const ServiceReclaim *rq, uint64_t *ret_released, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int key, r;

        /* Served again: the round is over; what came back is the answer. */
        if (service_reclaim_end(svc, p, ret_released))
                return 0;
        *ret_released = 0;
        r = service_peer_region_key(svc, p, rq->region, &key, rf);
        if (r < 0)
                return r;
        r = service_lookup_for(svc, p, rq->path, authz_may_modify, &g, rf);
        if (r < 0)
                return r;
        if (rq->bytes > MEM_CHARGE_MAX)
                return refusal_set(rf, -EOVERFLOW, "bytes: at most %llu", (unsigned long long) MEM_CHARGE_MAX);
        if (!rq->can_wait || rq->bytes == 0)
                return 0;
        r = round_start(svc, p, g, key, (int64_t) rq->bytes, true);
        if (r == -ENOMEM)
                return refusal_set(rf, r, "out of memory");
        return r; /* -EINPROGRESS: asked; 0: nobody to ask */
}

int service_limits_reclaim(Service *svc, Peer *p, MemGroup *g, int key, uint64_t max, unsigned flags) {
        int64_t need;
        int r;

        if (!(flags & SERVICE_LIMITS_WAIT) || (flags & SERVICE_LIMITS_NO_RECLAIM))
                return 0;
        need = reclaim_above(g, key, max);
        if (need <= 0)
                return 0;
        r = round_start(svc, p, g, key, need, true);
        if (r == -EINPROGRESS)
                p->reclaim.limits_taken = flags & SERVICE_LIMITS_FORCE;
        return r == -EINPROGRESS ? r : 0;
}

bool service_limits_reclaim_resume(Service *svc, Peer *p, unsigned *flags) {
        bool taken = p->reclaim.limits_taken;

        if (_likely_(!p->reclaim.waiting))
                return true;
        (void) service_reclaim_end(svc, p, NULL);
        p->reclaim.limits_taken = false;
        *flags &= ~SERVICE_LIMITS_WAIT;
        return !taken;
}
