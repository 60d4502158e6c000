/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Request dispatch for the protobuf socket: one decoded Request, one
 * authorisation decision, one core call, one encoded Response. No socket
 * I/O here: the connection layer (sock-*.c) owns file descriptors, buffers
 * and event loops, and hands whole frame bodies in.
 */

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "authz.h"
#include "core.h"
#include "session.h"

typedef struct Dispatch Dispatch;
typedef struct DispatchConn DispatchConn;

const char *read_access_to_string(ReadAccess a);
ReadAccess read_access_from_string(const char *s);

typedef struct DispatchLimits {
        uint32_t max_frame;            /* bytes in one frame body */
        uint64_t charge_batch;         /* the largest stock refill clients should ask for */
        unsigned max_sessions_per_uid; /* 0: unlimited; root is never limited */
        ReadAccess read_access;
} DispatchLimits;

/*
 * Pushes an unsolicited frame (an event of a subscription) to a
 * connection. Called from whatever thread raised the event, never with a
 * core lock held that the connection's own thread could need; it must
 * queue the frame and wake the connection's worker. @frame includes its
 * length prefix.
 */
typedef void (*DispatchPushFn)(void *conn_userdata, const uint8_t *frame, size_t len);

/*
 * Called after every change that persistence must save (groups, limits,
 * owners, kept charges), from the thread that made it.
 */
typedef void (*DispatchChangedFn)(void *userdata);

/**
 * dispatch_new() - the dispatch state for @core. Installs the core's event
 * hook (for subscriptions). Return: 0 or -ENOMEM.
 */
int dispatch_new(MemCore *core, const DispatchLimits *limits, DispatchChangedFn changed,
                 void *changed_userdata, Dispatch **ret);
Dispatch *dispatch_free(Dispatch *d);

/** dispatch_set_limits() - SIGHUP: new limits for requests from now on. */
void dispatch_set_limits(Dispatch *d, const DispatchLimits *limits);

/** dispatch_read_access() - who may read, as configured now; any thread. */
ReadAccess dispatch_read_access(Dispatch *d);

/**
 * dispatch_set_event_sink() - a second consumer of the core's events
 * (dispatch owns the core's one hook): @sink is called after the socket
 * subscribers have been served, on the thread that raised the event,
 * under the same rules as a MemEventHook (no waiting, no grace period).
 * Set it, or clear it with NULL, while no other thread uses the core.
 */
void dispatch_set_event_sink(Dispatch *d, MemEventHook sink, void *userdata);

/*
 * The kernel cgroup mirror (cgroup-sync.c), reached through these so that
 * dispatch links no libcgroup. Both return what cgroup_sync_import() and
 * cgroup_sync_place() do, with the message in @msg (AUTHZ_MESSAGE_MAX).
 */
typedef struct DispatchCgroupOps {
        int (*import)(void *userdata, const char *from, const char *under, unsigned ret_counts[3],
                      char *msg, size_t size);
        int (*place)(void *userdata, pid_t pid, char *ret_path, size_t path_size, bool *ret_changed,
                     char *msg, size_t size);
        void *userdata;
} DispatchCgroupOps;

/**
 * dispatch_set_cgroup_ops() - install the cgroup mirror (NULL: none; then
 * ImportCgroups and Attach "auto" fail with NOT_FOUND). Before other
 * threads use @d.
 */
void dispatch_set_cgroup_ops(Dispatch *d, const DispatchCgroupOps *ops);

/**
 * dispatch_cgroup_import() - ImportCgroups for @uid (root only), on any
 * transport; a change is saved. Return: >= 0 with the created, updated
 * and unchanged counts in @ret_counts; or a negative errno with the
 * message in @msg (-EPERM for non-root, -ENOENT without a mirror).
 */
int dispatch_cgroup_import(Dispatch *d, uid_t uid, const char *from, const char *under,
                           unsigned ret_counts[3], char *msg, size_t size);

/**
 * dispatch_attach_path() - the group an Attach of @path means for peer
 * @pid: @path itself, or, for "" and "auto", the mirror of @pid's kernel
 * memory cgroup (dispatch_set_cgroup_ops()). @buf holds the result when
 * it is not @path. Return: 0 with *@ret set; or a negative errno with the
 * message in @msg.
 */
int dispatch_attach_path(Dispatch *d, pid_t pid, const char *path, char *buf, size_t buf_size,
                         const char **ret, char *msg, size_t size);

/** dispatch_session_count() - sessions open now, on every transport; any thread. */
unsigned dispatch_session_count(Dispatch *d);

/**
 * dispatch_conn_new() - a session for a peer the kernel identified
 * (SO_PEERCRED). Called on the worker thread that will serve it, which
 * must be registered with the core.
 * @push: how events reach this connection; @conn_userdata is passed to it
 *
 * Return: 0; -EUSERS (sessions per uid reached: refuse the connection);
 * -ENOMEM.
 */
int dispatch_conn_new(Dispatch *d, pid_t pid, uid_t uid, gid_t gid, DispatchPushFn push,
                      void *conn_userdata, DispatchConn **ret);

/**
 * dispatch_conn_session() - the core session of @c, for a transport that
 * serves requests of its own (the bus) on @c's thread.
 */
MemSession *dispatch_conn_session(DispatchConn *c);

/**
 * dispatch_conn_free() - end the session: its subscriptions stop (no push
 * after this returns), everything it holds is uncharged, its stock page
 * unmapped. On the connection's worker thread.
 */
DispatchConn *dispatch_conn_free(DispatchConn *c);

/**
 * dispatch_frame() - serve one frame body: decode a Request, authorise,
 * call the core, and append exactly one framed Response (prefix + body) to
 * @out.
 * @fd: a file descriptor that arrived with the frame (SCM_RIGHTS), or -1.
 *      Ownership passes to dispatch in every case.
 *
 * Return: 0, or -EPROTO when the request was malformed: the PROTOCOL_ERROR
 * response is in @out, and the connection must end once it is written.
 */
int dispatch_frame(DispatchConn *c, const uint8_t *body, size_t len, int fd, struct evbuffer *out);

/**
 * dispatch_protocol_error() - append the PROTOCOL_ERROR response (id 0) for
 * a framing error the connection layer found (bad varint, frame over the
 * limit, half frame timed out) with @message. The connection then ends.
 */
void dispatch_protocol_error(DispatchConn *c, const char *message, struct evbuffer *out);
