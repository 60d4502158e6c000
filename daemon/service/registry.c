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
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/session.h"
#include "service/registry.h"

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
};

int registry_new(MemCore *core, Events *events, Registry **ret) {
        Registry *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->core = core;
        r->events = events;
        pthread_mutex_init(&r->lock, NULL);
        *ret = r;
        return 0;
}

Registry *registry_free(Registry *r) {
        if (!r)
                return NULL;
        pthread_mutex_destroy(&r->lock);
        free(r->uids);
        free(r);
        return NULL;
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

int registry_peer_new(Registry *r, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                      Peer **ret) {
        Peer *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->registry = r;
        p->creds = *creds;
        p->subscriber = (EventSubscriber) { .delivery = delivery, .userdata = userdata, .uid = creds->uid };
        *ret = p;
        return 0;
}

int peer_open_session(Peer *p) {
        Registry *r = p->registry;
        int k;

        if (p->session)
                return 0;
        k = uid_acquire(r, p->creds.uid);
        if (k < 0)
                return k;
        /* Keyed by the process instance: a process that later gets
         * this pid is another client, whose moves never carry this. */
        k = session_new_process(r->core, p->creds.pid, p->creds.instance, p->creds.uid, p->creds.gid,
                                &p->session);
        if (k < 0) {
                uid_release(r, p->creds.uid);
                return k;
        }
        p->session->userdata = &p->subscriber;
        atomic_fetch_add_explicit(&r->nsessions, 1, memory_order_relaxed);
        return 0;
}

Peer *registry_peer_free(Peer *p) {
        Registry *r;

        if (!p)
                return NULL;
        r = p->registry;
        /* Under the fan-out's lock: no push runs once this returns. */
        events_unsubscribe_all(r->events, &p->subscriber);
        if (p->session) {
                /* Releases everything it holds; see the top of the file. */
                session_free(p->session);
                uid_release(r, p->creds.uid);
                atomic_fetch_sub_explicit(&r->nsessions, 1, memory_order_relaxed);
        }
        if (p->stock_page)
                munmap(p->stock_page, p->stock_page_size);
        free(p);
        return NULL;
}
