/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A socket connection
 *
 * Input: each readable event reads with recvmsg() (into the worker's
 * scratch buffer, or the connection's own buffer while it holds part of a
 * frame), then decodes EVERY complete frame it has and hands each to
 * request_serve(), which appends one response to the output buffer;
 * then all responses go out with one writev() (evbuffer_write). On a Unix
 * socket a round trip costs 13-80 µs and each extra message in the same
 * write ~30 ns (docs/performance.md): answering a pipelined batch with
 * one write is what makes pipelining pay.
 *
 * Bounds (every input a client controls is bounded per connection): a
 * length prefix above the frame limit is
 * refused before anything is buffered; reading pauses while the output
 * holds more than output-buffer bytes or outstanding-requests responses
 * (a client that does not read its replies cannot make us buffer without
 * limit), and resumes once everything is written; frames read but held
 * back by the pause are served first. The same pause holds while the
 * output of all the connections of the client's uid, or of all uids but
 * root, exceeds its bound (service_output_over(); replies and queued
 * events alike, counted by conn_output_add() and conn_output_sub()), so
 * a uid cannot make the daemon buffer more than its bound and one reply
 * per connection; a connection paused so rechecks every
 * SHARED_RECHECK_USEC, since what lifts it happens on other connections. A connection idle for idle-timeout
 * seconds is closed; a frame still incomplete frame-timeout seconds after
 * its first byte arrived gets a protocol error and the connection ends.
 * Every framing error is answered with a PROTOCOL_ERROR response, written,
 * and then the connection closes; its session's charges are released by
 * service_peer_free() before the socket is closed.
 *
 * File descriptors (SCM_RIGHTS): at most one pending per connection. On a
 * stream socket the kernel returns the descriptors of one sendmsg() with
 * the first byte of its data and ends that recvmsg() with the end of that
 * message's data (unix_stream_read_generic() stops after an skb carrying
 * descriptors), so the descriptor belongs to the frame holding the last
 * byte of the recvmsg() that delivered it: a client sends a frame and its
 * descriptor with one sendmsg() whose data ends with that frame. The
 * descriptor goes to request_serve() with that frame once it is complete;
 * more than one, or a second before the first was used, is a protocol
 * error. Unclaimed descriptors are closed.
 *
 * Saver changes: the OK of a change that must survive is held (held.c)
 * until the saver has it on disk, and every later reply of the same
 * connection waits behind it, so that replies keep their order; reading
 * and serving go on meanwhile (held replies count against the output
 * bounds). The saver wakes each worker after a save (sock_host_saved());
 * the worker releases what may go. A worker never blocks on the disk.
 *
 * Setting a connection up and its identity are conn-open.c's, pushed
 * events conn-push.c's, the host's duties conn-host.c's.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "macro.h"
#include "base/log.h"
#include "base/selfstats.h"
#include "sock/conn-internal.h"
#include "sock/request-hot.h"
#include "sock/request.h"
#include "sock/wire.h"

/*
 * Output waiting for the client changed by @n bytes: every change of out
 * and push_q goes through these two, on any thread (a push), so that the
 * uid's and the daemon's totals stay what the buffers hold.
 */
void conn_output_add(SockConn *c, size_t n) {
        if (n == 0 || !c->usage)
                return;
        /* Relaxed: a count, read back only by this connection's thread at its end. */
        atomic_fetch_add_explicit(&c->output, n, memory_order_relaxed);
        service_output_add(c->host->service, c->usage, (int64_t) n);
}

void conn_output_sub(SockConn *c, size_t n) {
        if (n == 0 || !c->usage)
                return;
        atomic_fetch_sub_explicit(&c->output, n, memory_order_relaxed);
        service_output_add(c->host->service, c->usage, -(int64_t) n);
}

static void conn_wait(SockConn *c) {
        SockConnHost *h = c->host;

        if (c->waiting)
                return;
        c->wait_prev = NULL;
        c->wait_next = h->waiting;
        if (h->waiting)
                h->waiting->wait_prev = c;
        h->waiting = c;
        c->waiting = true;
}

static void conn_unwait(SockConn *c) {
        if (!c->waiting)
                return;
        if (c->wait_prev)
                c->wait_prev->wait_next = c->wait_next;
        else
                c->host->waiting = c->wait_next;
        if (c->wait_next)
                c->wait_next->wait_prev = c->wait_prev;
        c->waiting = false;
}

/* Move out what may go of the held replies. */
void conn_release(SockConn *c) {
        held_release(&c->held, c->host->service, c->out);
        if (held_empty(&c->held))
                conn_unwait(c);
}

/*
 * The response goes out now, or is held: behind its own change (@seq,
 * from service_peer_take_wait()) until it is saved, or behind replies
 * held before it. It is the @n bytes at @bytes (request_hot_serve()'s),
 * or with @bytes NULL the one in host->reply.
 */
static int conn_emit(SockConn *c, uint64_t seq, uint64_t id, const uint8_t *bytes, size_t n) {
        struct evbuffer *reply = c->host->reply;
        int r;

        if (bytes) {
                if (seq == 0 && held_empty(&c->held)) {
                        /* Copied to the output's tail: the replies of one
                         * read share a buffer (no chain per reply) and
                         * leave with one write of few iovecs. */
                        if (evbuffer_add(c->out, bytes, n) < 0)
                                return -ENOMEM;
                        conn_output_add(c, n);
                        return 0;
                }
                if (evbuffer_add(reply, bytes, n) < 0)
                        return -ENOMEM;
        } else
                n = evbuffer_get_length(reply);

        if (seq == 0 && held_empty(&c->held)) {
                if (evbuffer_add_buffer(c->out, reply) < 0)
                        return -ENOMEM;
                conn_output_add(c, n);
                return 0;
        }
        r = held_push(&c->held, seq, id, reply);
        if (r < 0) {
                (void) evbuffer_drain(reply, n);
                return r;
        }
        /* Held replies are output waiting for the client as much as out. */
        conn_output_add(c, n);
        conn_release(c);
        if (!held_empty(&c->held))
                conn_wait(c);
        return 0;
}

void conn_free(SockConn *c) {
        SockConnHost *h = c->host;
        bool linked = c->linked;

        selfstats_connections_add(SERVICE_TRANSPORT_SOCKET, -1);

        if (c->ev_read)
                event_free(c->ev_read);
        if (c->ev_write)
                event_free(c->ev_write);
        if (c->ev_timer)
                event_free(c->ev_timer);
        /* Releases the session's charges; no push runs or starts after it. */
        c->peer = service_peer_free(c->peer);
        if (c->ev_push)
                event_free(c->ev_push);
        if (c->push_q)
                evbuffer_free(c->push_q);
        pthread_mutex_destroy(&c->push_lock);
        if (c->out)
                evbuffer_free(c->out);
        conn_unwait(c);
        held_clear(&c->held);
        /* No push runs any more: what is still counted goes with the buffers. */
        conn_output_sub(c, atomic_load_explicit(&c->output, memory_order_relaxed));
        c->usage = service_connection_close(h->service, c->usage);
        if (c->pending_fd >= 0)
                close(c->pending_fd);
        free(c->in);
        if (c->fd >= 0)
                close(c->fd);
        if (linked) {
                if (c->prev)
                        c->prev->next = c->next;
                else
                        h->conns = c->next;
                if (c->next)
                        c->next->prev = c->prev;
                h->nconns--;
        }
        free(c);
        if (linked && h->conn_gone)
                h->conn_gone(h);
}

static void set_event(struct event *ev, bool *state, bool want) {
        if (*state == want)
                return;
        if (want)
                event_add(ev, NULL);
        else
                event_del(ev);
        *state = want;
}

void conn_set_eof(SockConn *c, uint64_t grace_usec) {
        uint64_t deadline = now_usec() + grace_usec;

        if (!c->eof && !c->closing)
                c->close_deadline_usec = deadline;
        else
                c->close_deadline_usec = MIN(c->close_deadline_usec, deadline);
        c->eof = true;
}

static void conn_set_closing(SockConn *c) {
        if (!c->eof && !c->closing)
                c->close_deadline_usec = now_usec() + CLOSE_GRACE_USEC;
        c->closing = true;
}

/* A framing error: one PROTOCOL_ERROR response, then the connection ends. */
static void conn_protocol_error(SockConn *c, const char *message) {
        log_info("Connection of pid %d uid %u: %s; closing", (int) c->pid, (unsigned) c->uid, message);
        if (request_status_append(-EPROTO, message, c->host->reply) >= 0)
                (void) conn_emit(c, 0, 0, NULL, 0);
        c->queued++;
        conn_set_closing(c);
}

/* Its own output is over its bounds, or its next request waits for reclaim. */
static bool conn_paused_own(SockConn *c) {
        const SockLimits *l = &c->host->limits;

        return c->queued + c->held.n >= l->max_outstanding ||
               evbuffer_get_length(c->out) + c->held.bytes > l->max_output ||
               (c->reclaim_wait && service_reclaim_wait_usec(c->host->service, c->peer) != 0);
}

/* Serve no more frames now: its own output, or its uid's, or everyone's is over its bound. */
static bool conn_paused(SockConn *c) {
        return conn_paused_own(c) || (c->usage && service_output_over(c->host->service, c->usage));
}

/*
 * Serve every complete frame at the start of @buf, in order, until the
 * data ends, a frame is incomplete, the connection must pause (the
 * remaining frames stay for later) or it must close. Return: the bytes
 * consumed.
 */
static size_t conn_process(SockConn *c, const uint8_t *buf, size_t len) {
        uint32_t max_frame = c->host->limits.max_frame;
        bool was_partial = c->partial;
        uint64_t clock_nsec = 0; /* the end of the last hot request served (request_hot_serve()) */
        size_t off = 0;

        c->partial = false;
        while (off < len && !c->closing && !conn_paused(c)) {
                uint8_t hot[REQUEST_HOT_REPLY_MAX];
                size_t body, prefix, hot_len;
                uint64_t id;
                int fd = -1, r;

                r = frame_prefix_decode(buf + off, len - off, max_frame, &body, &prefix);
                if (r == -EAGAIN || (r == 0 && len - off - prefix < body)) {
                        c->partial = true;
                        break;
                }
                if (r == -EMSGSIZE) {
                        char msg[96];

                        snprintf(msg, sizeof(msg), "frame larger than the limit of %u bytes", max_frame);
                        conn_protocol_error(c, msg);
                        break;
                }
                if (r < 0) {
                        conn_protocol_error(c, "bad frame length prefix");
                        break;
                }
                if (c->pending_fd >= 0 && c->pending_fd_end <= off + prefix + body) {
                        fd = c->pending_fd;
                        c->pending_fd = -1;
                }
                /* Charge and Uncharge through the hand codec, the rest through protobuf-c. */
                r = request_hot_serve(c->host->service, c->peer, buf + off + prefix, body, fd, hot, &hot_len,
                                      &id, &clock_nsec);
                if (r == 0) {
                        r = request_serve(c->host->service, c->peer, buf + off + prefix, body, fd,
                                          c->host->reply, &id);
                        hot_len = 0;
                        clock_nsec = 0; /* its own clock; the next one starts afresh */
                }
                /* Held for reclaim: the frame stays, and is served again
                 * once every holder answered or the deadline passed. */
                c->reclaim_wait = r == REQUEST_WAIT;
                if (r == REQUEST_WAIT)
                        break;
                if (conn_emit(c, service_peer_take_wait(c->peer), id, hot_len > 0 ? hot : NULL, hot_len) < 0 &&
                    r >= 0) {
                        /* The reply is lost: the client must not wait for it. */
                        off += prefix + body;
                        conn_protocol_error(c, "out of memory");
                        break;
                }
                c->queued++;
                off += prefix + body;
                if (r < 0) {
                        /* The PROTOCOL_ERROR response is in the output. */
                        log_info("Connection of pid %d uid %u sent a malformed request; closing", (int) c->pid,
                                 (unsigned) c->uid);
                        conn_set_closing(c);
                        break;
                }
        }
        if (c->pending_fd >= 0)
                c->pending_fd_end -= MIN(off, c->pending_fd_end);
        /* The frame timeout counts from the first byte of the frame that
         * is incomplete now: a new one if any frame ended in this data. */
        if (c->partial && (!was_partial || off > 0))
                c->partial_since_usec = now_usec();
        return off;
}

/* Serve what the connection's own buffer holds; keep the rest at its start. */
static void conn_process_in(SockConn *c) {
        size_t n = conn_process(c, c->in, c->in_len);

        if (n == c->in_len) {
                c->in = mfree(c->in);
                c->in_len = c->in_cap = 0;
                return;
        }
        memmove(c->in, c->in + n, c->in_len - n);
        c->in_len -= n;
}

/* Room for one more read in the connection's own buffer. Bounded: it
 * holds at most one partial frame plus one read when reading. */
static int conn_in_reserve(SockConn *c) {
        size_t want = c->in_len + READ_CHUNK, cap;
        uint8_t *p;

        if (c->in_cap >= want)
                return 0;
        cap = MAX(want, c->in_cap * 2);
        p = realloc(c->in, cap);
        if (!p)
                return -ENOMEM;
        c->in = p;
        c->in_cap = cap;
        return 0;
}

/*
 * One recvmsg() into @buf, whose first byte is at offset @at of the
 * connection's unserved input. Return: bytes read; 0 at end of file;
 * -EAGAIN; -EPROTO (a descriptor error, answered); another -errno.
 */
static ssize_t conn_recv(SockConn *c, uint8_t *buf, size_t size, size_t at) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * CMSG_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = size };
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        int fds[CMSG_FDS_MAX];
        size_t nfds = 0;
        const char *error = NULL;
        ssize_t n;

        do
                n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (nfds < CMSG_FDS_MAX)
                                fds[nfds++] = fd;
                        else
                                close(fd);
                }
        }
        if (msg.msg_flags & MSG_CTRUNC || nfds > 1)
                error = "more than one file descriptor with one message";
        else if (nfds == 1 && c->pending_fd >= 0)
                error = "a second file descriptor before the first one was used";
        else if (nfds == 1 && n == 0)
                error = "a file descriptor without data";
        if (error) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                conn_protocol_error(c, error);
                return -EPROTO;
        }
        if (nfds == 1) {
                c->pending_fd = fds[0];
                c->pending_fd_end = at + (size_t) n;
        }
        return n;
}

/* Read, serve, repeat while the socket may hold more. Return: 0 or a fatal -errno. */
static int conn_read(SockConn *c) {
        SockConnHost *h = c->host;

        for (unsigned i = 0; i < READS_PER_EVENT && !c->closing && !c->eof && !conn_paused(c); i++) {
                bool scratch = c->in_len == 0;
                uint8_t *buf;
                size_t at, space, len, n;
                ssize_t k;
                int r;

                if (scratch) {
                        buf = h->scratch;
                        at = 0;
                        space = h->scratch_size;
                } else {
                        r = conn_in_reserve(c);
                        if (r < 0)
                                return r;
                        buf = c->in;
                        at = c->in_len;
                        space = c->in_cap - at;
                }
                k = conn_recv(c, buf + at, space, at);
                if (k == -EAGAIN || k == -EPROTO)
                        return 0;
                if (k < 0)
                        return (int) k;
                if (k == 0) {
                        conn_set_eof(c, CLOSE_GRACE_USEC);
                        return 0;
                }
                c->last_active_usec = now_usec();
                len = at + (size_t) k;
                n = conn_process(c, buf, len);
                if (scratch) {
                        if (n < len) {
                                /* Keep the rest: a partial frame, or frames held back. */
                                c->in_cap = MAX(len - n, (size_t) 4096);
                                c->in = malloc(c->in_cap);
                                if (!c->in) {
                                        c->in_cap = 0;
                                        return -ENOMEM;
                                }
                                memcpy(c->in, buf + n, len - n);
                                c->in_len = len - n;
                        }
                } else if (n == len) {
                        c->in = mfree(c->in);
                        c->in_len = c->in_cap = 0;
                } else {
                        memmove(c->in, c->in + n, len - n);
                        c->in_len = len - n;
                }
                /* A short read drained the socket: skip the read that
                 * would only say EAGAIN. */
                if ((size_t) k < space)
                        break;
        }
        return 0;
}

/* Write what the output holds. Return: 0 (written, or the socket is full) or a fatal -errno. */
static int conn_flush(SockConn *c) {
        while (evbuffer_get_length(c->out) > 0) {
                int n = evbuffer_write(c->out, c->fd);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                conn_output_sub(c, (size_t) n);
                c->last_active_usec = now_usec();
        }
        c->queued = 0;
        return 0;
}

static void conn_arm_timer(SockConn *c) {
        const SockLimits *l = &c->host->limits;
        uint64_t deadline = UINT64_MAX, now;
        struct timeval tv;

        if (c->closing || c->eof)
                deadline = c->close_deadline_usec;
        else {
                if (l->idle_timeout_sec > 0)
                        deadline = c->last_active_usec + l->idle_timeout_sec * USEC_PER_SEC;
                if (c->partial && l->frame_timeout_sec > 0)
                        deadline = MIN(deadline, c->partial_since_usec + l->frame_timeout_sec * USEC_PER_SEC);
        }
        if (c->shared_wait)
                deadline = MIN(deadline, now_usec() + SHARED_RECHECK_USEC);
        if (c->reclaim_wait && !c->closing && !c->eof) {
                uint64_t wait = service_reclaim_wait_usec(c->host->service, c->peer);

                if (wait != UINT64_MAX)
                        deadline = MIN(deadline, now_usec() + wait);
        }
        if (deadline == UINT64_MAX) {
                if (c->timer_deadline_usec != UINT64_MAX) {
                        event_del(c->ev_timer);
                        c->timer_deadline_usec = UINT64_MAX;
                }
                return;
        }
        /* A timer due earlier re-arms itself when it fires: activity
         * moves the idle deadline on without an event_add() per read. */
        if (c->timer_deadline_usec <= deadline)
                return;
        now = now_usec();
        deadline = MAX(deadline, now);
        tv = (struct timeval) {
                .tv_sec = (time_t) ((deadline - now) / USEC_PER_SEC),
                .tv_usec = (suseconds_t) ((deadline - now) % USEC_PER_SEC),
        };
        event_add(c->ev_timer, &tv);
        c->timer_deadline_usec = deadline;
}

/*
 * After every callback: write, serve frames that waited for the output to
 * drain, close a connection that is done, and set the events it waits for.
 * May free @c.
 */
void conn_update(SockConn *c) {
        bool out_pending;
        int r;

        for (;;) {
                r = conn_flush(c);
                if (r < 0) {
                        log_debug_errno(r, "Connection of pid %d: write failed: %m", (int) c->pid);
                        conn_free(c);
                        return;
                }
                /* Frames held back by backpressure go first once it lifts;
                 * each round serves at least one, so this ends. */
                if (c->closing || c->in_len == 0 || c->partial || conn_paused(c))
                        break;
                conn_process_in(c);
        }
        out_pending = evbuffer_get_length(c->out) > 0;
        if (c->closing || c->eof) {
                /* Held replies go out before the end, within the close grace. */
                if (!out_pending && held_empty(&c->held) && (c->closing || c->in_len == 0 || c->partial)) {
                        conn_free(c);
                        return;
                }
                set_event(c->ev_read, &c->reading, false);
        } else
                set_event(c->ev_read, &c->reading, !conn_paused(c));
        /* Nothing of this connection's own will lift that pause: look again soon. */
        c->shared_wait = !c->closing && !conn_paused_own(c) && conn_paused(c);
        set_event(c->ev_write, &c->writing, out_pending);
        conn_arm_timer(c);
}

static void conn_read_cb(evutil_socket_t fd, short what, void *userdata) {
        SockConn *c = userdata;
        int r;

        (void) fd;
        (void) what;
        r = conn_read(c);
        if (r < 0) {
                if (r != -ECONNRESET)
                        log_debug_errno(r, "Connection of pid %d: read failed: %m", (int) c->pid);
                conn_free(c);
                return;
        }
        conn_update(c);
}

static void conn_write_cb(evutil_socket_t fd, short what, void *userdata) {
        (void) fd;
        (void) what;
        conn_update(userdata);
}

static void conn_timer_cb(evutil_socket_t fd, short what, void *userdata) {
        SockConn *c = userdata;
        const SockLimits *l = &c->host->limits;
        uint64_t now = now_usec();

        (void) fd;
        (void) what;
        c->timer_deadline_usec = UINT64_MAX;
        if (c->closing || c->eof) {
                if (now >= c->close_deadline_usec) {
                        log_debug("Connection of pid %d did not take its last output in time; closing",
                                  (int) c->pid);
                        conn_free(c);
                        return;
                }
        } else if (c->partial && l->frame_timeout_sec > 0 &&
                   now >= c->partial_since_usec + l->frame_timeout_sec * USEC_PER_SEC) {
                char msg[96];

                snprintf(msg, sizeof(msg), "frame incomplete after %u s", l->frame_timeout_sec);
                conn_protocol_error(c, msg);
        } else if (l->idle_timeout_sec > 0 && now >= c->last_active_usec + l->idle_timeout_sec * USEC_PER_SEC) {
                log_info("Connection of pid %d uid %u idle for %u s; closing", (int) c->pid, (unsigned) c->uid,
                         l->idle_timeout_sec);
                conn_free(c);
                return;
        }
        conn_update(c);
}

int conn_events_new(SockConn *c) {
        SockConnHost *h = c->host;

        c->ev_read = event_new(h->base, c->fd, EV_READ | EV_PERSIST, conn_read_cb, c);
        c->ev_write = event_new(h->base, c->fd, EV_WRITE | EV_PERSIST, conn_write_cb, c);
        c->ev_timer = evtimer_new(h->base, conn_timer_cb, c);
        return c->ev_read && c->ev_write && c->ev_timer ? 0 : -ENOMEM;
}
