/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMACCT_H
#define MEMACCT_H

/*
 * libmemacct - the client library of memacctd
 *
 * memacctd keeps cgroup-v2-style hierarchical memory accounting in
 * userspace: groups with max/high/low/min, usage, peak, events and stats.
 * This library speaks its protobuf socket (or its D-Bus interface, see
 * "D-Bus" below); no protobuf type leaks into this
 * header, and every declaration is C89 and usable from C++.
 *
 * Errors.  Every function that can fail returns an int: >= 0 on success, a
 * negative errno on failure. The daemon's wire status maps to errno as
 * follows: INVALID_ARGUMENT -EINVAL, NOT_FOUND -ENOENT, EXISTS -EEXIST,
 * BUSY -EBUSY, LIMIT_EXCEEDED -EDQUOT, UNDERFLOW -ERANGE,
 * PERMISSION_DENIED -EPERM, RESOURCE_EXHAUSTED -ENOSPC, PROTOCOL_ERROR
 * -EPROTO, NOT_ATTACHED -ENOTCONN, INTERNAL -EIO. Transport failures are
 * -ECONNREFUSED, -ENOENT (no socket), -ECONNRESET (the daemon went away and
 * could not be reached again, or went away while a non-repeatable request
 * was in flight), -ETIMEDOUT. memacct_last_error() and
 * memacct_refused_path() tell more about the last failure.
 *
 * Sessions.  A handle is one connection, which the daemon calls a session.
 * A session is attached to at most one group (memacct_attach()); charges
 * without a path and without MEMACCT_KEEP go to that group and belong to
 * the session: the daemon releases them when the session ends, however it
 * ends. Charges with MEMACCT_KEEP belong to the group named by their path,
 * survive the session and a daemon restart, and are released only by an
 * explicit uncharge or by removing the group.
 *
 * The charge stock.  memacct-stock.h: the kernel's per-cpu charge stock
 * across the IPC boundary, and what it over-charges.
 *
 * Daemon restart.  When the connection breaks (EOF, ECONNRESET, EPIPE), the
 * next call that notices reconnects (a bounded number of attempts with
 * backoff, see memacct_set_reconnect()), attaches the new session to the
 * group it was last attached or moved to (the daemon says so with a Moved
 * frame), sets the stock up again, re-subscribes, and charges again
 * everything the old session held for the caller, forced past max when
 * the caller is root and a plain charge otherwise (the
 * bytes handed out by the stock and the session's exact charges; the unused
 * stock is not replayed). The result is reported to the callback of
 * memacct_set_reconnect_callback(). A request in flight when the
 * connection broke is sent again if repeating it is harmless (session
 * charges, queries, attach, limits); a create, remove or kept charge fails
 * with -ECONNRESET instead, since the daemon may have applied it.
 *
 * Thread safety.  A handle may be shared by threads: every function may be
 * called concurrently on one handle, except memacct_close(), which must be
 * the last call. The stocked fast path takes no lock; everything that
 * touches the socket (or, on a bus handle, the sd-bus connection, which is
 * not thread-safe itself) holds the handle's mutex (a slow synchronous call
 * delays other threads' calls on the same handle, never their stocked
 * charges the page can cover). memacct_next_event() does not hold the mutex
 * while it sleeps. A memacct_batch belongs to one thread. Error details
 * (memacct_last_error(), memacct_refused_path()) are kept per thread. For
 * stocked charges from many threads at high rates, give each thread its own
 * handle: threads sharing one handle share one page, whose cache line then
 * bounces between CPUs. If threads charge through the stock while a
 * reconnect runs, a charge taken from the old page at that very moment may
 * be missing from the replay.
 *
 * Signals.  The library never raises SIGPIPE (it sends with MSG_NOSIGNAL).
 *
 * D-Bus.  memacct_connect_bus() returns a handle that reaches the daemon
 * over D-Bus (org.memacct1(5)) instead of the socket; every call then
 * behaves, succeeds and fails as on the socket, with these differences:
 * the session is the bus connection (its charges without MEMACCT_KEEP are
 * released when the handle is closed or the process ends, which leaves the
 * bus); the charge stock (memacct_charge_stocked(),
 * memacct_uncharge_stocked(), memacct_stock_drain(), memacct_stock_get()),
 * batches (memacct_batch_begin()), MEMACCT_FORCE on a charge and a reclaim
 * root other than "/" have no bus form and fail with -EOPNOTSUPP; a group's
 * owner, nr_children, nr_sessions, kept and session read
 * MEMACCT_NO_OWNER and 0 from a daemon without the properties that carry
 * them (Owner, NChildren, NSessions, MemoryKept, MemorySession); a
 * charge's margin reads
 * MEMACCT_UNLIMITED; MEMACCT_EXACT cannot be passed on (the properties
 * carry no such flag), so a group's stat items may be up to the daemon's
 * flush interval old whatever the flags. A group list costs one call for
 * the list and one per group (pipelined). Reclaim works as on the socket
 * (memacct-reclaim.h: the requests are the daemon's ReclaimRequest
 * signals, served by memacct_process() and memacct_next_event()), but a
 * session's reclaimable and reclaim_* read 0 in memacct_list_sessions()
 * (the bus's ListSessions has no such fields). There is no reconnection (memacct_set_reconnect() has
 * no effect): after a daemon restart the old session is gone, and calls
 * that need it fail. Errors arrive as org.memacct1.Error.* names and map
 * to the errno above; the bus's own AccessDenied is -EPERM, a daemon that
 * left the bus or a lost bus connection -ECONNRESET, a call timeout
 * -ETIMEDOUT.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open connection (a session) to memacctd. */
typedef struct memacct memacct;
/* A pipelined batch of requests, see memacct_batch_begin(). */
typedef struct memacct_batch memacct_batch;
/* A group list, see memacct_list_groups(). */
typedef struct memacct_group_list memacct_group_list;

/* "No limit": the value of max/high/low/min when unlimited (UINT64_MAX). */
#define MEMACCT_UNLIMITED UINT64_MAX
/* memacct_create_group() @owner: no delegation. */
#define MEMACCT_NO_OWNER 0xFFFFFFFFu
/* memacct_group_info.kernel_current of a group that mirrors no kernel cgroup. */
#define MEMACCT_NO_KERNEL_CURRENT UINT64_MAX
/* The longest group path, in bytes, the NUL not counted. */
#define MEMACCT_PATH_MAX 4096

/* Flags; each function lists the ones it takes. */
#define MEMACCT_KEEP      0x01u /* the charge belongs to the group, not the session */
#define MEMACCT_FORCE     0x02u /* charge: ignore max; set_limits: take max below usage */
#define MEMACCT_EXACT     0x04u /* queries: flush statistics first */
/* charge: refused at once by a max, instead of waiting while reclaimable
 * clients give memory back; set_limits: a max below usage asks nobody
 * (an O_NONBLOCK memory.max write). memacct(7), RECLAIM. */
#define MEMACCT_NO_WAIT   0x20u
#define MEMACCT_RECURSIVE 0x08u /* list: the whole subtree, not only the children */

/* Stat items, in the order of the wire protocol and of the stock page. */
typedef enum memacct_stat {
        MEMACCT_STAT_ANON = 0,
        MEMACCT_STAT_FILE = 1,
        MEMACCT_STAT_SHMEM = 2,
        MEMACCT_STAT_KERNEL = 3,
        MEMACCT_STAT_SOCK = 4,
        MEMACCT_STAT_SWAP = 5,
        MEMACCT_STAT_DEVICE = 6,
        MEMACCT_STAT_OTHER = 7,
        MEMACCT_STAT_MAX = 8
} memacct_stat;

/* Which members of a memacct_limits are set. */
#define MEMACCT_LIMIT_MAX  0x01u
#define MEMACCT_LIMIT_HIGH 0x02u
#define MEMACCT_LIMIT_LOW  0x04u
#define MEMACCT_LIMIT_MIN  0x08u

typedef struct memacct_limits {
        unsigned set;  /* MEMACCT_LIMIT_* bits: the members to apply */
        uint64_t max;  /* bytes; MEMACCT_UNLIMITED for none */
        uint64_t high;
        uint64_t low;
        uint64_t min;
} memacct_limits;

/* A named counter (an event count, a stat item). */
typedef struct memacct_counter {
        const char *name;
        uint64_t value;
} memacct_counter;

/*
 * One line of memory.pressure (memacct(7), PRESSURE), as the kernel's PSI
 * gives it: the share of the last 10, 60 and 300 seconds the group's
 * charges spent waiting for reclaim, in percent to the hundredth, and
 * the total time they waited.
 */
typedef struct memacct_pressure {
        double avg10;
        double avg60;
        double avg300;
        uint64_t total_usec;
} memacct_pressure;

/*
 * Everything the daemon reports about a group. Allocated by the library
 * (memacct_get_group(), memacct_list_groups()) and only read by callers, so
 * later versions may append members.
 */
typedef struct memacct_group_info {
        const char *path;
        uint64_t current;
        uint64_t peak;
        uint64_t max;           /* MEMACCT_UNLIMITED: none */
        uint64_t high;
        uint64_t low;
        uint64_t min;
        uint64_t effective_min; /* relative to the reclaim root asked for */
        uint64_t effective_low;
        uint64_t failcnt;
        const memacct_counter *events;       /* low high max oom, hierarchical */
        size_t n_events;
        const memacct_counter *events_local; /* the same, this group only */
        size_t n_events_local;
        const memacct_counter *stat;         /* by item, in item order */
        size_t n_stat;
        uint32_t owner;         /* the uid it is delegated to; 0: not delegated */
        uint32_t nr_children;
        uint32_t nr_sessions;
        /* The kernel's usage of the cgroup this group mirrors (memory.current
         * or memory.usage_in_bytes, sampled by the daemon every [cgroup]
         * sample-interval); MEMACCT_NO_KERNEL_CURRENT for other groups. */
        uint64_t kernel_current;
        /* The bytes the group keeps itself (kept charges, all items), and
         * those its own sessions hold (as of the daemon's last statistics
         * flush); the children's usage is in neither, so current - kept -
         * session is the subtree's. 0 from a daemon that does not say. */
        uint64_t kept;
        uint64_t session;
        /* The device regions the group has counters in (memacct(7),
         * DEVICE MEMORY), in the daemon's region order; only the one
         * asked for when a region was named. 0 from a daemon that has
         * none. */
        const struct memacct_region_info *regions; /* memacct-region.h */
        size_t n_regions;
        /* memory.pressure: "some" (at least one charge of the subtree
         * waited for reclaim) and "full" (every session attached in the
         * subtree did). has_pressure is 0 from a daemon that does not say. */
        int has_pressure;
        memacct_pressure pressure_some;
        memacct_pressure pressure_full;
} memacct_group_info;


/* What a successful charge reply says (ChargeReply). */
typedef struct memacct_charge_result {
        uint64_t over_high;     /* bytes the worst ancestor is above its high */
        uint64_t throttle_usec; /* suggested back-off (the kernel's high delay) */
        int over_max;           /* a forced charge left a group above its max */
        uint64_t margin;        /* bytes the tightest max still admits; MEMACCT_UNLIMITED: no max */
} memacct_charge_result;

/* A client's RSS counters in bytes (the kernel's MM_* counters). */
typedef struct memacct_client_info {
        uint32_t pid;
        uint64_t file;
        uint64_t anon;
        uint64_t swap;
        uint64_t shmem;
} memacct_client_info;

/*
 * The daemon at a glance (memacct_get_info()). Allocated by the library
 * and only read by callers, so later versions may append members.
 */
typedef struct memacct_server_info {
        const char *version;      /* "memacctd <version>" */
        uint64_t uptime_usec;
        uint64_t requests;        /* served since start, on every transport */
        uint32_t sessions;        /* open now */
        uint32_t groups;          /* now, the root included */
        const char *state;        /* the state file: none saved saving failing */
        const char *state_cause;  /* "failing": the step and its error; else "" */
        uint64_t saves;           /* saves that succeeded */
        uint64_t last_save_usec;  /* CLOCK_REALTIME of the last; 0: none */
} memacct_server_info;

/* One session (memacct_list_sessions()). */
typedef struct memacct_session_info {
        uint32_t pid;
        uint32_t uid;
        const char *comm;      /* /proc/PID/comm when it connected; "" if unknown */
        const char *transport; /* "socket" or "bus" */
        const char *group;     /* the attached group; "" when not attached */
        uint64_t bytes;        /* held by the session, all stat items */
        uint64_t stock;        /* of those, in its stock page unused */
        /* Reclaim (memacct_set_reclaimable()): whether it declared charges
         * it can give back, the bytes it was asked for and gave back, and
         * the requests it answered late or never. */
        int reclaimable;
        uint64_t reclaim_asked;
        uint64_t reclaim_released;
        uint64_t reclaim_late;
} memacct_session_info;

/* A list of sessions, see memacct_list_sessions(). */
typedef struct memacct_sessions memacct_sessions;

/* An event of a subscription. The strings belong to the handle and stay
 * valid until the next memacct_next_event() call on it. */
typedef struct memacct_event {
        const char *path;  /* the group the event was raised on */
        const char *name;  /* low high max oom */
        uint64_t count;    /* its local count after the event */
} memacct_event;

/* The system daemon's socket, open to every uid (memacctd(8)). */
#define MEMACCT_SYSTEM_SOCKET "/run/memacctd/memacctd.sock"

/**
 * memacct_default_socket() - the socket path memacct_connect(NULL) uses:
 * $MEMACCT_SOCKET if set and not empty, else the system daemon's,
 * MEMACCT_SYSTEM_SOCKET, whoever calls. A user's own daemon is
 * memacct_user_socket().
 * @ret: a newly allocated string, freed with free()
 *
 * Return: 0; -EINVAL (@ret NULL); -ENOMEM.
 */
int memacct_default_socket(char **ret);

/**
 * memacct_user_socket() - the socket of the caller's own memacctd, one
 * the user started (not the system's): $XDG_RUNTIME_DIR/memacctd/memacctd.sock.
 * $MEMACCT_SOCKET plays no part.
 * @ret: a newly allocated string, freed with free()
 *
 * Return: 0; -ENXIO ($XDG_RUNTIME_DIR unset, empty or not an absolute
 * path); -EINVAL (@ret NULL); -ENOMEM.
 */
int memacct_user_socket(char **ret);

/**
 * memacct_connect() - connect to memacctd and exchange Hello; when
 * $MEMACCT_GROUP is set and not empty, attach the session there too (as
 * memacct_connect_bus() does; memacctctl run sets it). With @path NULL,
 * $MEMACCT_BUS set and not empty and $MEMACCT_SOCKET unset or empty
 * (memacctctl run --bus), it is memacct_connect_bus($MEMACCT_BUS): a bus
 * handle, with that function's errors.
 * @path: the socket, or NULL for $MEMACCT_BUS or memacct_default_socket()
 * @ret: the new handle
 *
 * Return: 0; memacct_attach()'s errors for $MEMACCT_GROUP (-ENOENT,
 * -EPERM); -ENOENT, -ECONNREFUSED, -EACCES (cannot connect); -ENOSPC
 * (the daemon refused the session: too many for this uid; its message is
 * memacct_last_error(NULL)); -EPROTONOSUPPORT (the server speaks another
 * protocol version); -ENOMEM.
 */
int memacct_connect(const char *path, memacct **ret);

/**
 * memacct_connect_unattached() - memacct_connect() to the socket @path
 * (required: neither $MEMACCT_SOCKET nor $MEMACCT_BUS is read), with the
 * session left unattached whatever $MEMACCT_GROUP says: for a library
 * that decides itself where its session goes (memacct_attach()), such as
 * an interposer whose process's environment is not its to trust.
 * Return: memacct_connect()'s values but those of $MEMACCT_GROUP; -EINVAL.
 */
int memacct_connect_unattached(const char *path, memacct **ret);

/**
 * memacct_connect_user() - memacct_connect() to the caller's own
 * memacctd, at memacct_user_socket(), as systemctl --user asks for the
 * user's manager. Neither $MEMACCT_SOCKET nor $MEMACCT_BUS changes where.
 * @ret: the new handle
 *
 * Return: memacct_connect()'s values; -ENXIO when $XDG_RUNTIME_DIR names
 * no user runtime directory (memacct_last_error(NULL) says so).
 */
int memacct_connect_user(memacct **ret);

/**
 * memacct_connect_bus() - reach memacctd over D-Bus (bus name org.memacct1)
 * instead of the socket; see "D-Bus" at the top of this header.
 * @address: NULL or "system" for the system bus, whoever calls;
 *           "user" for the user's session bus (they honour
 *           $DBUS_SYSTEM_BUS_ADDRESS and $DBUS_SESSION_BUS_ADDRESS); else a
 *           D-Bus address ("unix:path=/run/x/bus")
 * @ret: the new handle
 *
 * The daemon is pinged (which starts it if the bus can activate it);
 * memacct_server() then names the bus name and its owner
 * ("org.memacct1 :1.7").
 *
 * Return: 0; -ENOENT, -ECONNREFUSED, -EACCES (no bus there);
 * -ECONNREFUSED (the bus has no org.memacct1); -EINVAL (a bad address);
 * -ENOMEM.
 */
int memacct_connect_bus(const char *address, memacct **ret);

/**
 * memacct_close() - end the session: the daemon releases every session
 * charge and the unused stock. Accepts NULL. No other call on @m may run
 * concurrently or follow.
 *
 * Return: NULL.
 */
memacct *memacct_close(memacct *m);

/**
 * memacct_server() - the server's self-description from Hello
 * ("memacctd 0.1.0"); owned by @m. Return: the string, or "" if none.
 */
const char *memacct_server(memacct *m);

/**
 * memacct_peer_pid() - the pid the daemon sees for this process (Hello).
 */
pid_t memacct_peer_pid(memacct *m);

/**
 * memacct_last_error() - the message of the last failed call this thread
 * made on @m (the server's message, or the library's own); calls that
 * succeed leave it alone.
 *
 * With @m NULL: the message of this thread's memacct_connect() that just
 * failed (e.g. the daemon's "too many sessions for uid 1000").
 *
 * Return: the message, valid until this thread's next call on any handle;
 * NULL when this thread has no failure recorded for @m.
 */
const char *memacct_last_error(memacct *m);

/**
 * memacct_refused_path() - the group whose max refused the last charge
 * that failed with -EDQUOT in this thread on @m.
 *
 * Return: the path, valid as memacct_last_error()'s; NULL if none.
 */
const char *memacct_refused_path(memacct *m);

/**
 * memacct_set_timeout() - how long a synchronous call waits for its reply
 * (default 30 s); 0 waits forever. Return: 0.
 */
int memacct_set_timeout(memacct *m, unsigned timeout_msec);

/**
 * memacct_set_reconnect() - how many times to try to reach the daemon
 * again after the connection broke, with backoff from 20 ms doubling up to
 * 1 s between attempts (default 10, about 5 s in all); 0 turns reconnection
 * off, and a broken connection then fails every call with -ECONNRESET.
 * Return: 0.
 */
int memacct_set_reconnect(memacct *m, unsigned attempts);

/**
 * memacct_reconnect_fn - told after each reconnection.
 * @result: 0 if everything the session held was charged again; else the
 *          first error of the replay (the charges that failed are dropped
 *          from what the handle tracks)
 * @replayed_bytes: the bytes charged again, all items together
 */
typedef void (*memacct_reconnect_fn)(memacct *m, int result, uint64_t replayed_bytes,
                                     void *userdata);

/**
 * memacct_set_reconnect_callback() - call @fn (from the thread whose call
 * noticed the broken connection, with the handle's mutex held: @fn must not
 * call into @m) after each reconnection. NULL removes it. Return: 0.
 */
int memacct_set_reconnect_callback(memacct *m, memacct_reconnect_fn fn, void *userdata);

/**
 * memacct_reconnect_count() - how many times @m reconnected.
 */
unsigned memacct_reconnect_count(memacct *m);

/**
 * memacct_stat_to_string() - "anon", "file", ... Return: NULL when
 * @item is out of range.
 */
const char *memacct_stat_to_string(int item);

/**
 * memacct_stat_from_string() - the item for a name; NULL or "" is anon.
 * Return: the item (>= 0), or -EINVAL.
 */
int memacct_stat_from_string(const char *name);

/**
 * memacct_attach() - attach the session to the group at @path ("" or
 * "auto": the mirror of this process's kernel memory cgroup, which the
 * daemon creates on first use when its [cgroup] auto-create allows). Any unused
 * stock is returned first; the session must hold no charges otherwise.
 *
 * Return: 0; -ENOENT; -EBUSY (the session holds charges); -EPERM.
 */
int memacct_attach(memacct *m, const char *path);

/**
 * memacct_attached_group() - copy to @buf (@size bytes) the path of the
 * group the daemon said the last attach of this handle's session attached
 * to: memacct_attach(), $MEMACCT_GROUP at connect, or the re-attach of a
 * reconnection. For "" and "auto" it is the group the daemon chose. Any
 * thread.
 *
 * Return: 0; -ENOTCONN (no attach answered yet, or a daemon too old to
 * name the group it chose for "auto"); -ERANGE (@size too small:
 * MEMACCT_PATH_MAX + 1 always fits); -EINVAL.
 */
int memacct_attached_group(memacct *m, char *buf, size_t size);

/**
 * memacct_charge() - charge @bytes of @item synchronously, never through
 * the stock.
 * @path: the group; NULL for the attached group (a session charge, which
 *        a reconnection replays; a session charge to another @path, if the
 *        daemon takes one, is not replayed)
 * @flags: MEMACCT_KEEP (needs @path), MEMACCT_FORCE
 * @ret: what the reply said, or NULL
 *
 * Return: 0; -EDQUOT (a max refused it: memacct_refused_path()); -ENOTCONN
 * (no @path and not attached); -EINVAL; -EPERM; -ENOENT.
 */
int memacct_charge(memacct *m, const char *path, uint64_t bytes, int item, unsigned flags,
                   memacct_charge_result *ret);

/**
 * memacct_uncharge() - release @bytes of @item synchronously.
 * @path: as memacct_charge(); @flags: MEMACCT_KEEP
 *
 * Return: 0; -ERANGE (more than is held: nothing released); as
 * memacct_charge().
 */
int memacct_uncharge(memacct *m, const char *path, uint64_t bytes, int item, unsigned flags);

/**
 * memacct_create_group() - create the group at @path (its parent must
 * exist).
 * @limits: initial limits, or NULL
 * @owner: the uid delegated the new subtree (root only), or
 *         MEMACCT_NO_OWNER
 *
 * Return: 0; -EEXIST; -ENOENT (no parent); -EINVAL (bad path); -EPERM;
 * -ENOSPC (too many groups, too deep).
 */
int memacct_create_group(memacct *m, const char *path, const memacct_limits *limits,
                         uint32_t owner);

/**
 * memacct_create_transient_group() - memacct_create_group(), and the group
 * is this handle's: the daemon removes it once the handle's connection
 * has closed (memacct_close(), or the process ended, by SIGKILL too) and
 * the group has no sessions and no children, waiting for them if it has.
 *
 * Return: as memacct_create_group().
 */
int memacct_create_transient_group(memacct *m, const char *path, const memacct_limits *limits,
                                   uint32_t owner);

/**
 * memacct_set_owner() - delegate the subtree of @path to the uid @owner
 * (0: to nobody but root). Root gives a group to any uid; a uid the
 * group's parent is delegated to may only take the group back for itself.
 * The change is saved before the call returns.
 *
 * Return: 0; -ENOENT; -EINVAL (the root, or @owner MEMACCT_NO_OWNER);
 * -EPERM; -ENOSPC (@owner owns too many groups).
 */
int memacct_set_owner(memacct *m, const char *path, uint32_t owner);

/**
 * memacct_remove_group() - remove the group at @path and release its kept
 * charges. Return: 0; -ENOENT; -EBUSY (children or sessions); -EPERM.
 */
int memacct_remove_group(memacct *m, const char *path);

/**
 * memacct_set_limits() - set the members of @limits that @limits->set
 * names.
 * @flags: MEMACCT_FORCE: take a max below the current usage (as a cgroup
 *         v2 memory.max write does) instead of failing with -EBUSY;
 *         MEMACCT_NO_WAIT: do not ask reclaimable clients for what usage
 *         is above a new max (by default the call waits for them: with
 *         MEMACCT_FORCE after the max is taken, without before it is tried)
 *
 * Return: 0; -EBUSY (max below usage without MEMACCT_FORCE); -ENOENT;
 * -EINVAL; -EPERM.
 */
int memacct_set_limits(memacct *m, const char *path, const memacct_limits *limits,
                       unsigned flags);

/**
 * memacct_get_group() - everything about the group at @path.
 * @reclaim_root: the group effective min/low are computed against; NULL
 *                for "/"
 * @flags: MEMACCT_EXACT: flush statistics first
 * @ret: freed with memacct_group_info_free()
 *
 * Return: 0; -ENOENT; -EPERM; -ENOMEM.
 */
int memacct_get_group(memacct *m, const char *path, const char *reclaim_root, unsigned flags,
                      memacct_group_info **ret);

/** memacct_group_info_free() - free @info; accepts NULL. Return: NULL. */
memacct_group_info *memacct_group_info_free(memacct_group_info *info);

/**
 * memacct_list_groups() - the children of @path, or with MEMACCT_RECURSIVE
 * its whole subtree in pre-order.
 * @path: NULL for "/"
 * @flags: MEMACCT_RECURSIVE, MEMACCT_EXACT
 * @ret: freed with memacct_group_list_free()
 *
 * Return: 0; -ENOENT; -EPERM; -ENOMEM.
 */
int memacct_list_groups(memacct *m, const char *path, unsigned flags, memacct_group_list **ret);

/** memacct_group_list_size() - the number of groups in @list. */
size_t memacct_group_list_size(const memacct_group_list *list);

/** memacct_group_list_get() - group @i of @list, NULL when out of range;
 * owned by @list. */
const memacct_group_info *memacct_group_list_get(const memacct_group_list *list, size_t i);

/** memacct_group_list_free() - free @list; accepts NULL. Return: NULL. */
memacct_group_list *memacct_group_list_free(memacct_group_list *list);

/**
 * memacct_reset_peak() - reset the group's peak to its current usage.
 * Return: 0; -ENOENT; -EPERM.
 */
int memacct_reset_peak(memacct *m, const char *path);

/* Kernel cgroups: mirrors, their import and pruning, placement rules. */
#include "memacct-cgroup.h"
#include "memacct-region.h"
#include "memacct-reclaim.h"
#include "memacct-stock.h"

/**
 * memacct_move() - move the sessions of @pid (0: this session only) and
 * their session charges to the group at @path.
 * @ret_sessions: the number of sessions moved, or NULL
 *
 * Return: 0; -EDQUOT (the destination refused the charges; nothing moved);
 * -ENOENT (no such group or client); -EPERM.
 */
int memacct_move(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions);

/**
 * memacct_get_client() - the RSS counters of @pid (0: this process).
 * @flags: MEMACCT_EXACT: fold every session's unsynchronised residue in
 *
 * Return: 0; -ENOENT (no such client).
 */
int memacct_get_client(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret);

/**
 * memacct_get_info() - the daemon's version, uptime, requests served,
 * sessions, groups and the state of its state file, into a new *@ret
 * (free it with memacct_server_info_free()).
 * Return: 0; -EPERM (under [access] read = root, for other uids); -ENOMEM.
 */
int memacct_get_info(memacct *m, memacct_server_info **ret);

/** memacct_server_info_free() - free what memacct_get_info() returned; NULL is fine. Return: NULL. */
memacct_server_info *memacct_server_info_free(memacct_server_info *info);

/**
 * memacct_list_sessions() - the sessions attached at or below @path (NULL
 * or "": every session) that the caller may see: root all of them,
 * another uid its own and those attached in a subtree delegated to it;
 * newest first, into a new *@ret (free it with memacct_sessions_free()).
 * Return: 0; -ENOENT; -EINVAL (bad path); -ENOSPC (too many for one
 * reply: list a subtree); -ENOMEM.
 */
int memacct_list_sessions(memacct *m, const char *path, memacct_sessions **ret);

/** memacct_sessions_size() - the number of sessions in @l. */
size_t memacct_sessions_size(const memacct_sessions *l);

/** memacct_sessions_get() - session @i of @l; NULL when out of range. */
const memacct_session_info *memacct_sessions_get(const memacct_sessions *l, size_t i);

/** memacct_sessions_free() - free @l; NULL is fine. Return: NULL. */
memacct_sessions *memacct_sessions_free(memacct_sessions *l);

/**
 * memacct_event_requester() - who made the request that raised the event
 * memacct_next_event() returned last on @m: its pid and uid (either may
 * be NULL), 0 and 0 when no request did or the daemon did not say. A bus
 * handle reads 0 and 0 (the Event signal has no such arguments; the
 * daemon's EventBy signal has).
 * Return: 0; -ENODATA (no event returned yet).
 */
int memacct_event_requester(memacct *m, uint32_t *ret_pid, uint32_t *ret_uid);

/**
 * memacct_subscribe() - receive the events (low high max oom) of the
 * group at @path and its subtree; read them with memacct_next_event().
 * Return: 0; -ENOENT; -EPERM.
 */
int memacct_subscribe(memacct *m, const char *path);

/**
 * memacct_next_event() - wait up to @timeout_msec (-1: forever) for the
 * next event of a subscription. Serves the socket meanwhile (stock refill
 * replies, reconnection after a daemon restart). A signal interrupts it.
 *
 * Return: 1 and @ret filled; 0 on timeout; -EINTR; a transport error.
 */
int memacct_next_event(memacct *m, int timeout_msec, memacct_event *ret);

/**
 * memacct_batch_begin() - start a pipelined batch on @m: requests are
 * queued with memacct_batch_charge()/memacct_batch_uncharge(), sent in one
 * write by memacct_batch_commit(), and answered in order.
 *
 * Return: 0 or -ENOMEM.
 */
int memacct_batch_begin(memacct *m, memacct_batch **ret);

/**
 * memacct_batch_charge() - queue a charge (as memacct_charge(), flags
 * MEMACCT_KEEP and MEMACCT_FORCE). Return: the operation's index in the
 * batch (>= 0); -EINVAL; -ENOMEM.
 */
int memacct_batch_charge(memacct_batch *b, const char *path, uint64_t bytes, int item,
                         unsigned flags);

/**
 * memacct_batch_uncharge() - queue an uncharge (as memacct_uncharge()).
 * Return: the operation's index; -EINVAL; -ENOMEM.
 */
int memacct_batch_uncharge(memacct_batch *b, const char *path, uint64_t bytes, int item,
                           unsigned flags);

/**
 * memacct_batch_commit() - send every queued request and collect every
 * reply. Per-operation results are read with memacct_batch_result().
 * Nothing is retried after a broken connection: the operations without a
 * reply then report -ECONNRESET.
 *
 * Return: the number of operations that failed (0: all succeeded), or a
 * negative errno when the batch could not be sent at all.
 */
int memacct_batch_commit(memacct_batch *b);

/**
 * memacct_batch_result() - the result of operation @i after commit: 0 or
 * a negative errno as its synchronous counterpart returns.
 * @ret_refused_path: for -EDQUOT the refusing group (owned by @b), or NULL
 *
 * Return: the result; -EINVAL if @i is out of range or not committed.
 */
int memacct_batch_result(const memacct_batch *b, size_t i, const char **ret_refused_path);

/** memacct_batch_free() - free @b; accepts NULL. Return: NULL. */
memacct_batch *memacct_batch_free(memacct_batch *b);

#ifdef __cplusplus
}
#endif

#endif /* MEMACCT_H */
