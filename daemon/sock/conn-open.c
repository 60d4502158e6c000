/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening a socket connection: who the peer is (its credentials from
 * SO_PEERCRED, its process instance from SO_PEERPIDFD), the connection
 * object and its events, its count for its uid and its session (a service
 * peer), and its place on the host. Reading, serving and writing are
 * conn.c's, pushed events conn-push.c's, the host's duties conn-host.c's.
 *
 * A peer the service refuses (too many connections or sessions, -EUSERS)
 * gets its refusal as the one frame it ever reads, then the close. The
 * connection is linked to its host only once it is fully set up, so the
 * host never sees one half made; a failure before that frees it with
 * conn_free(), which takes a connection at any step of its set-up.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "base/log.h"
#include "base/procid.h"
#include "base/selfstats.h"
#include "sock/conn-internal.h"
#include "sock/conn-push.h"
#include "sock/request.h"

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

/*
 * A connection for @fd from the peer @cred, with its buffers and events,
 * not yet counted nor linked. Takes @fd. Return: it, or NULL when out of
 * memory.
 */
static SockConn *conn_new(SockConnHost *h, int fd, const struct ucred *cred) {
        SockConn *c = calloc(1, sizeof(*c));

        if (!c) {
                close(fd);
                return NULL;
        }
        selfstats_connections_add(SERVICE_TRANSPORT_SOCKET, 1); /* taken again by conn_free() */
        *c = (SockConn) {
                .host = h,
                .fd = fd,
                .pid = cred->pid,
                .uid = cred->uid,
                .gid = cred->gid,
                .pending_fd = -1,
                .last_active_usec = now_usec(),
                .timer_deadline_usec = UINT64_MAX,
        };
        c->held = (HeldReplies) HELD_REPLIES_INIT(c->held);
        c->out = evbuffer_new();
        if (conn_push_init(c) < 0 || !c->out || conn_events_new(c) < 0) {
                conn_free(c);
                return NULL;
        }
        /* Root's go first on its worker, whatever others ask (server.c). */
        if (cred->uid == 0) {
                struct event *evs[] = { c->ev_read, c->ev_write, c->ev_timer, c->ev_push };

                for (size_t i = 0; i < ELEMENTSOF(evs); i++)
                        (void) event_priority_set(evs[i], SOCK_PRIORITY_ROOT);
        }
        return c;
}

/*
 * Count @c for its uid, then open its session: a service peer that events
 * are pushed to. Return: 0; -EUSERS (a bound refused it, @rf says which);
 * another negative errno.
 */
static int conn_open_peer(SockConn *c, Refusal *rf) {
        PeerCreds creds = {
                .transport = SERVICE_TRANSPORT_SOCKET,
                .pid = c->pid,
                .uid = c->uid,
                .gid = c->gid,
                .instance = conn_peer_instance(c->fd, c->pid),
        };
        Service *s = c->host->service;
        int r;

        r = service_connection_open(s, &creds, &c->usage, rf);
        if (r < 0)
                return r;
        r = service_peer_new(s, &creds, &conn_push_delivery, c, true, &c->peer, rf);
        if (r < 0)
                return r;
        c->peer->reclaim.wake = conn_push_wake;
        c->peer->reclaim.wake_userdata = c;
        return 0;
}

/* @c is served from now on: one of @h's connections. */
static void conn_link(SockConnHost *h, SockConn *c) {
        c->next = h->conns;
        if (h->conns)
                h->conns->prev = c;
        h->conns = c;
        h->nconns++;
        c->linked = true;
        log_debug("New connection of pid %d uid %u gid %u", (int) c->pid, (unsigned) c->uid,
                  (unsigned) c->gid);
        conn_update(c);
}

int sock_conn_new(SockConnHost *h, int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        Refusal rf;
        SockConn *c;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                r = -errno;
                close(fd);
                return log_warning_errno(r, "Cannot read the peer credentials of a new connection: %m");
        }
        c = conn_new(h, fd, &cred);
        if (!c)
                return log_error_errno(ENOMEM, "Cannot serve a new connection: %m");

        refusal_init(&rf);
        r = conn_open_peer(c, &rf);
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
        conn_link(h, c);
        return 0;
}
