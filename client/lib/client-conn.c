/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The connection: frames out, frames in, and the queue of replies awaited.
 *
 * Requests are written as soon as they are made (a batch: all in one
 * write); the socket is non-blocking, and whenever it is full the replies
 * that have arrived are read and dispatched, so a daemon that stops reading
 * until its replies are read never deadlocks with us. Replies come in
 * request order (memacct.proto), so the queue is a FIFO: each reply with a
 * non-zero id must carry the id at its head, and anything else is a
 * protocol error that ends the connection. Frames with id 0 are unsolicited
 * (subscription events, or the error that precedes the end of a session).
 *
 * A broken connection (EOF, ECONNRESET, EPIPE, a protocol error) fails every
 * awaited reply at once and leaves fd at -1: the caller reconnects.
 * Everything here runs with the handle's lock held.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-internal.h"
#include "frame.h"
#include "status.h"

int conn_open(memacct *m) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(m->socket_path);
        int fd, flags;

        if (n == 0 || n >= sizeof(sa.sun_path))
                return -EINVAL;
        memcpy(sa.sun_path, m->socket_path, n);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Blocking connect: a full backlog waits instead of failing. */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        m->fd = fd;
        m->rlen = 0;
        free(m->proto_error);
        m->proto_error = NULL;
        m->proto_error_r = 0;
        return 0;
}

static Pending *queue_head(memacct *m) {
        return m->qlen > 0 ? &m->queue[m->qhead] : NULL;
}

static void queue_pop(memacct *m) {
        m->qhead = (m->qhead + 1) % m->qsize;
        m->qlen--;
}

static int queue_push(memacct *m, const Pending *p) {
        if (m->qlen == m->qsize) {
                size_t size = m->qsize > 0 ? m->qsize * 2 : 64;
                Pending *q = calloc(size, sizeof(*q));

                if (!q)
                        return -ENOMEM;
                for (size_t i = 0; i < m->qlen; i++)
                        q[i] = m->queue[(m->qhead + i) % m->qsize];
                free(m->queue);
                m->queue = q;
                m->qsize = size;
                m->qhead = 0;
        }
        m->queue[(m->qhead + m->qlen) % m->qsize] = *p;
        m->qlen++;
        return 0;
}

/* The outcome of one awaited reply: @resp (ownership passed) or error @r. */
static void pending_done(memacct *m, const Pending *p, Response *resp, int r) {
        int status;
        uint64_t margin;

        switch (p->kind) {
        case PENDING_SYNC:
                p->slot->resp = resp;
                p->slot->r = r;
                p->slot->done = true;
                return;
        case PENDING_REFILL:
                status = resp ? status_to_errno((MemStatus) resp->status) : r;
                margin = UINT64_MAX;
                if (resp && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE &&
                    resp->charge->has_margin)
                        margin = resp->charge->margin;
                stock_refill_done(&m->stock, p->item, status, margin);
                break;
        case PENDING_RETURN:
                status = resp ? status_to_errno((MemStatus) resp->status) : r;
                stock_return_done(&m->stock, p->item, p->bytes, status);
                break;
        case PENDING_BATCH:
                client_batch_reply(p->batch, p->index, resp, r);
                break;
        }
        if (resp)
                memacct__v1__response__free_unpacked(resp, NULL);
}

void conn_break(memacct *m, int r) {
        if (m->fd >= 0) {
                close(m->fd);
                m->fd = -1;
        }
        m->rlen = 0;
        /* pending_done() may not push, so the queue stays put meanwhile. */
        while (m->qlen > 0) {
                Pending p = *queue_head(m);

                queue_pop(m);
                pending_done(m, &p, NULL, r);
        }
}

static void event_push(memacct *m, Response *resp) {
        if (!m->events) {
                m->events = calloc(CLIENT_MAX_EVENTS, sizeof(Response *));
                if (!m->events) {
                        memacct__v1__response__free_unpacked(resp, NULL);
                        return;
                }
        }
        if (m->ev_len == CLIENT_MAX_EVENTS) {
                /* Nobody reads them: drop the oldest. */
                memacct__v1__response__free_unpacked(m->events[m->ev_head], NULL);
                m->ev_head = (m->ev_head + 1) % CLIENT_MAX_EVENTS;
                m->ev_len--;
        }
        m->events[(m->ev_head + m->ev_len) % CLIENT_MAX_EVENTS] = resp;
        m->ev_len++;
}

/* One frame body. Return: 0, or -EPROTO (the connection must end). */
static int dispatch_frame(memacct *m, const uint8_t *body, size_t len) {
        Response *resp;
        Pending *head, p;

        resp = memacct__v1__response__unpack(NULL, len, body);
        if (!resp)
                return -EPROTO;
        if (!resp->has_id || resp->id == 0) {
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_EVENT) {
                        event_push(m, resp);
                        return 0;
                }
                /* Someone moved our session: a replay after a reconnect
                 * must re-attach there, not where we last attached. */
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_MOVED && resp->moved->path) {
                        char *copy = strdup(resp->moved->path);

                        if (copy) {
                                free(m->attached);
                                m->attached = copy;
                        }
                        memacct__v1__response__free_unpacked(resp, NULL);
                        return 0;
                }
                /* An unprompted error: the session ends after it. */
                if (resp->status != MEMACCT__V1__STATUS__OK) {
                        free(m->proto_error);
                        m->proto_error = strdup(resp->message ? resp->message : "protocol error");
                        m->proto_error_r = status_to_errno((MemStatus) resp->status);
                }
                memacct__v1__response__free_unpacked(resp, NULL);
                return 0;
        }
        head = queue_head(m);
        if (!head || head->id != resp->id) {
                memacct__v1__response__free_unpacked(resp, NULL);
                free(m->proto_error);
                m->proto_error = strdup("reply out of order");
                return -EPROTO;
        }
        p = *head;
        queue_pop(m);
        pending_done(m, &p, resp, 0);
        return 0;
}

/* Dispatch every whole frame in rbuf. Return: 0 or -EPROTO. */
static int dispatch_buffered(memacct *m) {
        size_t off = 0;
        int r = 0;

        while (off < m->rlen) {
                size_t body, prefix;

                r = frame_prefix_decode(m->rbuf + off, m->rlen - off, CLIENT_MAX_RESPONSE, &body,
                                        &prefix);
                if (r == -EAGAIN) {
                        r = 0;
                        break;
                }
                if (r < 0) {
                        r = -EPROTO;
                        break;
                }
                if (m->rlen - off - prefix < body)
                        break;
                r = dispatch_frame(m, m->rbuf + off + prefix, body);
                if (r < 0)
                        break;
                off += prefix + body;
                /* A handler may have broken the connection. */
                if (m->fd < 0)
                        return -ECONNRESET;
        }
        if (off > 0) {
                memmove(m->rbuf, m->rbuf + off, m->rlen - off);
                m->rlen -= off;
        }
        return r;
}

/* The error a broken connection reports: the server's protocol error if it
 * sent one, else a reset. */
/*
 * Before giving a connection up, read what the server sent before it
 * closed: a refusal (too many sessions for this uid) arrives and the
 * socket closes at once, and our own send may fail first. Data already
 * queued is readable even after the reset.
 */
static void conn_salvage(memacct *m) {
        if (m->rsize == 0) {
                uint8_t *b = malloc(65536);

                if (!b)
                        return;
                m->rbuf = b;
                m->rsize = 65536;
        }
        while (m->fd >= 0 && m->rsize - m->rlen > 0) {
                ssize_t n = recv(m->fd, m->rbuf + m->rlen, m->rsize - m->rlen, MSG_DONTWAIT);

                if (n <= 0)
                        break;
                m->rlen += (size_t) n;
                if (dispatch_buffered(m) < 0)
                        break;
        }
}

static int conn_fail(memacct *m, int r) {
        if (!m->proto_error)
                conn_salvage(m);
        /* The server said why (too many sessions, a bad frame): that, not
         * the reset that followed, is the error. */
        if (m->proto_error)
                r = m->proto_error_r < 0 ? m->proto_error_r : -EPROTO;
        else if (r != -EPROTO && r != -ETIMEDOUT)
                r = -ECONNRESET;
        conn_break(m, r);
        return r;
}

/* Read what has arrived and dispatch it. Return: 0 or a broken connection's error. */
static int conn_read(memacct *m) {
        for (;;) {
                ssize_t n;
                int r;

                if (m->fd < 0)
                        return -ECONNRESET;
                if (m->rsize - m->rlen < 4096) {
                        size_t size = m->rsize > 0 ? m->rsize * 2 : 65536;
                        uint8_t *b;

                        if (size > CLIENT_MAX_RESPONSE + 2 * FRAME_PREFIX_MAX + 65536)
                                return conn_fail(m, -EPROTO);
                        b = realloc(m->rbuf, size);
                        if (!b)
                                return conn_fail(m, -ENOMEM);
                        m->rbuf = b;
                        m->rsize = size;
                }
                n = recv(m->fd, m->rbuf + m->rlen, m->rsize - m->rlen, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return conn_fail(m, -errno);
                }
                if (n == 0)
                        return conn_fail(m, -ECONNRESET);
                m->rlen += (size_t) n;
                r = dispatch_buffered(m);
                if (r < 0)
                        return conn_fail(m, r);
        }
}

int conn_pump(memacct *m, int timeout_msec, bool (*done)(memacct *m, void *userdata),
              void *userdata) {
        uint64_t deadline = client_deadline_nsec(timeout_msec);

        for (;;) {
                struct pollfd pfd;
                int r, left;

                if (done && done(m, userdata))
                        return 1;
                r = conn_read(m);
                if (r < 0)
                        return r;
                if (done && done(m, userdata))
                        return 1;
                if (timeout_msec == 0)
                        return 0;
                left = client_deadline_left_msec(deadline);
                if (left == 0)
                        return -ETIMEDOUT;
                pfd = (struct pollfd) { .fd = m->fd, .events = POLLIN };
                r = poll(&pfd, 1, left);
                if (r < 0 && errno != EINTR)
                        return conn_fail(m, -errno);
        }
}

int conn_queue(memacct *m, Request *req, const Pending *p, uint8_t **buf, size_t *len,
               size_t *size) {
        uint8_t prefix[FRAME_PREFIX_MAX];
        size_t body, np, need;
        Pending q = *p;
        int r;

        /* Ids start at 1: id 0 is the server's for unsolicited frames. */
        q.id = ++m->next_id;
        req->has_id = true;
        req->id = q.id;
        body = memacct__v1__request__get_packed_size(req);
        if (m->max_frame > 0 && body > m->max_frame)
                return -EMSGSIZE;
        np = frame_prefix_encode((uint32_t) body, prefix);
        need = *len + np + body;
        if (need > *size) {
                size_t s = MAX(*size * 2, need);
                uint8_t *b = realloc(*buf, s);

                if (!b)
                        return -ENOMEM;
                *buf = b;
                *size = s;
        }
        r = queue_push(m, &q);
        if (r < 0)
                return r;
        memcpy(*buf + *len, prefix, np);
        memacct__v1__request__pack(req, *buf + *len + np);
        *len = need;
        return 0;
}

void conn_unqueue(memacct *m, size_t n) {
        assert(n <= m->qlen);
        m->qlen -= n;
        m->next_id -= n;
}

/* One send(msg) of @buf, with @fd_pass as SCM_RIGHTS if >= 0. */
static ssize_t send_some(int fd, const uint8_t *buf, size_t len, int fd_pass) {
        union {
                struct cmsghdr cmsg;
                uint8_t raw[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (fd_pass >= 0) {
                struct cmsghdr *c;

                msg.msg_control = control.raw;
                msg.msg_controllen = sizeof(control.raw);
                c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd_pass, sizeof(int));
        }
        return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int conn_write(memacct *m, const uint8_t *buf, size_t len, int fd_pass) {
        uint64_t deadline = client_deadline_nsec(m->timeout_msec > 0 ? (int) m->timeout_msec : -1);
        size_t off = 0;

        while (off < len) {
                struct pollfd pfd;
                ssize_t n;
                int r;

                if (m->fd < 0)
                        return -ECONNRESET;
                n = send_some(m->fd, buf + off, len - off, fd_pass);
                if (n > 0) {
                        off += (size_t) n;
                        fd_pass = -1; /* it went with the first byte */
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return conn_fail(m, -errno);
                /* Full: serve replies while waiting for room. */
                pfd = (struct pollfd) { .fd = m->fd, .events = POLLIN | POLLOUT };
                r = poll(&pfd, 1, client_deadline_left_msec(deadline));
                if (r == 0)
                        return conn_fail(m, -ETIMEDOUT);
                if (r < 0 && errno != EINTR)
                        return conn_fail(m, -errno);
                if (r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
                        r = conn_read(m);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int conn_send(memacct *m, Request *req, const Pending *p, int fd_pass) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len = 0, size = 0;
        int r;

        if (m->fd < 0)
                return -ECONNRESET;
        r = conn_queue(m, req, p, &buf, &len, &size);
        if (r < 0)
                return r;
        return conn_write(m, buf, len, fd_pass);
}
