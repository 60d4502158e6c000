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
 * Each awaited reply is answered through the completion callback its
 * request was queued with, and unsolicited frames with a result go to the
 * callback given at conn_init(): the connection never calls into the
 * handle, the batches or the stock, which all call into it.
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

#include "client-conn.h"
#include "client-deadline.h"
#include "frame.h"
#include "macro.h"
#include "status.h"

void conn_init(Conn *c, ConnFrameFn on_frame, void *userdata) {
        *c = (Conn) { .fd = -1, .on_frame = on_frame, .userdata = userdata };
}

void conn_done(Conn *c) {
        conn_break(c, -ECONNRESET);
        free(c->proto_error);
        free(c->rbuf);
        free(c->queue);
        *c = (Conn) { .fd = -1 };
}

int conn_open(Conn *c, const char *socket_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(socket_path);
        int fd, flags;

        if (n == 0 || n >= sizeof(sa.sun_path))
                return -EINVAL;
        memcpy(sa.sun_path, socket_path, n);

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
        c->fd = fd;
        c->rlen = 0;
        free(c->proto_error);
        c->proto_error = NULL;
        c->proto_error_r = 0;
        return 0;
}

static ConnPending *queue_head(Conn *c) {
        return c->qlen > 0 ? &c->queue[c->qhead] : NULL;
}

static void queue_pop(Conn *c) {
        c->qhead = (c->qhead + 1) % c->qsize;
        c->qlen--;
}

static int queue_push(Conn *c, const ConnPending *p) {
        if (c->qlen == c->qsize) {
                size_t size = c->qsize > 0 ? c->qsize * 2 : 64;
                ConnPending *q = calloc(size, sizeof(*q));

                if (!q)
                        return -ENOMEM;
                for (size_t i = 0; i < c->qlen; i++)
                        q[i] = c->queue[(c->qhead + i) % c->qsize];
                free(c->queue);
                c->queue = q;
                c->qsize = size;
                c->qhead = 0;
        }
        c->queue[(c->qhead + c->qlen) % c->qsize] = *p;
        c->qlen++;
        return 0;
}

void conn_break(Conn *c, int r) {
        if (c->fd >= 0) {
                close(c->fd);
                c->fd = -1;
        }
        c->rlen = 0;
        /* A callback may not queue, so the queue stays put meanwhile. */
        while (c->qlen > 0) {
                ConnPending p = *queue_head(c);

                queue_pop(c);
                p.done(&p, NULL, r);
        }
}

/* One frame body. Return: 0, or -EPROTO (the connection must end). */
static int dispatch_frame(Conn *c, const uint8_t *body, size_t len) {
        Response *resp;
        ConnPending *head, p;

        resp = memacct__v1__response__unpack(NULL, len, body);
        if (!resp)
                return -EPROTO;
        if (!resp->has_id || resp->id == 0) {
                if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT__NOT_SET) {
                        c->on_frame(c->userdata, resp);
                        return 0;
                }
                /* An unprompted error: the session ends after it. */
                if (resp->status != MEMACCT__V1__STATUS__STATUS_OK) {
                        free(c->proto_error);
                        c->proto_error = strdup(resp->message ? resp->message : "protocol error");
                        c->proto_error_r = status_to_errno((MemStatus) resp->status);
                }
                memacct__v1__response__free_unpacked(resp, NULL);
                return 0;
        }
        head = queue_head(c);
        if (!head || head->id != resp->id) {
                memacct__v1__response__free_unpacked(resp, NULL);
                free(c->proto_error);
                c->proto_error = strdup("reply out of order");
                return -EPROTO;
        }
        p = *head;
        queue_pop(c);
        p.done(&p, resp, 0);
        return 0;
}

/* Dispatch every whole frame in rbuf. Return: 0 or -EPROTO. */
static int dispatch_buffered(Conn *c) {
        size_t off = 0;
        int r = 0;

        while (off < c->rlen) {
                size_t body, prefix;

                r = frame_prefix_decode(c->rbuf + off, c->rlen - off, CLIENT_MAX_RESPONSE, &body,
                                        &prefix);
                if (r == -EAGAIN) {
                        r = 0;
                        break;
                }
                if (r < 0) {
                        r = -EPROTO;
                        break;
                }
                if (c->rlen - off - prefix < body)
                        break;
                r = dispatch_frame(c, c->rbuf + off + prefix, body);
                if (r < 0)
                        break;
                off += prefix + body;
                /* A handler may have broken the connection. */
                if (c->fd < 0)
                        return -ECONNRESET;
        }
        if (off > 0) {
                memmove(c->rbuf, c->rbuf + off, c->rlen - off);
                c->rlen -= off;
        }
        return r;
}

/*
 * Before giving a connection up, read what the server sent before it
 * closed: a refusal (too many sessions for this uid) arrives and the
 * socket closes at once, and our own send may fail first. Data already
 * queued is readable even after the reset.
 */
static void conn_salvage(Conn *c) {
        if (c->rsize == 0) {
                uint8_t *b = malloc(65536);

                if (!b)
                        return;
                c->rbuf = b;
                c->rsize = 65536;
        }
        while (c->fd >= 0 && c->rsize - c->rlen > 0) {
                ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rsize - c->rlen, MSG_DONTWAIT);

                if (n <= 0)
                        break;
                c->rlen += (size_t) n;
                if (dispatch_buffered(c) < 0)
                        break;
        }
}

/* Break the connection with the error it reports: the server's protocol
 * error if it sent one, else a reset (or @r's own -EPROTO or -ETIMEDOUT). */
static int conn_fail(Conn *c, int r) {
        if (!c->proto_error)
                conn_salvage(c);
        /* The server said why (too many sessions, a bad frame): that, not
         * the reset that followed, is the error. */
        if (c->proto_error)
                r = c->proto_error_r < 0 ? c->proto_error_r : -EPROTO;
        else if (r != -EPROTO && r != -ETIMEDOUT)
                r = -ECONNRESET;
        conn_break(c, r);
        return r;
}

/* Read what has arrived and dispatch it. Return: 0 or a broken connection's error. */
static int conn_read(Conn *c) {
        for (;;) {
                ssize_t n;
                int r;

                if (c->fd < 0)
                        return -ECONNRESET;
                if (c->rsize - c->rlen < 4096) {
                        size_t size = c->rsize > 0 ? c->rsize * 2 : 65536;
                        uint8_t *b;

                        if (size > CLIENT_MAX_RESPONSE + 2 * FRAME_PREFIX_MAX + 65536)
                                return conn_fail(c, -EPROTO);
                        b = realloc(c->rbuf, size);
                        if (!b)
                                return conn_fail(c, -ENOMEM);
                        c->rbuf = b;
                        c->rsize = size;
                }
                n = recv(c->fd, c->rbuf + c->rlen, c->rsize - c->rlen, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return conn_fail(c, -errno);
                }
                if (n == 0)
                        return conn_fail(c, -ECONNRESET);
                c->rlen += (size_t) n;
                r = dispatch_buffered(c);
                if (r < 0)
                        return conn_fail(c, r);
        }
}

int conn_pump(Conn *c, int timeout_msec, bool (*done)(void *userdata), void *userdata) {
        uint64_t deadline = client_deadline_nsec(timeout_msec);

        for (;;) {
                struct pollfd pfd;
                int r, left;

                if (done && done(userdata))
                        return 1;
                r = conn_read(c);
                if (r < 0)
                        return r;
                if (done && done(userdata))
                        return 1;
                if (timeout_msec == 0)
                        return 0;
                left = client_deadline_left_msec(deadline);
                if (left == 0)
                        return -ETIMEDOUT;
                pfd = (struct pollfd) { .fd = c->fd, .events = POLLIN };
                r = poll(&pfd, 1, left);
                if (r < 0 && errno != EINTR)
                        return conn_fail(c, -errno);
        }
}

int conn_queue(Conn *c, Request *req, const ConnPending *p, uint8_t **buf, size_t *len,
               size_t *size) {
        uint8_t prefix[FRAME_PREFIX_MAX];
        size_t body, np, need;
        ConnPending q = *p;
        int r;

        /* Ids start at 1: id 0 is the server's for unsolicited frames. */
        q.id = ++c->next_id;
        req->has_id = true;
        req->id = q.id;
        body = memacct__v1__request__get_packed_size(req);
        if (c->max_frame > 0 && body > c->max_frame)
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
        r = queue_push(c, &q);
        if (r < 0)
                return r;
        memcpy(*buf + *len, prefix, np);
        memacct__v1__request__pack(req, *buf + *len + np);
        *len = need;
        return 0;
}

void conn_unqueue(Conn *c, size_t n) {
        assert(n <= c->qlen);
        c->qlen -= n;
        c->next_id -= n;
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

int conn_write(Conn *c, const uint8_t *buf, size_t len, int fd_pass, int timeout_msec) {
        uint64_t deadline = client_deadline_nsec(timeout_msec);
        size_t off = 0;

        while (off < len) {
                struct pollfd pfd;
                ssize_t n;
                int r;

                if (c->fd < 0)
                        return -ECONNRESET;
                n = send_some(c->fd, buf + off, len - off, fd_pass);
                if (n > 0) {
                        off += (size_t) n;
                        fd_pass = -1; /* it went with the first byte */
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return conn_fail(c, -errno);
                /* Full: serve replies while waiting for room. */
                pfd = (struct pollfd) { .fd = c->fd, .events = POLLIN | POLLOUT };
                r = poll(&pfd, 1, client_deadline_left_msec(deadline));
                if (r == 0)
                        return conn_fail(c, -ETIMEDOUT);
                if (r < 0 && errno != EINTR)
                        return conn_fail(c, -errno);
                if (r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
                        r = conn_read(c);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int conn_send(Conn *c, Request *req, const ConnPending *p, int fd_pass, int timeout_msec) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len = 0, size = 0;
        int r;

        if (c->fd < 0)
                return -ECONNRESET;
        r = conn_queue(c, req, p, &buf, &len, &size);
        if (r < 0)
                return r;
        return conn_write(c, buf, len, fd_pass, timeout_msec);
}
