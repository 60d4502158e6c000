/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events on the socket: subscriptions and memacct_next_event(). The
 * daemon sends a subscribed group's events as unsolicited frames, which
 * whatever call reads the socket puts in the handle's event queue
 * (client.c); memacct_next_event() takes them from there, reading the
 * socket itself when the queue is empty. Subscriptions, with the region
 * each names, are remembered for a reconnection to renew.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client-deadline.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "client-events.h"
#include "client-reconnect.h"
#include "macro.h"

int client_subscribe_socket(memacct *m, const char *path, const char *region) {
        Memacct__V1__Subscribe sub = MEMACCT__V1__SUBSCRIBE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        ClientSubscription copy = {}, *subs;
        int r;

        /* Memory's is the Subscribe without the field, which any daemon takes. */
        if (region && (!*region || strcmp(region, MEMACCT_REGION_MEMORY) == 0))
                region = NULL;
        copy.path = strdup(path);
        copy.region = region ? strdup(region) : NULL;
        if (!copy.path || (region && !copy.region)) {
                free(copy.path);
                free(copy.region);
                return client_error(m, -ENOMEM, NULL, NULL);
        }
        sub.path = (char *) path;
        sub.region = (char *) region;
        req.op_case = MEMACCT__V1__REQUEST__OP_SUBSCRIBE;
        req.subscribe = &sub;
        r = client_call(m, &req, true, NULL);
        if (r < 0) {
                free(copy.path);
                free(copy.region);
                return r;
        }
        /* Remembered for reconnection. */
        pthread_mutex_lock(&m->lock);
        subs = realloc(m->subscriptions, (m->n_subscriptions + 1) * sizeof(*subs));
        if (subs) {
                m->subscriptions = subs;
                m->subscriptions[m->n_subscriptions++] = copy;
        }
        pthread_mutex_unlock(&m->lock);
        if (subs)
                return 0;
        free(copy.path);
        free(copy.region);
        return client_error(m, -ENOMEM, NULL, NULL);
}

_public_ int memacct_subscribe(memacct *m, const char *path) {
        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->subscribe(m, path);
        return client_subscribe_socket(m, path, NULL);
}

_public_ int memacct_next_event(memacct *m, int timeout_msec, memacct_event *ret) {
        uint64_t deadline;
        int r;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->next_event(m, timeout_msec, ret);
        deadline = client_deadline_nsec(timeout_msec);

        pthread_mutex_lock(&m->lock);
        for (;;) {
                struct pollfd pfd;
                int left, fd;

                if (event_queue_pop(&m->events, ret)) {
                        r = 1;
                        break;
                }
                if (m->n_reclaim_q > 0) {
                        /* Reclaim requests read meanwhile: served here too. */
                        pthread_mutex_unlock(&m->lock);
                        r = client_reclaim_serve(m);
                        pthread_mutex_lock(&m->lock);
                        if (r < 0)
                                break;
                        continue;
                }
                r = client_ensure_connected(m);
                if (r < 0)
                        break;
                r = conn_pump(&m->conn, 0, NULL, NULL);
                if (r < 0 && m->conn.fd >= 0)
                        break;
                if (r < 0 || event_queue_pop(&m->events, ret)) {
                        /* Broken: the next round reconnects. Or: an event. */
                        if (r >= 0) {
                                r = 1;
                                break;
                        }
                        continue;
                }
                left = client_deadline_left_msec(deadline);
                if (left == 0) {
                        r = 0;
                        break;
                }
                /* Sleep without the lock: other threads' calls go on, and
                 * whatever they read for us lands in the queue. */
                fd = m->conn.fd;
                pthread_mutex_unlock(&m->lock);
                pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
                r = poll(&pfd, 1, left);
                if (r < 0 && errno == EINTR)
                        return client_error(m, -EINTR, "interrupted", NULL);
                pthread_mutex_lock(&m->lock);
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_event_requester(memacct *m, uint32_t *ret_pid, uint32_t *ret_uid) {
        uint32_t pid, uid;
        int r;

        if (!m)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus) {
                r = m->bus->event_requester(m, &pid, &uid);
        } else {
                pthread_mutex_lock(&m->lock);
                r = event_queue_requester(&m->events, &pid, &uid);
                pthread_mutex_unlock(&m->lock);
        }
        if (r < 0)
                return r;
        if (ret_pid)
                *ret_pid = pid;
        if (ret_uid)
                *ret_uid = uid;
        return 0;
}
