/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions, clients and moves
 *
 * A session is one connection. It is attached to one group, and what it
 * charges there belongs to it: the sums per stat item in 'held' are
 * uncharged when the session ends, however it ends. Its owner (one worker
 * thread) makes its charges; any thread may move it (client_move()).
 *
 * A client is every session of one process instance: a pid and the stamp
 * the caller gave for which process had it (the service layer's
 * base/procid.h), so that the sessions of a process that has exited
 * are never taken for those of the next process given its pid. The table
 * is hashed by pid alone, so all the instances of one pid sit in one
 * bucket chain and a look-up compares both. Its RSS counters (file, anon,
 * swap, shmem: the kernel's MM_* counters) are fed by the sessions' split
 * counters (fast path 4) and are only approximately current; an exact
 * read folds the sessions' residues in.
 *
 * Lock order: clients_lock, then move_mutex, then a group's move_lock.
 * No RCU read-side section ever takes clients_lock or move_mutex, because
 * moves wait for grace periods while holding them.
 */

#include <assert.h>
#include <stdlib.h>

#include "group-internal.h"
#include "region.h"
#include "stock.h"
#include "session-internal.h"

static const char *const mem_rss_table[_MEM_RSS_MAX] = {
        [MEM_RSS_FILE] = "file",
        [MEM_RSS_ANON] = "anon",
        [MEM_RSS_SWAP] = "swap",
        [MEM_RSS_SHMEM] = "shmem",
};

DEFINE_STRING_TABLE_TO_STRING(mem_rss, MemRss, _MEM_RSS_MAX)

MemRss mem_rss_from_stat(MemStatItem item) {
        switch (item) {
        case MEM_STAT_ANON:
                return MEM_RSS_ANON;
        case MEM_STAT_FILE:
                return MEM_RSS_FILE;
        case MEM_STAT_SHMEM:
                return MEM_RSS_SHMEM;
        case MEM_STAT_SWAP:
                return MEM_RSS_SWAP;
        default:
                return _MEM_RSS_INVALID;
        }
}


/*
 * Fast path 4: add_mm_counter_fast() after "mm: Move RSS stat event count
 * synchronisation out of the fast path" (Mel Gorman, 2014; docs/kernel.md).
 *
 * Each session keeps a private delta per member and folds one member into
 * the client's shared counter only when that member's delta passes
 * +-rss_threshold. A session that charges and releases the same amount over
 * and over never touches the shared line at all; drift stays below
 * threshold x sessions per member.
 *
 * Before (mainline SPLIT_RSS_COUNTING up to 6.1, -DMEMACCT_BEFORE_PATCH):
 * every update counts an event, and every 64 events all non-zero members
 * are folded, whether or not they moved far.
 */
static void rss_add(MemSession *s, MemRss m, int64_t bytes) {
        int64_t v = load64(&s->rss_delta[m]) + bytes;

#ifdef MEMACCT_BEFORE_PATCH
        store64(&s->rss_delta[m], v);
        if (s->rss_events++ > MEM_RSS_EVENTS_THRESH) {
                for (int i = 0; i < _MEM_RSS_MAX; i++) {
                        int64_t d = load64(&s->rss_delta[i]);

                        if (d != 0) {
                                atomic_fetch_add(&s->client->rss[i], d);
                                store64(&s->rss_delta[i], 0);
                        }
                }
                s->rss_events = 0;
        }
#else
        int64_t threshold = load64(&s->core->rss_threshold);

        if (v > threshold || v < -threshold) {
                atomic_fetch_add(&s->client->rss[m], v);
                v = 0;
        }
        store64(&s->rss_delta[m], v);
#endif
}

static unsigned long pid_hash(pid_t pid) {
        return (unsigned long) pid * 0x9E3779B97F4A7C15ULL;
}

typedef struct ClientKey {
        pid_t pid;
        uint64_t instance;
} ClientKey;

static int client_match(struct cds_lfht_node *node, const void *key) {
        const MemClient *c = caa_container_of(node, MemClient, node);
        const ClientKey *k = key;

        rcu_tsan_consume(c);
        return c->pid == k->pid && c->instance == k->instance;
}

MemClient *client_lookup(MemCore *core, pid_t pid, uint64_t instance) {
        ClientKey key = { .pid = pid, .instance = instance };
        struct cds_lfht_iter iter;
        struct cds_lfht_node *node;

        cds_lfht_lookup(core->clients, pid_hash(pid), client_match, &key, &iter);
        node = cds_lfht_iter_get_node(&iter);
        if (!node)
                return NULL;
        rcu_tsan_consume(caa_container_of(node, MemClient, node));
        return caa_container_of(node, MemClient, node);
}

static void client_free_rcu(struct rcu_head *head) {
        rcu_tsan_grace_period();
        rcu_tsan_consume(caa_container_of(head, MemClient, rcu));
        free(caa_container_of(head, MemClient, rcu));
}

int session_new(MemCore *core, pid_t pid, uid_t uid, gid_t gid, MemSession **ret) {
        return session_new_process(core, pid, 0, uid, gid, ret);
}

int session_new_process(MemCore *core, pid_t pid, uint64_t instance, uid_t uid, gid_t gid,
                        MemSession **ret) {
        MemSession *s;
        MemClient *c;

        s = cacheline_alloc(sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (MemSession) { .core = core, .pid = pid, .uid = uid, .gid = gid };
        CDS_INIT_LIST_HEAD(&s->stock_link);

        pthread_mutex_lock(&core->clients_lock);
        core_read_lock();
        c = client_lookup(core, pid, instance);
        if (!c) {
                c = cacheline_alloc(sizeof(*c));
                if (!c) {
                        core_read_unlock();
                        pthread_mutex_unlock(&core->clients_lock);
                        free(s);
                        return -ENOMEM;
                }
                *c = (MemClient) { .pid = pid, .instance = instance };
                CDS_INIT_LIST_HEAD(&c->sessions);
                cds_lfht_node_init(&c->node);
                rcu_tsan_publish(c);
                cds_lfht_add(core->clients, pid_hash(pid), &c->node);
        }
        c->refs++;
        cds_list_add_tail(&s->client_link, &c->sessions);
        s->client = c;
        core_read_unlock();
        pthread_mutex_unlock(&core->clients_lock);
        *ret = s;
        return 0;
}

MemSession *session_free(MemSession *s) {
        MemCore *core;
        MemClient *c;
        MemGroup *g;
        bool locked;

        if (!s)
                return NULL;
        core = s->core;
        c = s->client;

        /* No drain may touch the session (or its page) from here on. */
        if (s->stock) {
                pthread_mutex_lock(&core->stock_lock);
                cds_list_del(&s->stock_link);
                pthread_mutex_unlock(&core->stock_lock);
        }

        /*
         * First leave the client, under clients_lock: a client_move() in
         * progress holds it, so none can find this session afterwards. The
         * RSS residue and everything still held leave the client's counters
         * in the same critical section, so exact readers never see half.
         */
        pthread_mutex_lock(&core->clients_lock);
        for (int m = 0; m < _MEM_RSS_MAX; m++) {
                int64_t d = load64(&s->rss_delta[m]);

                for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                        if (mem_rss_from_stat(i) == (MemRss) m)
                                d -= load64(&s->held[i]);
                if (d != 0)
                        atomic_fetch_add(&c->rss[m], d);
                store64(&s->rss_delta[m], 0);
        }
        cds_list_del(&s->client_link);
        if (--c->refs == 0) {
                core_read_lock();
                cds_lfht_del(core->clients, &c->node);
                core_read_unlock();
                rcu_tsan_publish(c);
                urcu_memb_call_rcu(&c->rcu, client_free_rcu);
        }
        pthread_mutex_unlock(&core->clients_lock);

        core_read_lock();
        g = session_begin_update(s, &locked);
        if (g)
                for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                        int64_t h = load64(&s->held[i]);

                        if (h > 0)
                                group_uncharge(core, g, (uint64_t) h, i);
                        store64(&s->held[i], 0);
                }
        if (g && s->region_held)
                for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                        int64_t h = load64(&s->region_held[slot]);

                        if (h > 0)
                                region_move_uncharge(g, NULL, slot, (uint64_t) h);
                        store64(&s->region_held[slot], 0);
                }
        session_end_update(g, locked);
        core_read_unlock();

        if (g)
                group_detach(g);
        free(s->region_held);
        free(s);
        return NULL;
}

static bool session_holds_anything(MemSession *s) {
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                if (load64(&s->held[i]) != 0)
                        return true;
        for (unsigned slot = 1; s->region_held && slot < MEM_REGION_MAX; slot++)
                if (load64(&s->region_held[slot]) != 0)
                        return true;
        return false;
}

int session_attach(MemSession *s, MemGroup *g) {
        MemGroup *old;
        int r;

        /* Serialised with moves, which also change s->group. */
        pthread_mutex_lock(&s->core->move_mutex);
        if (session_holds_anything(s))
                r = -EBUSY;
        else
                r = group_attach(g);
        if (r == 0) {
                old = atomic_exchange(&s->group, g);
                if (old)
                        group_detach(old);
        }
        pthread_mutex_unlock(&s->core->move_mutex);
        return r;
}

static int session_charge_once(MemSession *s, uint64_t bytes, MemStatItem item, unsigned flags,
                               MemChargeResult *ret) {
        MemGroup *g;
        bool locked;
        int r;

        core_read_lock();
        g = session_begin_update(s, &locked);
        if (!g)
                r = -ENOTCONN;
        else {
                r = group_charge(s->core, g, bytes, item, flags, ret);
                if (r == 0)
                        held_add(s, &s->held[item], (int64_t) bytes);
        }
        session_end_update(g, locked);
        core_read_unlock();
        return r;
}

/*
 * try_charge_memcg() step 8: once, when a limit refuses, empty the stocks
 * held under the refusing group in region @key and retry. The first
 * attempt raises no oom; the retry, or a refusal no drain could help, does.
 */
int charge_drain_retry(MemCore *core, int key, int r, unsigned flags, MemChargeResult *ret,
                       int (*again)(void *ctx, unsigned flags, MemChargeResult *ret), void *ctx) {
        uint64_t drained;
        MemGroup *refused;

        if (r != -EDQUOT || !(flags & MEM_CHARGE_DRAIN))
                return r;
        refused = group_ref(ret->refused);
        /* The clients' pages first (their bytes come back through this
         * thread's stock), then every thread's stock under the group; a
         * device region's charge drained the threads' stocks itself. */
        drained = core_drain_stock(core, refused, key);
        if (key == MEM_REGION_MEMORY)
                drained += (uint64_t) stock_drain(core, &refused->counter);
        if (drained > 0) {
                charge_result_done(ret);
                r = again(ctx, flags & ~(MEM_CHARGE_DRAIN | MEM_CHARGE_NO_OOM), ret);
        } else if (flags & MEM_CHARGE_NO_OOM)
                ; /* the caller reclaims before it refuses, and raises oom then */
        else if (key == MEM_REGION_MEMORY)
                group_event_raise(refused, MEM_EVENT_OOM);
        else
                region_group_event(core, refused, key, MEM_EVENT_OOM);
        group_unref(refused);
        return r;
}

typedef struct ChargeArgs {
        MemSession *s;
        MemGroup *g;
        int key; /* kept charges: the region */
        uint64_t bytes;
        MemStatItem item;
        unsigned caller_flags;
} ChargeArgs;

static int session_charge_again(void *ctx, unsigned flags, MemChargeResult *ret) {
        ChargeArgs *a = ctx;

        return session_charge_once(a->s, a->bytes, a->item,
                                   flags | (a->caller_flags & MEM_CHARGE_NO_OOM), ret);
}

int session_charge(MemSession *s, uint64_t bytes, MemStatItem item, unsigned flags,
                   MemChargeResult *ret) {
        ChargeArgs args = { .s = s, .bytes = bytes, .item = item, .caller_flags = flags };
        MemChargeResult res = {};
        MemRss m = mem_rss_from_stat(item);
        unsigned first = flags;
        int r;

        if (ret)
                *ret = res;
        if (!mem_stat_item_ok(item))
                return -EINVAL;
        if (flags & MEM_CHARGE_DRAIN)
                first |= MEM_CHARGE_NO_OOM;
        r = session_charge_once(s, bytes, item, first & ~MEM_CHARGE_DRAIN, &res);
        if (_unlikely_(r == -EDQUOT))
                r = charge_drain_retry(s->core, MEM_REGION_MEMORY, r, flags, &res, session_charge_again, &args);
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);

        if (r == 0 && m >= 0 && bytes > 0)
                rss_add(s, m, (int64_t) bytes);
        return r;
}

/* One try of a kept charge, in memory or in a device region. */
static int kept_charge_once(MemCore *core, MemGroup *g, int key, uint64_t bytes, MemStatItem item,
                            unsigned flags, MemChargeResult *ret) {
        if (key != MEM_REGION_MEMORY)
                return region_charge_kept(core, g, key, bytes, flags, ret);
        return group_charge_kept(core, g, bytes, item, flags, ret);
}

static int kept_charge_again(void *ctx, unsigned flags, MemChargeResult *ret) {
        ChargeArgs *a = ctx;

        return kept_charge_once(a->g->core, a->g, a->key, a->bytes, a->item,
                                flags | (a->caller_flags & MEM_CHARGE_NO_OOM), ret);
}

int core_charge_kept_in(MemCore *core, MemGroup *g, int key, uint64_t bytes, MemStatItem item, unsigned flags,
                        MemChargeResult *ret) {
        ChargeArgs args = { .g = g, .key = key, .bytes = bytes, .item = item, .caller_flags = flags };
        MemChargeResult res = {};
        unsigned first = flags;
        int r;

        if (flags & MEM_CHARGE_DRAIN)
                first |= MEM_CHARGE_NO_OOM;
        r = kept_charge_once(core, g, key, bytes, item, first & ~MEM_CHARGE_DRAIN, &res);
        if (_unlikely_(r == -EDQUOT))
                r = charge_drain_retry(core, key, r, flags, &res, kept_charge_again, &args);
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);
        return r;
}

int session_uncharge(MemSession *s, uint64_t bytes, MemStatItem item) {
        MemRss m = mem_rss_from_stat(item);
        MemGroup *g;
        bool locked;
        int r = 0;

        if (!mem_stat_item_ok(item))
                return -EINVAL;
        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;

        core_read_lock();
        g = session_begin_update(s, &locked);
        if (!g)
                r = -ENOTCONN;
        else if (!held_take(s, &s->held[item], (int64_t) bytes))
                r = -ERANGE;
        else if (bytes > 0)
                group_uncharge(s->core, g, bytes, item);
        session_end_update(g, locked);
        core_read_unlock();

        if (r == 0 && m >= 0 && bytes > 0)
                rss_add(s, m, -(int64_t) bytes);
        return r;
}

int session_set_stock(MemSession *s, _Atomic uint64_t *page) {
        MemCore *core = s->core;
        int r = 0;

        pthread_mutex_lock(&core->stock_lock);
        if (s->stock)
                r = -EBUSY;
        else {
                s->stock = page;
                cds_list_add(&s->stock_link, &core->stock_sessions);
        }
        pthread_mutex_unlock(&core->stock_lock);
        return r;
}

int session_charge_stock(MemSession *s, uint64_t bytes, MemStatItem item, MemChargeResult *ret) {
        int r;

        if (!s->stock)
                return -ENXIO;
        r = session_charge(s, bytes, item, MEM_CHARGE_NO_OOM, ret);
        if (r == 0) {
                /* The refill's total first, the page after: a client that
                 * derives what it holds from both then errs high, never
                 * low (client-stock.c, stock_held()). */
                atomic_fetch_add(&s->stock[MEM_STOCK_REFILLED(item)], bytes);
                atomic_fetch_add(&s->stock[item], bytes);
        }
        return r;
}

/* Release what a drain took from one item of @s's page. On the drainer's
 * thread: the session's own thread may charge at the same time, hence the
 * CAS on held and the direct, atomic RSS update (the split deltas belong
 * to the owner). */
uint64_t stock_counter_drain(MemSession *s, unsigned index, unsigned drained, _Atomic int64_t *held) {
        uint64_t v = atomic_exchange(&s->stock[index], 0);
        int64_t cur, take;

        if (v == 0)
                return 0;
        /* All of it left the page: the drain's total says so, after the
         * page's update (the order stock_held() relies on). */
        atomic_fetch_add(&s->stock[drained], v);
        if (!held)
                return 0;
        /* The page is the client's memory: trust it no further than what
         * the session really holds. */
        cur = load64(held);
        do {
                take = MIN((int64_t) MIN(v, (uint64_t) MEM_CHARGE_MAX), cur);
                if (take <= 0)
                        return 0;
        } while (!atomic_compare_exchange_weak(held, &cur, cur - take));
        return (uint64_t) take;
}

static uint64_t drain_one(MemSession *s, MemGroup *g, MemStatItem item) {
        int64_t take = (int64_t) stock_counter_drain(s, item, MEM_STOCK_DRAINED(item), &s->held[item]);
        MemRss m = mem_rss_from_stat(item);

        if (take == 0)
                return 0;
        group_uncharge(s->core, g, (uint64_t) take, item);
        if (m >= 0)
                atomic_fetch_sub(&s->client->rss[m], take);
        return (uint64_t) take;
}

uint64_t core_drain_stock(MemCore *core, MemGroup *under, int key) {
        uint64_t released = 0;
        MemSession *s;

        pthread_mutex_lock(&core->stock_lock);
        cds_list_for_each_entry(s, &core->stock_sessions, stock_link) {
                MemGroup *g;
                bool locked;

                core_read_lock();
                g = session_begin_update(s, &locked);
                if (g && group_is_descendant(g, under)) {
                        if (key != MEM_REGION_MEMORY)
                                released += session_drain_region(s, g, key);
                        else
                                for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                                        released += drain_one(s, g, i);
                }
                session_end_update(g, locked);
                core_read_unlock();
        }
        pthread_mutex_unlock(&core->stock_lock);
        return released;
}

uint64_t session_held(MemSession *s, MemStatItem item) {
        if (!mem_stat_item_ok(item))
                return 0;
        return (uint64_t) load64(&s->held[item]);
}

/* The client read by pid: of @instance, or else of instance 0. In an RCU read-side section. */
static MemClient *client_lookup_read(MemCore *core, pid_t pid, uint64_t instance) {
        MemClient *c = client_lookup(core, pid, instance);

        return c || instance == 0 ? c : client_lookup(core, pid, 0);
}

int client_read_rss(MemCore *core, pid_t pid, bool exact, int64_t ret[_MEM_RSS_MAX]) {
        return client_read_rss_process(core, pid, 0, exact, ret);
}

int client_read_rss_process(MemCore *core, pid_t pid, uint64_t instance, bool exact,
                            int64_t ret[_MEM_RSS_MAX]) {
        MemClient *c;
        MemSession *s;

        if (!exact) {
                core_read_lock();
                c = client_lookup_read(core, pid, instance);
                if (c)
                        for (int m = 0; m < _MEM_RSS_MAX; m++)
                                ret[m] = MAX(load64(&c->rss[m]), 0);
                core_read_unlock();
                return c ? 0 : -ESRCH;
        }

        pthread_mutex_lock(&core->clients_lock);
        core_read_lock();
        c = client_lookup_read(core, pid, instance);
        core_read_unlock();
        if (c) {
                for (int m = 0; m < _MEM_RSS_MAX; m++)
                        ret[m] = load64(&c->rss[m]);
                cds_list_for_each_entry(s, &c->sessions, client_link)
                        for (int m = 0; m < _MEM_RSS_MAX; m++)
                                ret[m] += load64(&s->rss_delta[m]);
                for (int m = 0; m < _MEM_RSS_MAX; m++)
                        ret[m] = MAX(ret[m], 0);
        }
        pthread_mutex_unlock(&core->clients_lock);
        return c ? 0 : -ESRCH;
}
