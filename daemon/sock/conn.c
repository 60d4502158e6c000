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
 * Durable changes: the OK of a change that must survive is held (held.c)
 * until the saver has it on disk, and every later reply of the same
 * connection waits behind it, so that replies keep their order; reading
 * and serving go on meanwhile (held replies count against the output
 * bounds). The saver wakes each worker after a save (sock_host_saved());
 * the worker releases what may go. A worker never blocks on the disk.
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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "macro.h"
#include "service/log.h"
#include "service/procid.h"
#include "sock/conn.h"
#include "sock/held.h"
#include "sock/request.h"
#include "sock/wire.h"

#define USEC_PER_SEC UINT64_C(1000000)
/* A bounded number of reads per wake-up keeps one busy client from
 * starving the others on its worker. */
#define READS_PER_EVENT 8
/* Free space the connection's own buffer offers each read. */
#define READ_CHUNK (64 * 1024)
/* A connection that is closing gets this long to take its last output. */
#define CLOSE_GRACE_USEC (5 * USEC_PER_SEC)
/* Room for a few descriptors, to tell "one" from "more" without MSG_CTRUNC. */
#define CMSG_FDS_MAX 4
/* A connection paused by its uid's output looks again this often. */
#define SHARED_RECHECK_USEC (50 * 1000)

struct SockConn {
        SockConnHost *host;
        SockConn *prev, *next; /* host->conns */
        bool linked;

        int fd;
        pid_t pid;
        uid_t uid;
        gid_t gid;
        Peer *peer;

        struct event *ev_read, *ev_write, *ev_timer, *ev_push;
        bool reading, writing;

        bool closing; /* fatal error answered: write what is queued, then close */
        bool eof;     /* no more input: serve what is buffered, write, then close */
        bool partial; /* the input ends inside a frame */

        /* Input not yet served (a partial frame, or frames held back by
         * backpressure); NULL when there is none. */
        uint8_t *in;
        size_t in_len, in_cap;
        int pending_fd;
        size_t pending_fd_end; /* the fd belongs to the frame holding in[pending_fd_end - 1] */

        struct evbuffer *out;
        unsigned queued; /* responses added since the output was last empty */
        HeldReplies held;
        SockConn *wait_prev, *wait_next; /* host->waiting, while held is not empty */
        bool waiting;
        UidUsage *usage;          /* its uid's counts (service_connection_open()) */
        _Atomic uint64_t output;  /* bytes in out and push_q, counted in usage */
        bool shared_wait;         /* paused by its uid's or everyone's output, not its own */

        uint64_t last_active_usec;  /* last byte read or written */
        uint64_t partial_since_usec;
        uint64_t close_deadline_usec;
        uint64_t timer_deadline_usec; /* when ev_timer fires; UINT64_MAX: not pending */

        /* Pushed frames, from any thread. */
        pthread_mutex_t push_lock;
        struct evbuffer *push_q; /* created on the first push */
        uint64_t push_max;
        bool push_overflow;
        bool push_scheduled;
};

static void conn_update(SockConn *c);

static void *mfree(void *p) {
        free(p);
        return NULL;
}

static uint64_t now_usec(void) {
        struct timespec ts;

        /* Timeouts are seconds: the coarse clock (a vDSO read, no
         * syscall) is precise enough and costs nothing per read. */
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/*
 * Output waiting for the client changed by @n bytes: every change of out
 * and push_q goes through these two, on any thread (a push), so that the
 * uid's and the daemon's totals stay what the buffers hold.
 */
static void conn_output_add(SockConn *c, size_t n) {
        if (n == 0 || !c->usage)
                return;
        /* Relaxed: a count, read back only by this connection's thread at its end. */
        atomic_fetch_add_explicit(&c->output, n, memory_order_relaxed);
        service_output_add(c->host->service, c->usage, (int64_t) n);
}

static void conn_output_sub(SockConn *c, size_t n) {
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
static void conn_release(SockConn *c) {
        held_release(&c->held, c->host->service, c->out);
        if (held_empty(&c->held))
                conn_unwait(c);
}

/*
 * The response in host->reply goes out now, or is held: behind its own
 * change (@seq, from service_peer_take_wait()) until it is saved, or
 * behind replies held before it.
 */
static int conn_emit(SockConn *c, uint64_t seq, uint64_t id) {
        struct evbuffer *reply = c->host->reply;
        size_t n = evbuffer_get_length(reply);
        int r;

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

static void conn_free(SockConn *c) {
        SockConnHost *h = c->host;
        bool linked = c->linked;

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

static void conn_set_eof(SockConn *c, uint64_t grace_usec) {
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
                (void) conn_emit(c, 0, 0);
        c->queued++;
        conn_set_closing(c);
}

/* Its own output is over its bounds. */
static bool conn_paused_own(SockConn *c) {
        const SockLimits *l = &c->host->limits;

        return c->queued + c->held.n >= l->max_outstanding ||
               evbuffer_get_length(c->out) + c->held.bytes > l->max_output;
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
        size_t off = 0;

        c->partial = false;
        while (off < len && !c->closing && !conn_paused(c)) {
                size_t body, prefix;
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
                r = request_serve(c->host->service, c->peer, buf + off + prefix, body, fd, c->host->reply, &id);
                if (conn_emit(c, service_peer_take_wait(c->peer), id) < 0 && r >= 0) {
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
static void conn_update(SockConn *c) {
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
        c->ev_read = event_new(h->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
        c->ev_write = event_new(h->base, fd, EV_WRITE | EV_PERSIST, conn_write_cb, c);
        c->ev_timer = evtimer_new(h->base, conn_timer_cb, c);
        c->ev_push = event_new(h->base, -1, 0, conn_push_cb, c);
        if (!c->out || !c->ev_read || !c->ev_write || !c->ev_timer || !c->ev_push) {
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
