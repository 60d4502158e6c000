/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A connection host: the worker thread's duties over all its socket
 * connections, as opposed to one connection's (conn.c). It owns the buffer
 * replies are encoded into, wakes up after every save to release the
 * replies held for it, drains its connections at shutdown, closes them
 * all, and applies changed limits to each.
 *
 * Everything here runs on the host's thread but sock_host_saved(), which
 * the saver calls from its own and which only activates an event.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "sock/conn-internal.h"
#include "sock/conn-push.h"

static void host_saved_cb(evutil_socket_t fd, short what, void *userdata) {
        SockConnHost *h = userdata;
        SockConn *c, *next;

        (void) fd;
        (void) what;
        for (c = h->waiting; c; c = next) {
                next = c->wait_next; /* conn_update() frees only @c */
                conn_release(c);
                conn_update(c);
        }
}

void sock_host_saved(void *userdata) {
        SockConnHost *h = userdata;

        /* The base was made after evthread_use_pthreads(): notifiable. */
        event_active(h->ev_durable, EV_READ, 0);
}

int sock_host_init(SockConnHost *h) {
        h->reply = evbuffer_new();
        h->ev_durable = event_new(h->base, -1, 0, host_saved_cb, h);
        if (!h->reply || !h->ev_durable) {
                sock_host_done(h);
                return -ENOMEM;
        }
        return 0;
}

void sock_host_done(SockConnHost *h) {
        if (h->ev_durable)
                event_free(h->ev_durable);
        h->ev_durable = NULL;
        if (h->reply)
                evbuffer_free(h->reply);
        h->reply = NULL;
}

void sock_host_drain(SockConnHost *h, uint64_t grace_usec) {
        SockConn *c, *next;

        for (c = h->conns; c; c = next) {
                next = c->next; /* conn_update() frees only @c */
                conn_set_eof(c, grace_usec);
                conn_update(c);
        }
}

void sock_host_close_all(SockConnHost *h) {
        while (h->conns)
                conn_free(h->conns);
}

void sock_host_limits_changed(SockConnHost *h) {
        SockConn *c, *next;

        for (c = h->conns; c; c = next) {
                next = c->next;
                conn_push_set_max(c, h->limits.max_output);
                /* New timeouts apply from the next deadline on: re-arm now. */
                if (c->timer_deadline_usec != UINT64_MAX) {
                        event_del(c->ev_timer);
                        c->timer_deadline_usec = UINT64_MAX;
                }
                conn_update(c);
        }
}
