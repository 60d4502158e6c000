/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One client connection of the protobuf socket: reading, framing, writing,
 * the per-connection bounds and timeouts (conn.c), opening one
 * (conn-open.c), events pushed to it from other threads (conn-push.c),
 * and its host's duties over all its connections (conn-host.c). Every
 * connection lives on one worker thread (its "host") and is touched only
 * there, except through its push function.
 */

#include <stdbool.h>
#include <stdint.h>

#include "service/service.h"

struct event;
struct event_base;
struct evbuffer;

/* The bounds each connection enforces ([limits] in memacctd.conf). */
typedef struct SockLimits {
        uint32_t max_frame;        /* bytes in one frame body */
        unsigned max_outstanding;  /* reading pauses while this many responses are unwritten */
        uint64_t max_output;       /* reading pauses while more bytes than this are unwritten */
        unsigned idle_timeout_sec; /* 0: none */
        unsigned frame_timeout_sec; /* a half-received frame may wait this long; 0: forever */
} SockLimits;

/* The event priorities of a worker's base: root's connections run first. */
#define SOCK_PRIORITY_ROOT 0
#define SOCK_PRIORITY_OTHERS 1

typedef struct SockConn SockConn;
typedef struct SockConnHost SockConnHost;

/*
 * What connections need from the worker thread that serves them. Owned
 * by that thread: nothing here is touched from another thread.
 */
struct SockConnHost {
        struct event_base *base;
        Service *service;
        SockLimits limits;

        /* Reads land here first; a connection allocates its own buffer
         * only while it holds part of a frame. */
        uint8_t *scratch;
        size_t scratch_size;

        SockConn *conns; /* every connection of this host */
        unsigned nconns;
        bool draining;   /* shutting down: no new connections */

        /* Replies are encoded here first, then go out or are held. */
        struct evbuffer *reply;
        /* Connections holding replies until a change is saved, and the
         * event the saver activates after every save. */
        SockConn *waiting;
        struct event *ev_durable;

        /* Called after a connection was freed. */
        void (*conn_gone)(SockConnHost *host);
};

/**
 * sock_conn_new() - serve the accepted socket @fd on @host: read its peer's
 * credentials (SO_PEERCRED), count the connection for its uid
 * (service_connection_open()) and open a service peer with its session.
 * When the uid has too many connections or sessions, or all uids but
 * root too many connections (-EUSERS), the peer gets one
 * RESOURCE_EXHAUSTED response naming the bound and the socket is closed.
 * Takes @fd in every case. On @host's thread, which is registered with
 * the core.
 *
 * Return: 0 (serving, or refused as above); a negative errno when the
 * connection could not be set up (logged; @fd closed).
 */
int sock_conn_new(SockConnHost *host, int fd);

/**
 * sock_host_init() - the host's own buffer and its saver event, on @host->base.
 * Return: 0, -ENOMEM.
 */
int sock_host_init(SockConnHost *host);

/** sock_host_done() - free what sock_host_init() made; every connection is gone. */
void sock_host_done(SockConnHost *host);

/**
 * sock_host_saved() - a SaverWakeFn (service_add_durable_waker()): a
 * save ended; @userdata is the host. Any thread: it wakes the host's loop,
 * which releases the replies that waited for it.
 */
void sock_host_saved(void *userdata);

/**
 * sock_host_drain() - shutdown: every connection of @host stops reading,
 * answers the complete frames it already read, writes its output, and
 * closes; a connection still writing after @grace_usec is closed anyway.
 * conn_gone() reports each one that goes.
 */
void sock_host_drain(SockConnHost *host, uint64_t grace_usec);

/** sock_host_close_all() - free every connection of @host now. */
void sock_host_close_all(SockConnHost *host);

/** sock_host_limits_changed() - @host->limits was changed: apply it to every connection. */
void sock_host_limits_changed(SockConnHost *host);
