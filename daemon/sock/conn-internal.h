/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the two halves of a socket connection share: conn.c (reading,
 * framing, serving, writing, held replies, timeouts) and conn-open.c
 * (setting one up, its identity), conn-push.c (events pushed to it) and
 * conn-host.c (the host's duties).
 */

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "clock.h"
#include "sock/conn.h"
#include "sock/held.h"

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
        bool reclaim_wait;        /* the frame at the input's start waits for reclaim (REQUEST_WAIT) */
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

static inline uint64_t now_usec(void) {
        /* Timeouts are seconds: the coarse clock (a vDSO read, no
         * syscall) is precise enough and costs nothing per read. */
        return clock_now_usec(CLOCK_MONOTONIC_COARSE);
}

/* Output waiting for the client grew or shrank by @n bytes (any thread). */
void conn_output_add(SockConn *c, size_t n);
void conn_output_sub(SockConn *c, size_t n);

/** conn_events_new() - the connection's read, write and timer events on its host's base. Return: 0, -ENOMEM. */
int conn_events_new(SockConn *c);

/** conn_release() - move out what may go of its held replies (after a save). */
void conn_release(SockConn *c);

/** conn_set_eof() - no more input: serve what is buffered, write, close within @grace_usec. */
void conn_set_eof(SockConn *c, uint64_t grace_usec);

/**
 * conn_update() - after every callback: write, serve frames that waited,
 * close a connection that is done, set the events it waits for. May free @c.
 */
void conn_update(SockConn *c);

/** conn_free() - unlink and free @c: its session ends, its charges are released. */
void conn_free(SockConn *c);
