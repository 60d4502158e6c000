/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The service layer: one function per operation a client can ask for,
 * whichever transport it came over. Each takes the caller (a Peer: its
 * uid, pid and session, as the kernel or the bus daemon vouched for them)
 * and plain C arguments, and returns 0 (or a count) or a negative errno
 * with a Refusal saying why. Every decision is made here, once:
 * authorisation, the words of each refusal, drain-and-retry before a
 * refusal, who may force, persistence of what must survive a restart,
 * and telling the event fan-out of every change.
 *
 * Transports (daemon/sock, daemon/bus, daemon/http) decode a request,
 * make one call here, and encode the answer; they include this header
 * and the service headers it names, never a core header but model.h.
 *
 * Threads: every operation runs on the caller's transport thread, which
 * is registered with the core; the operations of one peer are serialised
 * by that thread. Nothing here blocks on another client.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model.h"
#include "service/authz.h"
#include "service/events.h"
#include "base/refusal.h"
#include "service/registry.h"

typedef struct CgroupMirror CgroupMirror;
typedef struct MemCore MemCore;
typedef struct Service Service;

/* The protocol version this daemon speaks (Hello). */
#define SERVICE_PROTOCOL_VERSION 1
/* Subscriptions one peer may hold: a bound, like every other input. */
#define SERVICE_SUBSCRIPTIONS_MAX 64
/* The largest list reply a transport builds; past it, list a subtree. */
#define SERVICE_LIST_REPLY_MAX (16u << 20)
/* A stock page is one page of counters shared with the client (MEM_STOCK_COUNTERS). */
#define SERVICE_STOCK_PAGE_SIZE 4096

/* What may change at run time (SIGHUP); read on every request. */
typedef struct ServiceSettings {
        uint32_t max_frame;            /* bytes in one socket frame body */
        uint64_t charge_batch;         /* the largest stock refill clients should ask for */
        uint64_t reclaim_timeout_usec; /* how long a round of reclaim waits; 0: 1 s */
        unsigned max_sessions_per_uid; /* 0: unlimited; root is never limited */
        ReadAccess read_access;
        ConfinedRead confined_read;    /* what a confined peer reads outside its group */
        RegistryBounds bounds;         /* connections, subscriptions, groups, output per uid; 0: none */
} ServiceSettings;

typedef struct Saver Saver;

/**
 * service_new() - the service for @core, with its registry and event
 * fan-out (which installs the core's hooks: before other threads use the
 * core). Return: 0 or -ENOMEM.
 */
int service_new(MemCore *core, const ServiceSettings *settings, Service **ret);

/** service_free() - free the service; every peer must be gone. */
Service *service_free(Service *svc);

/** service_set_settings() - SIGHUP: new settings for requests from now on; any thread. */
void service_set_settings(Service *svc, const ServiceSettings *settings);

/** service_settings() - the settings in force; any thread. */
ServiceSettings service_settings(Service *svc);

/** service_max_frame() - the frame limit in force, read on every frame; any thread. */
uint32_t service_max_frame(Service *svc);

/**
 * service_reads_open() - may anyone read every group: read access "all",
 * and no confined peer kept to its own subtree (no confining rule in
 * force, or [access] confined-read = all)? What may be broadcast, and
 * where no caller needs asking. Any thread.
 */
bool service_reads_open(Service *svc);

/**
 * service_is_root() - is the process @pid of @uid root to the daemon: uid
 * 0, and not confined to a group (a container's root is not)? For the
 * transports' own favours to root (the socket's root worker, its reserved
 * descriptor). Reads /proc only while a confining rule is in force. Any
 * thread.
 */
bool service_is_root(Service *svc, pid_t pid, uid_t uid);

/** service_set_saver() - who saves durable changes (NULL: nothing is saved); before other threads use @svc. */
void service_set_saver(Service *svc, Saver *d);

/**
 * service_add_durable_waker() - call @fn (on the saver thread) after every
 * save, for a transport that holds OKs until their change is saved.
 * Before the saver starts. Return: 0, -ENOSPC.
 */
int service_add_durable_waker(Service *svc, void (*fn)(void *userdata), void *userdata);

/**
 * service_peer_take_wait() - after an operation of @p: the change its OK
 * must wait for (0: none), for service_durable_check(); forgotten here.
 * On the peer's thread.
 */
uint64_t service_peer_take_wait(Peer *p);

/**
 * service_durable_check() - may the OK that waits for change @seq go
 * out? Any thread. Return: 1 (it is saved, or @seq is 0); 0 (not yet: a
 * waker is told after the next save); a negative errno with @rf (the save
 * failed: the change is in effect but not saved; send @rf instead of OK).
 */
int service_durable_check(Service *svc, uint64_t seq, Refusal *rf);

/** service_set_cgroup() - the kernel cgroup mirror (NULL: none); before other threads use @svc. */
void service_set_cgroup(Service *svc, CgroupMirror *cgroup);

/** service_events() - the event fan-out, for the transport that sets itself as its sink. */
Events *service_events(Service *svc);

/**
 * service_thread_register() - let the calling thread serve requests (the
 * core's per-thread state: RCU reader, statistics slots). Every
 * transport thread calls it before its first request, and
 * service_thread_unregister() when it ends. Return: 0, -ENOSPC, -ENOMEM.
 */
int service_thread_register(Service *svc);
void service_thread_unregister(Service *svc);

/** service_session_count() - sessions open now, on every transport; any thread. */
unsigned service_session_count(Service *svc);

/** service_group_count() - groups now, the root included; any thread. */
unsigned service_group_count(Service *svc);

/**
 * service_peer_new() - a peer for a client the kernel or bus daemon
 * identified, on the transport thread that will serve it.
 * @delivery: how events reach it (NULL: it receives none)
 * @open_session: open its session now (the socket: one per connection),
 *                rather than when an operation first needs it (the bus)
 * Return: 0; -EUSERS (too many sessions for the uid) or -ENOMEM, with @rf.
 */
int service_peer_new(Service *svc, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                     bool open_session, Peer **ret, Refusal *rf);

/**
 * service_connection_open() - a socket connection of the uid in @creds
 * arrived: count it, unless its uid has [limits] connections-per-uid
 * open or all uids but root [limits] connections (root is never
 * refused). On success *@ret holds the uid's counts, for the
 * connection's output (service_output_add()) and for
 * service_connection_close(). Any transport thread.
 * Return: 0; -EUSERS (a bound named in @rf), -ENOMEM.
 */
int service_connection_open(Service *svc, const PeerCreds *creds, UidUsage **ret, Refusal *rf);

/** service_connection_close() - the connection of service_connection_open() is gone. Accepts NULL. Return: NULL. */
UidUsage *service_connection_close(Service *svc, UidUsage *u);

/**
 * service_output_add() - @delta bytes more (negative: fewer) of output,
 * replies or queued events, wait for a client of @u. Any thread; no lock.
 */
void service_output_add(Service *svc, UidUsage *u, int64_t delta);

/**
 * service_output_over() - does @u's output, or that of every uid but
 * root together, exceed [limits] output-buffer-per-uid or
 * output-buffer-total? Then a connection of @u serves no further request
 * and queues no event until it is not. Never true for root. Any thread.
 */
bool service_output_over(Service *svc, const UidUsage *u);

/** service_peer_free() - the client is gone: registry_peer_free(). Return: NULL. */
Peer *service_peer_free(Peer *p);

/**
 * service_daemon_peer() - the daemon itself as a caller: uid 0, its own
 * pid, no session. For the work the daemon does on its own behalf (the
 * metrics listener reads everything; the import at start). Main thread
 * or any thread registered with the core, for reads.
 */
Peer *service_daemon_peer(Service *svc);

/* ---- operations (service-groups.c, service-charges.c) ---- */

typedef struct ServiceHello {
        uint32_t version, max_frame;
        uint64_t charge_batch;
        pid_t pid;
        uid_t uid;
} ServiceHello;

/**
 * service_hello() - what the daemon tells a client that says Hello with
 * protocol *@version (NULL: none given). Return: 0; -EINVAL (unsupported).
 */
int service_hello(Service *svc, Peer *p, const uint32_t *version, ServiceHello *ret, Refusal *rf);

/**
 * service_create_group() - create @path with @limits (NULL: none), owned
 * by @owner when @has_owner (only root gives groups to other uids), else
 * by the caller. One step: nothing exists if it is refused.
 * Return: 0; -EINVAL, -ENAMETOOLONG, -EMLINK (path), -EEXIST, -ENOENT (no
 * parent), -EPERM, -ENOSPC, -ENOMEM.
 */
int service_create_group(Service *svc, Peer *p, const char *path, const MemLimits *limits, bool has_owner,
                         uid_t owner, Refusal *rf);

/**
 * service_create_transient_group() - service_create_group(), and the group
 * is the caller's: the daemon removes it once @p is gone (the client's
 * connection closed, however it ended) and the group has no sessions and
 * no children; while it has, it waits for them (service-transient.c).
 * On an existing transient group that has no creator (its creator gone,
 * or the daemon restarted), called by its owner's uid or root, it claims
 * the group back instead: 0, @p is its creator; @limits and @owner are
 * then not applied.
 * Return: as service_create_group(); -EINVAL for the daemon's own peer.
 */
int service_create_transient_group(Service *svc, Peer *p, const char *path, const MemLimits *limits,
                                   bool has_owner, uid_t owner, Refusal *rf);

/** service_transient_orphans() - transient groups whose creator is gone, waiting to be empty; any thread. */
unsigned service_transient_orphans(Service *svc);

/*
 * How long after a start a transient group restored from the state file
 * waits for its creator to claim it back (CreateGroup transient on it)
 * before it is removed once empty. MEMACCTD_TRANSIENT_GRACE_MSEC in the
 * environment replaces it: for tests only.
 */
#define SERVICE_TRANSIENT_GRACE_USEC (10 * UINT64_C(1000000))

/**
 * service_transient_tick() - remove the orphans that are empty and past
 * their grace period; the housekeeping thread calls it periodically, so
 * that they go even when no client does. Any thread.
 */
void service_transient_tick(Service *svc);

/**
 * service_stopping() - the daemon is shutting down: from now on a client
 * that goes (its connection closed by the shutdown) leaves its transient
 * groups in place, saved transient, for its creator to claim back after
 * the next start. Before the transports close their connections; any thread.
 */
void service_stopping(Service *svc);

/* One mirror of a vanished kernel cgroup: @why NULL when it was removed, else why it stays. */
typedef void (*ServicePruneFn)(void *userdata, const char *group, const char *why);

/**
 * service_prune_mirrors() - remove the mirrors of kernel cgroups that no
 * longer exist (root only), each told to @fn (NULL: nobody); one with
 * sessions, kept charges or groups that are not mirrors below it stays,
 * told with the reason. Return: the number removed; -EPERM, -ENOENT (no
 * mirror), -ENOSPC (the state cannot be saved), with @rf.
 */
int service_prune_mirrors(Service *svc, Peer *p, ServicePruneFn fn, void *userdata, Refusal *rf);

/**
 * service_set_prune_on_sample() - [cgroup] prune: whether each
 * service_sample_mirrors() also prunes (off until set); any thread.
 */
void service_set_prune_on_sample(Service *svc, bool on);

/**
 * service_sample_mirrors() - the housekeeping sampler (HousekeepingSampleFn,
 * @userdata the Service): cgroup_mirror_sample(), then, when pruning on
 * sampling is on and a mirrored cgroup could not be read,
 * service_prune_mirrors() as the daemon, so that the removals are saved
 * as any other change. On the housekeeping thread.
 */
void service_sample_mirrors(void *userdata);

/**
 * service_remove_group() - remove @path and the kept charges it holds.
 * Return: 0; a path error, -ENOENT, -EPERM, -EBUSY (children or sessions).
 */
int service_remove_group(Service *svc, Peer *p, const char *path, Refusal *rf);

/* service_set_limits() flags. */
#define SERVICE_LIMITS_FORCE 1u      /* take a max below usage (a cgroup v2 memory.max write) */
#define SERVICE_LIMITS_WAIT 2u       /* the transport can hold the request while reclaim runs */
#define SERVICE_LIMITS_NO_RECLAIM 4u /* the client asked not to wait for reclaim */

/**
 * service_set_limits() - set the limits @limits names on @path, all or
 * none. A max below usage: with SERVICE_LIMITS_WAIT (and not
 * SERVICE_LIMITS_NO_RECLAIM) the reclaimable holders below are asked for
 * the difference (service-reclaim.c) and the request waits, -EINPROGRESS,
 * as a charge does: with SERVICE_LIMITS_FORCE the max is taken first and
 * the call then succeeds however much came back (memory.max); without,
 * the max is tried once they answered, and refused if usage is still
 * above it (cgroup v1's resize). Return: 0; -EINPROGRESS; a path error,
 * -ENOENT, -EPERM, -EBUSY (max below usage without SERVICE_LIMITS_FORCE).
 */
int service_set_limits(Service *svc, Peer *p, const char *path, const MemLimits *limits, unsigned flags,
                       Refusal *rf);

/* What `memacctctl info` shows (service_get_info()). */
typedef struct ServiceInfo {
        const char *version;      /* "memacctd <version>"; static */
        uint64_t uptime_usec;
        uint64_t requests;        /* served on every transport since start */
        unsigned sessions, groups; /* now; groups with the root */
        /* The state file: "none" (nothing is saved: no state directory),
         * "saved" (every change is on disk), "saving" (changes wait for
         * the save under way), "failing" (the last save failed: durable
         * changes are refused until one succeeds). */
        const char *state;        /* static */
        char state_cause[192];    /* "failing": the step and its error; else "" */
        uint64_t saves;           /* saves that succeeded */
        uint64_t last_save_usec;  /* CLOCK_REALTIME of the last; 0: none */
} ServiceInfo;

/**
 * service_request_served() - count one request, whatever it was and
 * however it ended: the transports call it once per request they decode.
 * Any thread; one relaxed add.
 */
void service_request_served(Service *svc);

/**
 * service_get_info() - the daemon at a glance, for @p: anyone while reads
 * are open to all or to owners, root alone under [access] read = root.
 * Return: 0; -EPERM.
 */
int service_get_info(Service *svc, Peer *p, ServiceInfo *ret, Refusal *rf);

/* One session, as service_list_sessions() reports it. */
typedef struct ServiceSession {
        pid_t pid;
        uid_t uid;
        const char *comm;      /* /proc/PID/comm at connect; "" if unreadable */
        const char *transport; /* "socket" or "bus" */
        const char *group;     /* the attached group; "" when not attached */
        uint64_t bytes;        /* held by the session, all stat items */
        uint64_t stock;        /* of those, in its stock page unused (at most what it holds, by item) */
        bool reclaimable;      /* it declared charges it can give back */
        uint64_t reclaim_asked, reclaim_released, reclaim_late; /* PeerReclaim's */
} ServiceSession;

/* Called for each session a listing covers. Return: 0, or < 0 to stop with it. */
typedef int (*ServiceSessionFn)(void *userdata, const ServiceSession *s);

/**
 * service_list_sessions() - the sessions attached at or below @path
 * (NULL or "": every session, attached or not) that @p may see: root all
 * of them; another uid its own and those attached in a subtree delegated
 * to it. Snapshotted first, then handed to @fn outside every lock, newest
 * connection first. Return: 0; a path error, -ENOENT; -ENOMEM; @fn's error
 * (-ENOSPC: too many for one reply).
 */
int service_list_sessions(Service *svc, Peer *p, const char *path, ServiceSessionFn fn, void *userdata,
                          Refusal *rf);

/**
 * service_info_kept() - the bytes @info's group keeps itself (its kept
 * charges, all stat items), exact.
 */
uint64_t service_info_kept(const MemGroupInfo *info);

/**
 * service_info_session() - the bytes the sessions attached to @info's
 * group hold there: its own charges by stat item less what it keeps, as
 * of the last statistics flush (0 when a flush is still to land); its
 * children's usage is in neither.
 */
uint64_t service_info_session(const MemGroupInfo *info);

/**
 * service_set_owner() - delegate @path's subtree to @owner (0: to nobody
 * but root). Who may modify @path may, as authz.c rules: root to any uid,
 * a delegate above it only to itself (taking a group back). The group
 * count moves from the old owner to the new one, within its bounds. A
 * durable change: saved before the reply.
 * Return: 0; a path error, -ENOENT, -EPERM, -EINVAL (the root, uid -1),
 * -ENOSPC (the new owner owns too many groups).
 */
int service_set_owner(Service *svc, Peer *p, const char *path, uid_t owner, Refusal *rf);

/*
 * Called for each group a read covers, with the group held: @info is
 * NULL when the caller asked for paths only. Return: 0 to go on, or a
 * negative errno to stop (-ENOSPC: the reply would be too large); of a
 * paged list, > 0: the page is full without this group.
 */
typedef int (*ServiceGroupFn)(void *userdata, const char *path, const MemGroupInfo *info);

/* Flags of the reads */
#define SERVICE_READ_EXACT (1u << 0)     /* flush the statistics first */
#define SERVICE_READ_RECURSIVE (1u << 1) /* a list covers the whole subtree, not the children */
#define SERVICE_READ_PATHS (1u << 2)     /* paths only, no info: @fn gets NULL */

/**
 * service_get_group() - read @path (effective protection relative to
 * @reclaim_root, NULL or "" for the root) and call @fn once.
 * @p: NULL for a caller that has not identified itself: allowed while
 *     reads are open to all
 * Return: 0; a path error, -ENOENT, -EPERM, -EINVAL (not below the
 * reclaim root), or @fn's error.
 */
int service_get_group(Service *svc, Peer *p, const char *path, const char *reclaim_root, unsigned flags,
                      ServiceGroupFn fn, void *userdata, Refusal *rf);

/**
 * service_list_groups() - call @fn for each group below @path (NULL or ""
 * for "/") that the caller may read: its children, or with
 * SERVICE_READ_RECURSIVE @path and its whole subtree, parents first.
 * @p: NULL as for service_get_group()
 * Return: 0; a path error, -ENOENT, -ENOSPC (@fn said too large), -ENOMEM.
 */
int service_list_groups(Service *svc, Peer *p, const char *path, unsigned flags, ServiceGroupFn fn,
                        void *userdata, Refusal *rf);

/* A page of a list: what the caller asks, and where the list stands after it. */
typedef struct ServiceListPage {
        const char *after; /* the cursor: the previous page's next; NULL or "": from the start */
        unsigned limit;    /* at most this many groups; 0: no count */
        bool more;         /* groups follow: ask again with next as after */
        bool restarted;    /* the cursor's group is gone: this page starts the list again */
        char next[MEM_PATH_MAX + 1]; /* with more: the last group listed ("" if none) */
} ServiceListPage;

/**
 * service_list_groups_page() - service_list_groups() from the cursor
 * @page->after on, until @page->limit groups or until @fn returns > 0
 * (the reply is full: the group it was given is not taken, and starts
 * the next page). Each page costs what it lists: the cursor is found by
 * its path, not by a walk from the start. The order is pre-order,
 * children in creation order; a group that exists from the first page
 * to the last is listed exactly once, unless a group named by a cursor
 * is removed and created again between two pages (then the list goes on
 * after the new one); see docs/design.md, "Listing in pages".
 * @p: NULL as for service_get_group()
 * Return: 0; a path error, -ENOENT, -EINVAL (the cursor names a group
 * outside the list), -ENOSPC (@fn: not even one group fits), -ENOMEM.
 */
int service_list_groups_page(Service *svc, Peer *p, const char *path, unsigned flags, ServiceListPage *page,
                             ServiceGroupFn fn, void *userdata, Refusal *rf);

/** service_reset_peak() - restart @path's peak from its usage. Return: 0; a lookup error, -EPERM. */
int service_reset_peak(Service *svc, Peer *p, const char *path, Refusal *rf);

/**
 * service_import_cgroups() - mirror the kernel cgroup @from (NULL or "":
 * "/") and everything below it as groups under @under (NULL or "": the
 * configured prefix). Root only. Return: 0 with the counts; -EPERM,
 * -ENOENT (no mirror, or no such cgroup), -EINVAL, another import error.
 */
typedef struct ServiceImportCounts {
        unsigned created, updated, unchanged;
        unsigned kept;         /* user-set limits kept against the kernel's, over all groups */
        unsigned kernel_owned; /* MemLimitMask: the limits the kernel exposes on this host */
} ServiceImportCounts;
int service_import_cgroups(Service *svc, Peer *p, const char *from, const char *under,
                           ServiceImportCounts *ret, Refusal *rf);

/* One group whose user-set limits @kept (MemLimitMask) an import kept: ours in @ours, the kernel's in @kernel. */
typedef void (*ServiceKeptFn)(void *userdata, const char *group, unsigned kept, const MemLimits *ours,
                              const MemLimits *kernel);

/* Request flags of service_import_cgroups_with(). */
#define SERVICE_IMPORT_RESET_LIMITS (1u << 0) /* give user-set limits back to the kernel */

/**
 * service_import_cgroups_with() - service_import_cgroups(), keeping the
 * limits a user set on a mirror (service_set_limits() marks them) unless
 * @flags has SERVICE_IMPORT_RESET_LIMITS, which gives them back to the
 * kernel; @fn (NULL: nobody) is told of each group where a kept limit
 * differs from the kernel's, during the call.
 */
int service_import_cgroups_with(Service *svc, Peer *p, const char *from, const char *under, unsigned flags,
                                ServiceKeptFn fn, void *userdata, ServiceImportCounts *ret, Refusal *rf);

/* A charge or uncharge as a client asks for it. */
typedef struct ServiceCharge {
        const char *path; /* NULL or "": the session's group (session charges) */
        uint64_t bytes;
        bool has_bytes;   /* false: the client sent none (an error) */
        const char *stat; /* NULL or "": anon */
        bool keep;        /* the charge belongs to the group, not the session */
        bool force;       /* past max (root only) */
        bool stock;       /* a stock refill (session charges; refused silently, no oom) */
        const char *region; /* NULL, "" or "memory": memory; else a device region (no stat item) */
        /* The transport can hold the request while reclaim runs
         * (service_reclaim_wait_usec()); the client did not ask to be
         * refused at once instead (no_wait). */
        bool can_wait;
        bool no_wait;
} ServiceCharge;

typedef struct ServiceChargeResult {
        uint64_t over_high;     /* bytes the worst ancestor is above its high */
        uint64_t throttle_usec; /* suggested back-off, 0 when none */
        bool over_max;          /* a forced charge left a group above its max */
        uint64_t margin;        /* what the tightest max above still admits (a hint) */
        /* A refill in a device region: the page counter it went to
         * (memacct(7), "The stock page"); 0 otherwise (memory's items
         * are known to the client, and 0 is never a region's). */
        unsigned stock_index;
} ServiceChargeResult;

/**
 * service_charge() - charge @c: kept on the group, or on the caller's
 * session (which attaches to @c->path when it is not attached yet). A
 * refusal by a max first drains the stock under the refusing group and
 * tries once more; then, when @c->can_wait and not @c->no_wait, the
 * reclaimable holders below the refusing group are asked to give back
 * what the charge needs (service-reclaim.c) and the charge waits:
 * -EINPROGRESS, and the transport serves the same request again once
 * service_reclaim_wait_usec() says 0, up to SERVICE_RECLAIM_TRIES tries.
 * Return: 0 with @ret; -EINPROGRESS; -EDQUOT (@rf names the refusing
 * group); -EINVAL, -EPERM, -ENOTCONN, -ENOENT, -EOVERFLOW, -EUSERS.
 */
int service_charge(Service *svc, Peer *p, const ServiceCharge *c, ServiceChargeResult *ret, Refusal *rf);

/* The tries a charge makes, reclaim between them, before it is refused. */
#define SERVICE_RECLAIM_TRIES 5

/**
 * service_set_reclaimable() - @p's charges in @region (NULL or "":
 * memory; there @stat names one stat item, NULL or "" every one) can
 * (@on) be given back when asked: reclaim sends it requests
 * (events_send(), EVENT_RECLAIM) for them, sized by what it holds of
 * what it declared. Return: 0; -ENOENT (no such region); -EINVAL (an
 * unknown stat item, or one in a device region); -EOPNOTSUPP (its
 * transport cannot carry requests).
 */
int service_set_reclaimable(Service *svc, Peer *p, const char *region, const char *stat, bool on,
                            Refusal *rf);

/**
 * service_reclaim_done() - @p answers request @id: it gave back what it
 * could (its uncharges came first), or it @cannot. Counted as released
 * what it holds less than when asked. An answer to a request whose round
 * is over counts nothing but makes @p asked again. Return: 0.
 */
int service_reclaim_done(Service *svc, Peer *p, uint64_t id, bool cannot);

/**
 * service_reclaim_wait_usec() - @p's charge waits for a round: the µs
 * until its deadline; 0 when it may be served again now (every holder
 * answered, or the deadline passed); UINT64_MAX when it waits for none.
 */
uint64_t service_reclaim_wait_usec(Service *svc, Peer *p);

/* A proactive reclaim (service_reclaim()). */
typedef struct ServiceReclaim {
        const char *path;   /* the group whose subtree gives back */
        const char *region; /* NULL, "" or "memory": memory */
        uint64_t bytes;
        bool can_wait;      /* the transport can hold the request (as ServiceCharge's) */
} ServiceReclaim;

/**
 * service_reclaim() - memory.reclaim: ask the reclaimable holders at or
 * below @rq->path for @rq->bytes, by the kernel's split, ignoring the
 * group's own protection, and answer what came back in *@ret_released.
 * The request waits for the answers: -EINPROGRESS, then served again as
 * a waiting charge is (service_reclaim_wait_usec()). Who may set the
 * group's limits may ask. Return: 0 (also when nobody could be asked,
 * with 0 released); -EINPROGRESS; -EPERM; -ENOENT; -EOVERFLOW.
 */
int service_reclaim(Service *svc, Peer *p, const ServiceReclaim *rq, uint64_t *ret_released, Refusal *rf);

/**
 * service_reclaim_set_timeout() - how long a round waits for its holders'
 * answers from now on ([reclaim] timeout). Any thread.
 */
void service_reclaim_set_timeout(Service *svc, uint64_t usec);

/**
 * service_uncharge() - release @c (force and stock do not apply).
 * Return: 0; -ERANGE (more than is held: nothing released); as charge.
 */
int service_uncharge(Service *svc, Peer *p, const ServiceCharge *c, Refusal *rf);

/**
 * service_attach() - attach the caller's session to @path; "" and "auto"
 * mean the group of the placement rule that covers its kernel memory
 * cgroup best, or when none does the mirror of that cgroup. Return: 0; a
 * lookup error, -EPERM, -EBUSY (it holds charges), -ESRCH, -EUSERS.
 */
int service_attach(Service *svc, Peer *p, const char *path, Refusal *rf);

/**
 * service_attach_to() - service_attach(), and the path of the group the
 * session is attached to now copied to @ret_path (@size bytes; at least
 * MEM_PATH_MAX + 1 always fits): the transports answer it, so a caller
 * of "auto" learns which group the daemon chose. Return: as
 * service_attach().
 */
int service_attach_to(Service *svc, Peer *p, const char *path, char *ret_path, size_t size, Refusal *rf);

/**
 * service_move() - move the caller's own session (@pid 0), or every
 * session of process @pid (root only, or the caller's own pid), with
 * everything they hold, to @path. Return: the sessions moved; a lookup
 * error, -EPERM, -EDQUOT, -ESRCH, -ENOTCONN.
 */
int service_move(Service *svc, Peer *p, pid_t pid, const char *path, Refusal *rf);

/**
 * service_get_client() - the RSS counters of process @pid (0: the
 * caller's, whose pid is then in *@ret_pid), exact when @exact.
 * Return: 0; -EPERM, -ESRCH.
 */
int service_get_client(Service *svc, Peer *p, pid_t pid, bool exact, pid_t *ret_pid,
                       uint64_t ret[_MEM_RSS_MAX], Refusal *rf);

/**
 * service_subscribe() - deliver the caller the memory events of @path
 * (NULL or "": "/") and below. Return: 0; a lookup error, -EPERM,
 * -EINVAL (its transport cannot deliver events), -ENOSPC, -ENOMEM.
 */
int service_subscribe(Service *svc, Peer *p, const char *path, Refusal *rf);

/**
 * service_subscribe_region() - service_subscribe() of the events in
 * @region: NULL, "" or "memory" memory's (what service_subscribe()
 * delivers), a device region's, or "*" every region's. A subscription
 * follows the region it named: one removed and registered again is
 * another. Return: as service_subscribe(); -ENOENT (no such region).
 */
int service_subscribe_region(Service *svc, Peer *p, const char *path, const char *region, Refusal *rf);

/**
 * service_stock_setup() - share the memfd @fd (-1: none was sent) as the
 * caller's stock page: sealed against shrink, grow and seal, exactly
 * SERVICE_STOCK_PAGE_SIZE bytes. @fd stays the caller's. Return: 0;
 * -EINVAL, -EBUSY (it has one), -errno of mmap().
 */
int service_stock_setup(Service *svc, Peer *p, int fd, Refusal *rf);

/* ---- device memory regions (service-regions.c) ---- */

/**
 * service_add_region() - register the device region @name with
 * @capacity bytes (UINT64_MAX: unlimited). Root only; durable. The same
 * region again is a success. Return: 0; -EPERM, -EINVAL, -ENAMETOOLONG,
 * -EEXIST (another capacity), -ENOSPC.
 */
int service_add_region(Service *svc, Peer *p, const char *name, uint64_t capacity, Refusal *rf);

/**
 * service_remove_region() - unregister @name, with every group's limits
 * in it. Root only; durable. Return: 0; -EPERM, -EINVAL ("memory"),
 * -ENOENT, -EBUSY (something is charged to it).
 */
int service_remove_region(Service *svc, Peer *p, const char *name, Refusal *rf);

/**
 * service_list_regions() - the regions, "memory" first, into @ret
 * (MEM_REGION_MAX fit). Whoever may read the daemon's info. Return: the
 * count; -EPERM.
 */
int service_list_regions(Service *svc, Peer *p, MemRegionDesc *ret, unsigned max, Refusal *rf);

/**
 * service_set_region_limits() - service_set_limits() in @region (NULL,
 * "" or "memory": service_set_limits()). In a device region a max below
 * usage is always taken, as a dmem.max write: new charges are refused
 * from then on, and an oom event says so; the reclaim that follows is
 * memory's forced one. Return: as
 * service_set_limits(); -ENOENT also for an unknown region; -EINVAL for
 * a max on the root (its capacity).
 */
int service_set_region_limits(Service *svc, Peer *p, const char *path, const char *region,
                              const MemLimits *limits, unsigned flags, Refusal *rf);

/**
 * service_get_group_region() - service_get_group() whose info carries, in
 * regions[], exactly @region's entry: for a device region the group's
 * counters there (all zero and limits "max" when it has none yet); for
 * "" or "memory" none, memory's figures being the info's own; NULL:
 * every device region the group has counters in, as service_get_group().
 * Return: as service_get_group(); -ENOENT also for an unknown region.
 */
int service_get_group_region(Service *svc, Peer *p, const char *path, const char *reclaim_root,
                             const char *region, unsigned flags, ServiceGroupFn fn, void *userdata,
                             Refusal *rf);

/** service_list_groups_page_region() - service_list_groups_page(), @region as service_get_group_region() takes it. */
int service_list_groups_page_region(Service *svc, Peer *p, const char *path, const char *region, unsigned flags,
                                    ServiceListPage *page, ServiceGroupFn fn, void *userdata, Refusal *rf);

/** service_reset_region_peak() - service_reset_peak() in @region. */
int service_reset_region_peak(Service *svc, Peer *p, const char *path, const char *region, Refusal *rf);

/**
 * service_transfer() - move @bytes of kept charge from @from to @to in
 * @region (@stat: memory's stat item, NULL: anon): @to is charged first,
 * against its limits, then @from is uncharged; a refusal of either leaves
 * both as they were. The caller must be allowed to use both groups, and
 * to release what it asks to move (a delegate not the delegator's).
 * Durable. Return: 0; -EDQUOT (@to's limit), -ERANGE (@from keeps fewer),
 * -EPERM, a lookup error, -EINVAL.
 */
int service_transfer(Service *svc, Peer *p, const char *from, const char *to, uint64_t bytes,
                     const char *region, const char *stat, Refusal *rf);

typedef enum ServiceEvict {
        SERVICE_EVICT_NO,
        SERVICE_EVICT_YES,
        SERVICE_EVICT_HIT_LOW,
} ServiceEvict;

/**
 * service_evict_valuable() - may memory of @candidate be evicted to make
 * room under @limit (NULL or "": no limiting group, protection computed
 * from the root; "/" limits at the root: always yes), in @region? The kernel's
 * dmem_cgroup_state_evict_valuable(): protection computed from @limit
 * down. Return: a ServiceEvict; a lookup error, -EPERM (both must be
 * readable).
 */
int service_evict_valuable(Service *svc, Peer *p, const char *limit, const char *candidate,
                           const char *region, bool ignore_low, Refusal *rf);

/* ---- placement rules (service-placement.c) ---- */

/* A placement rule's flags, as the transports carry them. */
#define SERVICE_RULE_CONFINE 1u /* the cgroup is a container's: its processes are confined to the group */

/**
 * service_add_rule() - the placement rule @cgroup (a kernel cgroup path)
 * -> @group (which exists), with @flags (SERVICE_RULE_CONFINE: confine the
 * cgroup's processes to @group, authz.h); on disk before it
 * returns. Root only. One cgroup has one rule: the same rule again is a
 * success, another is refused (remove the old one first). A confining
 * rule is never of "/" or of a cgroup that holds the daemon itself.
 * Return: 0; -EPERM, -EINVAL, a lookup error of @group, -EEXIST, -ENOSPC
 * (too many rules), the -errno of the save.
 */
int service_add_rule(Service *svc, Peer *p, const char *cgroup, const char *group, unsigned flags,
                     Refusal *rf);

/**
 * service_remove_rule() - remove the placement rule of @cgroup; on disk
 * before it returns. Root only. A cgroup with no explicit rule but a
 * mirror is refused with -EBUSY and what to do instead. Return: 0; -EPERM,
 * -EINVAL, -ENOENT, -EBUSY, the -errno of the save.
 */
int service_remove_rule(Service *svc, Peer *p, const char *cgroup, Refusal *rf);

/* Called for each rule a list covers (@mirror: a kernel cgroup mirror's;
 * @flags: SERVICE_RULE_*); a negative errno stops (-ENOSPC: too large). */
typedef int (*ServiceRuleFn)(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags);

/**
 * service_list_rules() - call @fn for each placement rule whose group the
 * caller may read (root: every explicit rule), sorted by cgroup, and with
 * @with_mirrors each kernel cgroup mirror as a rule of kind mirror too
 * (of one cgroup, the explicit rule comes first).
 * @p: NULL as for service_get_group()
 * Return: 0; -ENOSPC (@fn said too large), or @fn's error.
 */
int service_list_rules(Service *svc, Peer *p, bool with_mirrors, ServiceRuleFn fn, void *userdata,
                       Refusal *rf);
