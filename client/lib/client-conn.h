/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The connection to memacctd's socket: frames out, frames in, and the
 * queue of replies awaited. It knows nothing of the handle above it: each
 * awaited reply carries a completion callback, and unsolicited frames go
 * to a callback given at conn_init(), so the dependency goes one way.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memacct.pb-c.h"

typedef Memacct__V1__Request Request;
typedef Memacct__V1__Response Response;

/* The largest response body accepted (a whole subtree's GroupList). */
#define CLIENT_MAX_RESPONSE (16u * 1024 * 1024)

typedef struct ConnPending ConnPending;

/*
 * The outcome of one awaited reply, called once per conn_queue()d request,
 * with whatever lock serialises the connection held: @resp, which is now
 * the callback's to free, or NULL when the connection broke first and @r
 * says why. It must not queue a request: conn_break() is walking the queue.
 */
typedef void (*ConnReplyFn)(const ConnPending *p, Response *resp, int r);

/*
 * An unsolicited frame (id 0) that carries a result (an event, a Moved),
 * now the callback's to free. The id-0 frames without one are the
 * server's errors, which the connection keeps itself (Conn.proto_error).
 */
typedef void (*ConnFrameFn)(void *userdata, Response *resp);

struct ConnPending {
        ConnReplyFn done;
        void *userdata;
        /* The caller's, for @done: which item or operation, how many bytes. */
        size_t index;
        uint64_t bytes;
        uint64_t id; /* set by conn_queue() */
};

typedef struct Conn {
        int fd; /* -1: broken or not open */
        /* The server's last id-0 error message, and its status as an
         * errno: why the server ended the session. */
        char *proto_error;
        int proto_error_r;
        uint32_t max_frame; /* the largest request body (HelloReply); 0: no limit */

        uint8_t *rbuf;
        size_t rlen, rsize;

        ConnPending *queue; /* replies awaited, in request order (a ring) */
        size_t qhead, qlen, qsize;
        uint64_t next_id;

        ConnFrameFn on_frame;
        void *userdata;
} Conn;

/** conn_init() - a connection not open yet; @on_frame gets its unsolicited frames. */
void conn_init(Conn *c, ConnFrameFn on_frame, void *userdata);

/** conn_done() - conn_break() with -ECONNRESET and free what @c holds. */
void conn_done(Conn *c);

/**
 * conn_open() - connect @socket_path (blocking connect, then
 * non-blocking), forgetting the last connection's error.
 * Return: 0 or -errno.
 */
int conn_open(Conn *c, const char *socket_path);

/** conn_break() - close the socket and fail every awaited reply with @r. */
void conn_break(Conn *c, int r);

/**
 * conn_queue() - append @req as a frame to @buf (grown as needed), with a
 * new id, and record @p as awaiting its reply.
 * Return: 0; -EMSGSIZE; -ENOMEM.
 */
int conn_queue(Conn *c, Request *req, const ConnPending *p, uint8_t **buf, size_t *len,
               size_t *size);

/** conn_unqueue() - forget the last @n conn_queue()d requests, never written. */
void conn_unqueue(Conn *c, size_t n);

/**
 * conn_write() - write @len bytes, passing @fd_pass (or -1) with the first
 * byte, reading and dispatching replies whenever the socket is full, for at
 * most @timeout_msec (-1: no limit).
 * Return: 0; -ECONNRESET (the connection broke: conn_break() was called);
 * -ETIMEDOUT.
 */
int conn_write(Conn *c, const uint8_t *buf, size_t len, int fd_pass, int timeout_msec);

/**
 * conn_send() - conn_queue() and conn_write() of one request.
 * Return: as both.
 */
int conn_send(Conn *c, Request *req, const ConnPending *p, int fd_pass, int timeout_msec);

/**
 * conn_pump() - read and dispatch replies until @done returns true.
 * @timeout_msec: 0: only what has arrived; -1: no limit
 * @done: NULL: until nothing more is readable (with timeout 0)
 *
 * Return: 1 (@done), 0 (nothing more to read, timeout 0), -ETIMEDOUT,
 * -ECONNRESET, -EPROTO (the connection broke: conn_break() was called).
 */
int conn_pump(Conn *c, int timeout_msec, bool (*done)(void *userdata), void *userdata);
