/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim (memacct-reclaim.h): declaring what the session can give back,
 * and serving the daemon's requests for it; the socket's calls here, the
 * bus's in client-bus-reclaim.c, the declarations and the queue shared.
 *
 * A ReclaimRequest arrives as an unsolicited frame, read by whichever
 * call reads the socket with the handle's lock held (client.c,
 * on_frame()), or on a bus handle as a signal, dispatched by whichever
 * call runs sd_bus_process() with it held. It is queued there, never
 * served: its callback gives memory back through the same handle, which
 * takes the lock. The queue is served by memacct_process() and
 * memacct_next_event(), with the lock released around each callback; each
 * answer is one ReclaimDone, over the handle's transport.
 *
 * Invariant: reclaimers holds one entry per region declared (region NULL
 * for memory), each region name a copy; the queue holds what was read and
 * not yet served. Both under the handle's lock.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client-call.h"
#include "client-deadline.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "client-reconnect.h"
#include "client-regions.h"
#include "macro.h"

/* Do @a and @b name the same region, memory's names all alike? */
static bool region_same(const char *a, const char *b) {
        bool mem_a = client_region_is_memory(a), mem_b = client_region_is_memory(b);

        /* (a and b are not NULL past the first test: memory's names include NULL.) */
        return mem_a || mem_b || !a || !b ? mem_a == mem_b : strcmp(a, b) == 0;
}

static int set_reclaimable_locked(memacct *m, const char *region, const char *stat, bool on) {
        Memacct__V1__SetReclaimable sr = MEMACCT__V1__SET_RECLAIMABLE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        sr.region = (char *) region;
        sr.stat = (char *) stat;
        sr.has_on = true;
        sr.on = on;
        req.op_case = MEMACCT__V1__REQUEST__OP_SET_RECLAIMABLE;
        req.set_reclaimable = &sr;
        return client_call_locked(m, &req, -1, NULL);
}

/* Note memory or @region declared whole (@fn NULL: withdrawn). Lock held. */
static int note_region_locked(memacct *m, const char *region, memacct_reclaim_fn fn, void *userdata) {
        ClientReclaimer *v = NULL;
        size_t i;

        for (i = 0; i < m->n_reclaimers; i++)
                if (region_same(m->reclaimers[i].region, region))
                        break;
        if (!fn) {
                if (i < m->n_reclaimers) {
                        free(m->reclaimers[i].region);
                        m->reclaimers[i] = m->reclaimers[--m->n_reclaimers];
                }
                return 0;
        }
        if (i == m->n_reclaimers) {
                char *copy = client_region_is_memory(region) ? NULL : strdup(region);

                v = realloc(m->reclaimers, (m->n_reclaimers + 1) * sizeof(*v));
                if (!v || (!copy && !client_region_is_memory(region))) {
                        free(copy);
                        if (v)
                                m->reclaimers = v;
                        return client_error(m, -ENOMEM, NULL, NULL);
                }
                m->reclaimers = v;
                m->reclaimers[m->n_reclaimers++] = (ClientReclaimer) { .region = copy };
        }
        m->reclaimers[i].fn = fn;
        m->reclaimers[i].userdata = userdata;
        m->reclaimers[i].items = 0;
        return 0;
}

/* Note memory's stat item @item declared (@fn NULL: withdrawn). Lock held. */
static int note_item_locked(memacct *m, int item, memacct_reclaim_fn fn, void *userdata) {
        ClientReclaimer *v;
        size_t i;

        for (i = 0; i < m->n_reclaimers; i++)
                if (client_region_is_memory(m->reclaimers[i].region))
                        break;
        if (i == m->n_reclaimers) {
                if (!fn)
                        return 0;
                v = realloc(m->reclaimers, (m->n_reclaimers + 1) * sizeof(*v));
                if (!v)
                        return client_error(m, -ENOMEM, NULL, NULL);
                m->reclaimers = v;
                m->reclaimers[m->n_reclaimers++] = (ClientReclaimer) { .items = 0 };
        }
        /* Memory declared whole stays whole; item by item, the items. */
        if (fn) {
                if (m->reclaimers[i].items || !m->reclaimers[i].fn)
                        m->reclaimers[i].items |= UINT32_C(1) << item;
                m->reclaimers[i].fn = fn;
                m->reclaimers[i].userdata = userdata;
        } else if (m->reclaimers[i].items) {
                m->reclaimers[i].items &= ~(UINT32_C(1) << item);
                if (!m->reclaimers[i].items)
                        m->reclaimers[i] = m->reclaimers[--m->n_reclaimers];
        }
        return 0;
}

int client_reclaim_note_locked(memacct *m, const char *region, int item, memacct_reclaim_fn fn,
                               void *userdata) {
        return item < 0 ? note_region_locked(m, region, fn, userdata) : note_item_locked(m, item, fn, userdata);
}

/* Both public declarations on the socket: SetReclaimable, then the note. */
static int set_reclaimable_socket(memacct *m, const char *region, int item, memacct_reclaim_fn fn,
                                  void *userdata) {
        int r;

        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0)
                r = set_reclaimable_locked(m, item < 0 ? region : NULL,
                                           item < 0 ? NULL : memacct_stat_to_string(item), !!fn);
        if (r >= 0)
                r = client_reclaim_note_locked(m, region, item, fn, userdata);
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_set_reclaimable(memacct *m, const char *region, memacct_reclaim_fn fn, void *userdata) {
        if (!m)
                return -EINVAL;
        if (m->bus)
                return m->bus->set_reclaimable(m, region, -1, fn, userdata);
        return set_reclaimable_socket(m, region, -1, fn, userdata);
}

_public_ int memacct_set_reclaimable_stat(memacct *m, int item, memacct_reclaim_fn fn, void *userdata) {
        if (!m || item < 0 || item >= MEMACCT_STAT_MAX)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->set_reclaimable(m, NULL, item, fn, userdata);
        return set_reclaimable_socket(m, NULL, item, fn, userdata);
}

void client_reclaim_ask_queue(memacct *m, uint64_t id, const char *region, uint64_t bytes) {
        ClientReclaimAsk *v;
        char *copy = NULL;

        if (region && *region && !(copy = strdup(region)))
                return;
        v = realloc(m->reclaim_q, (m->n_reclaim_q + 1) * sizeof(*v));
        if (!v) {
                free(copy);
                return;
        }
        m->reclaim_q = v;
        v[m->n_reclaim_q++] = (ClientReclaimAsk) { .id = id, .bytes = bytes, .region = copy };
}

void client_reclaim_queue(memacct *m, const Memacct__V1__ReclaimRequest *rq) {
        client_reclaim_ask_queue(m, rq->id, rq->region, rq->bytes);
}

/* The next request and its reclaimer, taken off the queue. Lock held. */
static bool next_ask(memacct *m, ClientReclaimAsk *ret, ClientReclaimer *ret_who) {
        if (m->n_reclaim_q == 0)
                return false;
        *ret = m->reclaim_q[0];
        memmove(m->reclaim_q, m->reclaim_q + 1, (m->n_reclaim_q - 1) * sizeof(*m->reclaim_q));
        m->n_reclaim_q--;
        *ret_who = (ClientReclaimer) {};
        for (size_t i = 0; i < m->n_reclaimers; i++)
                if (region_same(m->reclaimers[i].region, ret->region))
                        *ret_who = m->reclaimers[i];
        return true;
}

/* ReclaimDone of request @id, over the handle's transport. Takes the lock. */
static int answer(memacct *m, uint64_t id, bool cannot) {
        Memacct__V1__ReclaimDone done = MEMACCT__V1__RECLAIM_DONE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        int r = 0;

        if (m->bus)
                return m->bus->reclaim_done(m, id, cannot);
        done.has_id = done.has_cannot = true;
        done.id = id;
        done.cannot = cannot;
        req.op_case = MEMACCT__V1__REQUEST__OP_RECLAIM_DONE;
        req.reclaim_done = &done;
        pthread_mutex_lock(&m->lock);
        /* A broken connection: the session, and the request, are gone. */
        if (m->conn.fd >= 0)
                r = client_call_locked(m, &req, -1, NULL);
        pthread_mutex_unlock(&m->lock);
        return r;
}

int client_reclaim_serve(memacct *m) {
        ClientReclaimAsk ask;
        ClientReclaimer who;
        int n = 0, r = 0;

        for (;;) {
                int64_t given = 0;
                bool got;

                pthread_mutex_lock(&m->lock);
                got = next_ask(m, &ask, &who);
                pthread_mutex_unlock(&m->lock);
                if (!got)
                        break;
                if (who.fn)
                        given = who.fn(m, ask.bytes, ask.region, who.userdata);
                free(ask.region);
                r = answer(m, ask.id, given <= 0);
                n++;
                if (r < 0)
                        break;
        }
        return r < 0 ? r : n;
}

int client_reclaim_renew_locked(memacct *m) {
        for (size_t i = 0; i < m->n_reclaimers; i++) {
                const ClientReclaimer *c = &m->reclaimers[i];
                int r = 0;

                if (!c->items)
                        r = set_reclaimable_locked(m, c->region, NULL, true);
                for (int item = 0; item < MEMACCT_STAT_MAX && r >= 0; item++)
                        if (c->items & (UINT32_C(1) << item))
                                r = set_reclaimable_locked(m, NULL, memacct_stat_to_string(item), true);
                if (r < 0 && m->conn.fd < 0)
                        return r;
        }
        return 0;
}

void client_reclaim_done(memacct *m) {
        for (size_t i = 0; i < m->n_reclaimers; i++)
                free(m->reclaimers[i].region);
        m->reclaimers = mfree(m->reclaimers);
        m->n_reclaimers = 0;
        for (size_t i = 0; i < m->n_reclaim_q; i++)
                free(m->reclaim_q[i].region);
        m->reclaim_q = mfree(m->reclaim_q);
        m->n_reclaim_q = 0;
}

_public_ int memacct_fd(memacct *m) {
        int fd;

        if (!m)
                return -EINVAL;
        if (m->bus)
                return m->bus->fd(m);
        pthread_mutex_lock(&m->lock);
        fd = m->conn.fd >= 0 ? m->conn.fd : -ENOTCONN;
        pthread_mutex_unlock(&m->lock);
        return fd;
}

_public_ int memacct_process(memacct *m, int timeout_msec) {
        uint64_t deadline;
        int r;

        if (!m)
                return -EINVAL;
        if (m->bus)
                return m->bus->process(m, timeout_msec);
        deadline = client_deadline_nsec(timeout_msec);
        for (;;) {
                struct pollfd pfd;
                int left, fd;

                pthread_mutex_lock(&m->lock);
                r = client_ensure_connected(m);
                if (r >= 0)
                        r = conn_pump(&m->conn, 0, NULL, NULL);
                fd = m->conn.fd;
                left = client_deadline_left_msec(deadline);
                pthread_mutex_unlock(&m->lock);
                if (r < 0)
                        return client_error(m, r, m->conn.proto_error, NULL);
                r = client_reclaim_serve(m);
                if (r != 0 || left == 0)
                        return r;
                /* Nothing yet: sleep on the socket without the lock. */
                pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
                if (poll(&pfd, 1, left) < 0 && errno == EINTR)
                        return client_error(m, -EINTR, "interrupted", NULL);
        }
}

_public_ int memacct_reclaim(memacct *m, const char *path, const char *region, uint64_t bytes,
                             uint64_t *ret_released) {
        Memacct__V1__Reclaim rc = MEMACCT__V1__RECLAIM__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        int r;

        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->reclaim(m, path, region, bytes, ret_released);
        rc.path = (char *) path;
        rc.region = (char *) region;
        rc.has_bytes = true;
        rc.bytes = bytes;
        req.op_case = MEMACCT__V1__REQUEST__OP_RECLAIM;
        req.reclaim = &rc;
        /* Repeatable: asking again asks again, which is what a retry means. */
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (ret_released)
                *ret_released = resp->result_case == MEMACCT__V1__RESPONSE__RESULT_RECLAIMED
                                        ? resp->reclaimed->released
                                        : 0;
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}
