/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A socket connection: setting one up (its credentials, its process
 * instance, its uid's counts and its session), events pushed to it, and
 * the host's duties over all its connections (drain, limits, releasing
 * held replies after a save). Reading, serving and writing are conn.c's.
 *
 * Events pushed by other threads (subscriptions) go to a queue under
 * push_lock and wake the worker through a per-connection event
 * (event_active(): the worker's base was created after
 * evthread_use_pthreads(), so it is notifiable; this event has no timeout,
 * so libevent#1530 does not apply). A push can never touch a freed
 * connection: the event fan-out calls the push function under its
 * subscription lock, and service_peer_free() takes that lock and drops
 * the connection's subscriptions before it returns; only then are the
 * event and the queue freed.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "base/log.h"
#include "base/procid.h"
#include "base/selfstats.h"
#include "sock/conn-internal.h"
#include "sock/request.h"
#include "sock/server.h"
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

/* The socket's encoding of events: one frame for every subscriber. */
static const EventDelivery conn_delivery = {
        .encode = wire_event_frame,
        .push = conn_push,
};

/* The one answer a refused peer gets: its refusal, id 0. */
static void conn_refuse(int fd, const Refusal *rf) {
        struct evbuffer *out = evbuffer_new();

        /* A fresh socket has room for a few hundred bytes; if not, the
         * peer sees the close alone. */
        if (out && request_status_append(rf->error, rf->message, out) >= 0)
                (void) send(fd, evbuffer_pullup(out, -1), evbuffer_get_length(out), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (out)
                evbuffer_free(out);
}

#ifndef SO_PEERPIDFD
/* Linux 6.5 (asm-generic/socket.h); Debian 12's glibc headers predate it. */
#define SO_PEERPIDFD 77
#endif

/*
 * Which process the peer is: from the pidfd the kernel took at connect
 * (SO_PEERPIDFD), which names that process whatever becomes of its pid.
 * A kernel without it (before 6.5) gives the pid alone; the process that
 * has it when we ask is then the best there is, wrong only for a peer
 * that exited between its connect and our accept and whose pid was reused
 * in that time. A peer that cannot be identified gets a stamp no process
 * has: its sessions work, but are never moved by pid.
 */
static uint64_t conn_peer_instance(int fd, pid_t pid) {
        socklen_t len = sizeof(int);
        int pidfd = -1, r;
        uint64_t v;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0) {
                r = proc_instance_of_pidfd(pid, pidfd, &v);
                close(pidfd);
        } else if (errno == ENOPROTOOPT || errno == EINVAL)
                r = proc_instance_of_pid(pid, &v);
        else
                r = -errno;
        return r < 0 ? proc_instance_gone() : v;
}

int sock_conn_new(SockConnHost *h, int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        PeerCreds creds;
        Refusal rf;
        SockConn *c;
        int r;

        refusal_init(&rf);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                r = -errno;
                close(fd);
                return log_warning_errno(r, "Cannot read the peer credentials of a new connection: %m");
        }
        c = calloc(1, sizeof(*c));
        if (c)
                selfstats_connections_add(SERVICE_TRANSPORT_SOCKET, 1); /* taken again by conn_free() */
        if (!c) {
                close(fd);
                return log_error_errno(ENOMEM, "Cannot serve a new connection: %m");
        }
        *c = (SockConn) {
                .host = h,
                .fd = fd,
                .pid = cred.pid,
                .uid = cred.uid,
                .gid = cred.gid,
                .pending_fd = -1,
                .last_active_usec = now_usec(),
                .timer_deadline_usec = UINT64_MAX,
                .push_max = h->limits.max_output,
        };
        c->held = (HeldReplies) HELD_REPLIES_INIT(c->held);
        pthread_mutex_init(&c->push_lock, NULL);
        c->out = evbuffer_new();
        c->ev_push = event_new(h->base, -1, 0, conn_push_cb, c);
        if (!c->out || conn_events_new(c) < 0 || !c->ev_push) {
                conn_free(c);
                return log_error_errno(ENOMEM, "Cannot serve a new connection: %m");
        }
        /* Root's go first on its worker, whatever others ask (server.c). */
        if (cred.uid == 0) {
                struct event *evs[] = { c->ev_read, c->ev_write, c->ev_timer, c->ev_push };

                for (size_t i = 0; i < ELEMENTSOF(evs); i++)
                        (void) event_priority_set(evs[i], SOCK_PRIORITY_ROOT);
        }

        creds = (PeerCreds) {
                .pid = cred.pid,
                .uid = cred.uid,
                .gid = cred.gid,
                .instance = conn_peer_instance(fd, cred.pid),
        };
        /* The connection counts for its uid first, then its session does. */
        r = service_connection_open(h->service, &creds, &c->usage, &rf);
        if (r >= 0)
                r = service_peer_new(h->service, &creds, &conn_delivery, c, true, &c->peer, &rf);
        if (r == -EUSERS) {
                log_info("Refused a connection of pid %d: %s", (int) cred.pid, rf.message);
                conn_refuse(fd, &rf);
                conn_free(c);
                return 0;
        }
        if (r < 0) {
                conn_free(c);
                return log_error_errno(r, "Cannot open a session for pid %d uid %u: %m", (int) cred.pid,
                                       (unsigned) cred.uid);
        }

        c->next = h->conns;
        if (h->conns)
                h->conns->prev = c;
        h->conns = c;
        h->nconns++;
        c->linked = true;
        log_debug("New connection of pid %d uid %u gid %u", (int) cred.pid, (unsigned) cred.uid,
                  (unsigned) cred.gid);
        conn_update(c);
        return 0;
}

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
                pthread_mutex_lock(&c->push_lock);
                c->push_max = h->limits.max_output;
                pthread_mutex_unlock(&c->push_lock);
                /* New timeouts apply from the next deadline on: re-arm now. */
                if (c->timer_deadline_usec != UINT64_MAX) {
                        event_del(c->ev_timer);
                        c->timer_deadline_usec = UINT64_MAX;
                }
                conn_update(c);
        }
}
