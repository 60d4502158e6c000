/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The request rules every transport applies the same way: who may do what
 * to which group (cgroup delegation), how a named group or a stat item is
 * looked up, and the words a refusal or failure is reported in. The socket
 * (dispatch.c) and the bus (bus-manager.c) both call these, so that the
 * same request gets the same answer, to the letter, on either.
 *
 * Messages go into a caller's buffer of AUTHZ_MESSAGE_MAX bytes; the errno
 * returned beside them is mapped to a wire status or a D-Bus error name by
 * proto/status.c. Nothing here keeps state: any thread, under the caller's
 * references to the groups it passes.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "session.h"

#define AUTHZ_MESSAGE_MAX 512

/*
 * The words of the other failures both transports report (printf formats,
 * each with its arguments), so that the same failure reads the same on
 * either, to the letter.
 */
#define AUTHZ_MSG_MAX_BELOW_USAGE "%s: usage is above the new max (use force)"  /* group */
#define AUTHZ_MSG_REMOVE_BUSY "%s: group has children or attached sessions"     /* path */
#define AUTHZ_MSG_LIST_TOO_LARGE "%s: too many groups for one reply; list a subtree" /* path */
/* group, bytes (unsigned long long), stat item, HELD_BY_GROUP or HELD_BY_SESSION */
#define AUTHZ_MSG_UNCHARGE_RANGE "%s: uncharge of %llu %s bytes is more than %s"
#define AUTHZ_MSG_HELD_BY_GROUP "the group keeps"
#define AUTHZ_MSG_HELD_BY_SESSION "the session holds"
#define AUTHZ_MSG_ATTACH_BUSY "the session holds charges; move it instead"
#define AUTHZ_MSG_MOVE_DENIED "only root moves other processes"
#define AUTHZ_MSG_NO_CLIENT "pid %d has no session"              /* pid */
#define AUTHZ_MSG_CLIENT_DENIED "pid %d: permission denied"      /* pid */
#define AUTHZ_MSG_OUT_OF_MEMORY "out of memory"

/* The limits a create or set-limits request gives; the has_* ones are set. */
typedef struct AuthzLimits {
        bool has_max, has_high, has_low, has_min;
        uint64_t max, high, low, min;
} AuthzLimits;

typedef enum ReadAccess {
        READ_ACCESS_ALL,   /* everyone may read every group (the default) */
        READ_ACCESS_OWNER, /* a uid reads only subtrees delegated to it */
        READ_ACCESS_ROOT,  /* only root reads */
        _READ_ACCESS_MAX,
        _READ_ACCESS_INVALID = -EINVAL,
} ReadAccess;

/** authz_may_read() - may @uid read @g (show, list, properties, events)? */
bool authz_may_read(ReadAccess access, uid_t uid, MemGroup *g);

/** authz_may_use() - may @uid charge @g, attach to it, move into it: the delegated group and below. */
bool authz_may_use(uid_t uid, MemGroup *g);

/** authz_may_modify() - may @uid remove @g or set its limits: strictly below a delegated group. */
bool authz_may_modify(uid_t uid, MemGroup *g);

/** authz_may_reset_peak() - may @uid reset @g's peak: modify rights, or @g delegated to @uid itself. */
bool authz_may_reset_peak(uid_t uid, MemGroup *g);

/** authz_may_read_client() - may @uid (of pid @self) read the counters of pid @pid? */
bool authz_may_read_client(ReadAccess access, uid_t uid, pid_t self, pid_t pid);

/** authz_may_move() - may @uid (of pid @self) move the sessions of pid @pid (0: its own)? */
bool authz_may_move(uid_t uid, pid_t self, pid_t pid);

/** authz_errno_text() - the words for a core error, "no such group" etc. */
const char *authz_errno_text(int r);

/**
 * authz_path_message() - "PATH: why" for error @r about @path (NULL
 * allowed): the precise violation for a malformed path, else
 * authz_errno_text(). Return: @r.
 */
int authz_path_message(int r, const char *path, char *msg, size_t size);

/** authz_denied_message() - "PATH: permission denied". Return: -EPERM. */
int authz_denied_message(const char *path, char *msg, size_t size);

/**
 * authz_refused_message() - the message of a charge or move a max
 * refused: "PATH: limit exceeded (max of REFUSER)". Return: -EDQUOT.
 */
int authz_refused_message(const char *path, const MemChargeResult *res, char *msg, size_t size);

/**
 * authz_lookup() - @path, looked up with a reference.
 * Return: 0; -EINVAL (empty or malformed), -ENAMETOOLONG, -EMLINK or
 * -ENOENT, with the message in @msg.
 */
int authz_lookup(MemCore *core, const char *path, MemGroup **ret, char *msg, size_t size);

/**
 * authz_lookup_use() - @path, looked up with a reference, for @uid to
 * charge, attach to or move into (authz_may_use()).
 * Return: 0; an authz_lookup() error or -EPERM, with the message in @msg
 * and no reference taken.
 */
int authz_lookup_use(MemCore *core, uid_t uid, const char *path, MemGroup **ret, char *msg, size_t size);

/**
 * authz_parse_stat() - a stat item by name; NULL or "" is anon.
 * Return: 0, or -EINVAL with the message in @msg.
 */
int authz_parse_stat(const char *s, MemStatItem *ret, char *msg, size_t size);

/**
 * authz_check_create() - may @uid create @path, and who will own it.
 * @has_owner, @owner: the owner asked for; without one, the creator
 *                     (root creates root-owned groups)
 *
 * Return: 0 and *@ret_owner; or, with the message in @msg, a path error,
 * -EEXIST ("/"), -ENOENT (no parent), -EPERM.
 */
int authz_check_create(MemCore *core, uid_t uid, const char *path, bool has_owner, uid_t owner,
                       uid_t *ret_owner, char *msg, size_t size);

/**
 * authz_apply_limits() - set the limits @l gives on @g: max first, and
 * nothing else when it is refused, so that a refused request changes
 * nothing. @force: lower max below the usage (group_set_max()).
 *
 * Return: 0; the group_set_max() error, with the message in @msg.
 */
int authz_apply_limits(MemGroup *g, const AuthzLimits *l, bool force, char *msg, size_t size);

/**
 * authz_session_target() - the group a session charge of @uid goes to:
 * the one @s is attached to, or, when it is not attached yet, @path (the
 * session attaches to it). @path NULL or "" means "the attached group".
 * Called on the thread that owns @s.
 *
 * Return: 0 with a reference in *@ret; or, with the message in @msg,
 * -ENOTCONN, -EINVAL (attached elsewhere), a lookup error, -EPERM.
 */
int authz_session_target(MemCore *core, MemSession *s, uid_t uid, const char *path, MemGroup **ret,
                         char *msg, size_t size);

/**
 * authz_list_collect() - the groups a list of @top covers, each with a
 * reference: when @recursive, @top and everything below it, else @top's
 * children. Groups the caller may not read are included: each transport
 * filters with authz_may_read() for its peer. Any thread, under the
 * caller's reference to @top; it walks the tree in core_read_lock().
 *
 * Return: 0, with the array in *@ret (group_unref() each, then free() it)
 * and its length in *@ret_n; -ENOMEM, with nothing to free.
 */
int authz_list_collect(MemGroup *top, bool recursive, MemGroup ***ret, size_t *ret_n);
