/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peers and sessions
 *
 * Sessions per uid are a small table under a mutex, touched when a
 * session opens or ends (not per request). The total is an atomic for
 * STATUS= and the metrics. A peer's session is freed before its stock
 * page is unmapped: session_free() takes the session off the core's
 * stock list (no drain can touch the page after it returns), and it
 * waits for a move of the session in progress, so a move hook can never
 * reach a freed peer.
 *
 * What else a uid holds (UidUsage) is a second table, of pointers, so
 * that an entry stays where it is while the table grows: a connection
 * keeps a reference to its uid's entry and adds its output there on
 * every reply, with no lock. The table's lock is taken to find an entry
 * (at connect, subscribe, create); an entry nobody refers to and that
 * counts nothing is freed. The counts themselves are atomics, acquired
 * as the kernel's page_counter_try_charge() charges: add, and if that
 * passed the bound, take it back; two racing acquires may both be taken
 * back, never both pass. The totals leave root out, so whatever the
 * other uids hold, root keeps its room.
 *
 * The peers with a session are on a list (peers_lock), for `memacctctl
 * sessions`: linked once the session exists, unlinked before it is freed,
 * so a walker under the lock sees only live sessions. The lock is taken
 * at connect, at disconnect and by a listing, never on a request's path.
 */

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/group.h"
#include "core/session.h"
#include "service/registry.h"
#include "base/selfstats.h"
#include "macro.h"

typedef struct UidCount {
        uid_t uid;
        unsigned n;
} UidCount;

struct Registry {
        MemCore *core;
        Events *events;
        pthread_mutex_t lock; /* uids */
        UidCount *uids;
        size_t nuids;
        _Atomic unsigned max_sessions_per_uid;
        _Atomic unsigned nsessions;

        pthread_mutex_t usage_lock; /* usage, nusage, UidUsage.refs */
        UidUsage **usage;
        size_t nusage;
        _Atomic unsigned total[_UID_RESOURCE_MAX]; /* every uid but root */
        _Atomic uint64_t output_total;             /* every uid but root */
        _Atomic unsigned bound_per_uid[_UID_RESOURCE_MAX];
        _Atomic unsigned bound_total[_UID_RESOURCE_MAX];
        _Atomic uint64_t bound_output_per_uid, bound_output_total;

        RegistryPeerGoneFn peer_gone; /* set once, before the threads start */
        RegistryPeerGoneFn peer_leaving;
        void *peer_gone_data;
        pthread_mutex_t peers_lock; /* peers, Peer.list_*, Peer.stock_page */
        Peer *peers;
};

struct UidUsage {
        uid_t uid;
        unsigned refs; /* under usage_lock */
        _Atomic unsigned n[_UID_RESOURCE_MAX];
        _Atomic uint64_t output;
};

int registry_new(MemCore *core, Events *events, Registry **ret) {
        Registry *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->core = core;
        r->events = events;
        pthread_mutex_init(&r->lock, NULL);
        pthread_mutex_init(&r->usage_lock, NULL);
        pthread_mutex_init(&r->peers_lock, NULL);
        *ret = r;
        return 0;
}

Registry *registry_free(Registry *r) {
        if (!r)
                return NULL;
        pthread_mutex_destroy(&r->lock);
        free(r->uids);
        pthread_mutex_destroy(&r->usage_lock);
        pthread_mutex_destroy(&r->peers_lock);
        for (size_t i = 0; i < r->nusage; i++)
                free(r->usage[i]);
        free(r->usage);
        free(r);
        return NULL;
}

void registry_set_peer_gone(Registry *r, RegistryPeerGoneFn leaving, RegistryPeerGoneFn fn, void *userdata) {
        r->peer_leaving = leaving;
        r->peer_gone = fn;
        r->peer_gone_data = userdata;
}

int peer_add_transient(Peer *p, MemGroup *g) {
        MemGroup **v = realloc(p->transient, (p->ntransient + 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        p->transient = v;
        v[p->ntransient++] = group_ref(g);
        return 0;
}

void registry_set_sessions_per_uid(Registry *r, unsigned max) {
        /* Relaxed: each check reads it once; a reload only changes the
         * cap for sessions opened after it. */
        atomic_store_explicit(&r->max_sessions_per_uid, max, memory_order_relaxed);
}

unsigned registry_sessions_per_uid(Registry *r) {
        return atomic_load_explicit(&r->max_sessions_per_uid, memory_order_relaxed);
}

unsigned registry_session_count(Registry *r) {
        /* A count for STATUS= and metrics: nothing is ordered by it. */
        return atomic_load_explicit(&r->nsessions, memory_order_relaxed);
}

/* Caller holds r->lock. */
static UidCount *uid_find(Registry *r, uid_t uid) {
        for (size_t i = 0; i < r->nuids; i++)
                if (r->uids[i].uid == uid)
                        return &r->uids[i];
        return NULL;
}

/* One more session for @uid, unless its cap is reached; root is never limited. */
static int uid_acquire(Registry *r, uid_t uid) {
        unsigned max = atomic_load_explicit(&r->max_sessions_per_uid, memory_order_relaxed);
        UidCount *u;
        int k = 0;

        if (uid == 0)
                return 0;
        pthread_mutex_lock(&r->lock);
        u = uid_find(r, uid);
        if (!u) {
                UidCount *n = realloc(r->uids, (r->nuids + 1) * sizeof(*n));

                if (!n) {
                        k = -ENOMEM;
                        goto out;
                }
                r->uids = n;
                u = &r->uids[r->nuids++];
                *u = (UidCount) { .uid = uid };
        }
        if (max && u->n >= max)
                k = -EUSERS;
        else
                u->n++;
out:
        pthread_mutex_unlock(&r->lock);
        return k;
}

static void uid_release(Registry *r, uid_t uid) {
        UidCount *u;

        if (uid == 0)
                return;
        pthread_mutex_lock(&r->lock);
        u = uid_find(r, uid);
        if (u && u->n > 0)
                u->n--;
        pthread_mutex_unlock(&r->lock);
}

/*
 * The command name of @pid, read once at connect: what a listing shows
 * beside the pid, as ps does. Best effort: a process gone already, or a
 * pid of another namespace, leaves it empty. The name is the process's
 * own to choose; a listing prints it as data.
 */
static void read_comm(pid_t pid, char comm[static 16]) {
        char path[32];
        ssize_t n;
        int fd;

        comm[0] = 0;
        if (pid <= 0)
                return;
        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, comm, 15);
        close(fd);
        if (n <= 0)
                n = 0;
        comm[n] = 0;
        comm[strcspn(comm, "\n")] = 0;
}

int registry_peer_new(Registry *r, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                      Peer **ret) {
        Peer *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->registry = r;
        p->creds = *creds;
        p->who = (AuthzWho) { .uid = creds->uid, .pid = creds->pid };
        p->subscriber = (EventSubscriber) { .delivery = delivery, .userdata = userdata, .who = &p->who };
        read_comm(creds->pid, p->comm);
        *ret = p;
        return 0;
}

/* Whose session @p's is, for the session gauges: as service-sessions.c names it (only socket peers take deliveries). */
static ServiceTransport peer_transport(const Peer *p) {
        return p->creds.transport;
}

static void peer_link(Peer *p) {
        Registry *r = p->registry;

        pthread_mutex_lock(&r->peers_lock);
        p->list_prev = NULL;
        p->list_next = r->peers;
        if (r->peers)
                r->peers->list_prev = p;
        r->peers = p;
        pthread_mutex_unlock(&r->peers_lock);
}

static void peer_unlink(Peer *p) {
        Registry *r = p->registry;

        pthread_mutex_lock(&r->peers_lock);
        if (p->list_prev)
                p->list_prev->list_next = p->list_next;
        else
                r->peers = p->list_next;
        if (p->list_next)
                p->list_next->list_prev = p->list_prev;
        p->list_prev = p->list_next = NULL;
        pthread_mutex_unlock(&r->peers_lock);
}

void registry_peer_set_stock(Peer *p, void *page, size_t size) {
        pthread_mutex_lock(&p->registry->peers_lock);
        p->stock_page = page;
        p->stock_page_size = size;
        pthread_mutex_unlock(&p->registry->peers_lock);
}

int registry_for_each_session(Registry *r, int (*fn)(Peer *p, void *userdata), void *userdata) {
        int k = 0;

        pthread_mutex_lock(&r->peers_lock);
        for (Peer *p = r->peers; p && k == 0; p = p->list_next)
                k = fn(p, userdata);
        pthread_mutex_unlock(&r->peers_lock);
        return k;
}

int peer_open_session(Peer *p) {
        Registry *r = p->registry;
        int k;

        if (p->session)
                return 0;
        k = uid_acquire(r, p->creds.account);
        if (k < 0)
                return k;
        /* Keyed by the process instance: a process that later gets
         * this pid is another client, whose moves never carry this. */
        k = session_new_process(r->core, p->creds.pid, p->creds.instance, p->creds.uid, p->creds.gid,
                                &p->session);
        if (k < 0) {
                uid_release(r, p->creds.account);
                return k;
        }
        p->session->userdata = &p->subscriber;
        atomic_fetch_add_explicit(&r->nsessions, 1, memory_order_relaxed);
        selfstats_sessions_add(peer_transport(p), 1);
        peer_link(p);
        return 0;
}

Peer *registry_peer_free(Peer *p) {
        unsigned nsubs;
        Registry *r;

        if (!p)
                return NULL;
        r = p->registry;
        /* Under the fan-out's lock: no push runs once this returns.
         * Each subscription was counted for the uid (service_subscribe()). */
        nsubs = p->subscriber.nsubs;
        events_unsubscribe_all(r->events, &p->subscriber);
        registry_uid_release(r, p->creds.account, UID_SUBSCRIPTIONS, nsubs);
        /* Off the list first: a listing never sees it freed. */
        if (p->session)
                peer_unlink(p);
        /* Out of the service's references to it and its session (reclaim
         * rounds) while the session still is. A peer without a session
         * may wait for a round too (a SetLimits, a Reclaim). */
        if (r->peer_leaving)
                r->peer_leaving(r->peer_gone_data, p);
        if (p->session) {
                /* Releases everything it holds; see the top of the file. */
                session_free(p->session);
                uid_release(r, p->creds.account);
                atomic_fetch_sub_explicit(&r->nsessions, 1, memory_order_relaxed);
                selfstats_sessions_add(peer_transport(p), -1);
        }
        /* After the session: its own attachment no longer keeps a
         * transient group it created. */
        if (r->peer_gone)
                r->peer_gone(r->peer_gone_data, p);
        for (size_t i = 0; i < p->ntransient; i++)
                group_unref(p->transient[i]);
        group_unref(p->who.scope);
        free(p->transient);
        if (p->stock_page)
                munmap(p->stock_page, p->stock_page_size);
        free(p);
        return NULL;
}

/* ---- what a uid holds besides its sessions ---- */

/* Relaxed, all of them: each check reads each bound once, and a reload
 * only changes the bound for what is acquired after it. */
void registry_set_bounds(Registry *r, const RegistryBounds *b) {
        for (unsigned i = 0; i < _UID_RESOURCE_MAX; i++) {
                atomic_store_explicit(&r->bound_per_uid[i], b->per_uid[i], memory_order_relaxed);
                atomic_store_explicit(&r->bound_total[i], b->total[i], memory_order_relaxed);
        }
        atomic_store_explicit(&r->bound_output_per_uid, b->output_per_uid, memory_order_relaxed);
        atomic_store_explicit(&r->bound_output_total, b->output_total, memory_order_relaxed);
}

RegistryBounds registry_bounds(Registry *r) {
        RegistryBounds b = {
                .output_per_uid = atomic_load_explicit(&r->bound_output_per_uid, memory_order_relaxed),
                .output_total = atomic_load_explicit(&r->bound_output_total, memory_order_relaxed),
        };

        for (unsigned i = 0; i < _UID_RESOURCE_MAX; i++) {
                b.per_uid[i] = atomic_load_explicit(&r->bound_per_uid[i], memory_order_relaxed);
                b.total[i] = atomic_load_explicit(&r->bound_total[i], memory_order_relaxed);
        }
        return b;
}

UidUsage *registry_usage_get(Registry *r, uid_t uid) {
        UidUsage *u = NULL, **v;

        pthread_mutex_lock(&r->usage_lock);
        for (size_t i = 0; i < r->nusage; i++)
                if (r->usage[i]->uid == uid) {
                        u = r->usage[i];
                        goto found;
                }
        u = calloc(1, sizeof(*u));
        v = u ? realloc(r->usage, (r->nusage + 1) * sizeof(*v)) : NULL;
        if (!v) {
                u = mfree(u);
                goto out;
        }
        r->usage = v;
        r->usage[r->nusage++] = u;
        u->uid = uid;
found:
        u->refs++;
out:
        pthread_mutex_unlock(&r->usage_lock);
        return u;
}

/* Caller holds usage_lock: does @u count anything? */
static bool usage_empty(const UidUsage *u) {
        for (unsigned i = 0; i < _UID_RESOURCE_MAX; i++)
                if (atomic_load_explicit(&u->n[i], memory_order_relaxed) > 0)
                        return false;
        return atomic_load_explicit(&u->output, memory_order_relaxed) == 0;
}

UidUsage *registry_usage_put(Registry *r, UidUsage *u) {
        if (!u)
                return NULL;
        pthread_mutex_lock(&r->usage_lock);
        assert(u->refs > 0);
        /* Without a reference, nobody but a holder of usage_lock can
         * reach @u: whoever counts in it holds one (or the lock). */
        if (--u->refs == 0 && usage_empty(u))
                for (size_t i = 0; i < r->nusage; i++)
                        if (r->usage[i] == u) {
                                r->usage[i] = r->usage[--r->nusage];
                                free(u);
                                break;
                        }
        pthread_mutex_unlock(&r->usage_lock);
        return NULL;
}

int registry_usage_acquire(Registry *r, UidUsage *u, UidResource what, bool force) {
        unsigned max = atomic_load_explicit(&r->bound_per_uid[what], memory_order_relaxed);
        unsigned total = atomic_load_explicit(&r->bound_total[what], memory_order_relaxed);

        assert(what >= 0 && what < _UID_RESOURCE_MAX);
        /* Relaxed: a count orders nothing but itself, and fetch_add on
         * one atomic is totally ordered, so two racers see distinct values. */
        if (atomic_fetch_add_explicit(&u->n[what], 1, memory_order_relaxed) >= max && max && !force &&
            u->uid != 0) {
                atomic_fetch_sub_explicit(&u->n[what], 1, memory_order_relaxed);
                return -EUSERS;
        }
        if (u->uid == 0)
                return 0;
        if (atomic_fetch_add_explicit(&r->total[what], 1, memory_order_relaxed) >= total && total && !force) {
                atomic_fetch_sub_explicit(&r->total[what], 1, memory_order_relaxed);
                atomic_fetch_sub_explicit(&u->n[what], 1, memory_order_relaxed);
                return -ENOSPC;
        }
        return 0;
}

void registry_usage_release(Registry *r, UidUsage *u, UidResource what, unsigned n) {
        assert(what >= 0 && what < _UID_RESOURCE_MAX);
        if (n == 0)
                return;
        assert(atomic_load_explicit(&u->n[what], memory_order_relaxed) >= n);
        atomic_fetch_sub_explicit(&u->n[what], n, memory_order_relaxed);
        if (u->uid != 0)
                atomic_fetch_sub_explicit(&r->total[what], n, memory_order_relaxed);
}

int registry_uid_acquire(Registry *r, uid_t uid, UidResource what, bool force) {
        UidUsage *u = registry_usage_get(r, uid);
        int k;

        if (!u)
                return -ENOMEM;
        k = registry_usage_acquire(r, u, what, force);
        registry_usage_put(r, u);
        return k;
}

void registry_uid_release(Registry *r, uid_t uid, UidResource what, unsigned n) {
        UidUsage *u;

        if (n == 0)
                return;
        /* The entry exists: what is released was counted in it. */
        u = registry_usage_get(r, uid);
        if (!u)
                return;
        registry_usage_release(r, u, what, n);
        registry_usage_put(r, u);
}

unsigned registry_uid_count(Registry *r, uid_t uid, UidResource what) {
        unsigned n = 0;

        pthread_mutex_lock(&r->usage_lock);
        for (size_t i = 0; i < r->nusage; i++)
                if (r->usage[i]->uid == uid)
                        n = atomic_load_explicit(&r->usage[i]->n[what], memory_order_relaxed);
        pthread_mutex_unlock(&r->usage_lock);
        return n;
}

void registry_output_add(Registry *r, UidUsage *u, int64_t delta) {
        /* Relaxed: the bound is a budget checked before each reply, not
         * a lock; a check that reads a value a moment old is off by the
         * reply in flight, which the bound allows for. Unsigned wrap
         * makes a negative @delta a subtraction. */
        atomic_fetch_add_explicit(&u->output, (uint64_t) delta, memory_order_relaxed);
        if (u->uid != 0)
                atomic_fetch_add_explicit(&r->output_total, (uint64_t) delta, memory_order_relaxed);
}

bool registry_output_over(Registry *r, const UidUsage *u) {
        uint64_t max = atomic_load_explicit(&r->bound_output_per_uid, memory_order_relaxed);
        uint64_t total = atomic_load_explicit(&r->bound_output_total, memory_order_relaxed);

        if (u->uid == 0)
                return false;
        if (max && atomic_load_explicit(&u->output, memory_order_relaxed) > max)
                return true;
        return total && atomic_load_explicit(&r->output_total, memory_order_relaxed) > total;
}
