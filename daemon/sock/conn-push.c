/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events pushed to a socket connection. Events pushed by other threads
 * (subscriptions) go to a queue under push_lock and wake the worker
 * through a per-connection event (event_active(): the worker's base was
 * created after evthread_use_pthreads(), so it is notifiable; this event
 * has no timeout, so libevent#1530 does not apply). The worker then moves
 * the queue to the connection's output.
 *
 * A push can never touch a freed connection: the event fan-out calls the
 * push function under its subscription lock, and service_peer_free()
 * takes that lock and drops the connection's subscriptions before it
 * returns; only then are the event and the queue freed (conn_free()).
 *
 * The queue is bounded by push_max; a subscriber that does not read loses
 * its connection, never the daemon's memory.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>

#include "base/log.h"
#include "sock/conn-internal.h"
#include "sock/conn-push.h"
#include "sock/wire.h"

/* EventDelivery push: any thread, under the fan-out's subscription lock. */
static void conn_push(void *userdata, const uint8_t *frame, size_t len) {
        SockConn *c = userdata;
        bool wake = false;

        pthread_mutex_lock(&c->push_lock);
        if (!c->push_overflow) {
                if (!c->push_q)
                        c->push_q = evbuffer_new();
                /* A subscriber that does not read loses the connection, not
                 * the daemon's memory; nor may its uid's other connections
                 * make up what one may not hold. */
                if (!c->push_q || evbuffer_get_length(c->push_q) + len > c->push_max ||
                    service_output_over(c->host->service, c->usage) || evbuffer_add(c->push_q, frame, len) < 0)
                        c->push_overflow = true;
                else
                        conn_output_add(c, len);
        }
        if (!c->push_scheduled) {
                c->push_scheduled = true;
                wake = true;
        }
        pthread_mutex_unlock(&c->push_lock);
        /* Still under the fan-out's lock: @c cannot be freed yet. */
        if (wake)
                event_active(c->ev_push, EV_READ, 0);
}

void conn_push_wake(void *userdata) {
        SockConn *c = userdata;
        bool wake;

        pthread_mutex_lock(&c->push_lock);
        wake = !c->push_scheduled;
        c->push_scheduled = true;
        pthread_mutex_unlock(&c->push_lock);
        if (wake)
                event_active(c->ev_push, EV_READ, 0);
}

/* The worker, woken by conn_push() or conn_push_wake(): the queue goes out with the replies. */
static void conn_push_cb(evutil_socket_t fd, short what, void *userdata) {
        SockConn *c = userdata;
        bool overflow;

        (void) fd;
        (void) what;
        pthread_mutex_lock(&c->push_lock);
        if (c->push_q)
                evbuffer_add_buffer(c->out, c->push_q);
        overflow = c->push_overflow;
        c->push_scheduled = false;
        pthread_mutex_unlock(&c->push_lock);
        if (overflow || evbuffer_get_length(c->out) > 2 * c->host->limits.max_output) {
                log_notice("Connection of pid %d uid %u does not read its events; closing", (int) c->pid,
                           (unsigned) c->uid);
                conn_free(c);
                return;
        }
        conn_update(c);
}

/* One frame for every subscriber. */
const EventDelivery conn_push_delivery = {
        .encode = wire_event_frame,
        .push = conn_push,
};

int conn_push_init(SockConn *c) {
        pthread_mutex_init(&c->push_lock, NULL);
        c->push_max = c->host->limits.max_output;
        c->ev_push = event_new(c->host->base, -1, 0, conn_push_cb, c);
        return c->ev_push ? 0 : -ENOMEM;
}

void conn_push_set_max(SockConn *c, uint64_t max) {
        pthread_mutex_lock(&c->push_lock);
        c->push_max = max;
        pthread_mutex_unlock(&c->push_lock);
}
