/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The registry of peers and sessions, for every transport: a Peer is one
 * client connection (a socket connection, a bus peer's unique name), with
 * the identity its kernel or bus daemon vouched for, its core session
 * once it has one, its stock page and its event subscriptions. The
 * registry counts sessions, overall and per uid, and enforces the per-uid
 * cap ([limits] sessions-per-uid; root is never limited).
 *
 * It also keeps what else each uid makes the daemon hold (UidUsage): its
 * socket connections, event subscriptions, the groups it owns and the
 * bytes of output waiting for its clients, each bounded per uid and, for
 * all uids but root together, in total, so that root always has room.
 *
 * A peer belongs to the transport thread that made it: it is used and
 * freed there only. The counts may be read from any thread.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/selfstats.h"
#include "service/events.h"

typedef struct MemGroup MemGroup;
typedef struct MemSession MemSession;
typedef struct Registry Registry;

/* Who a peer is, as the kernel (SO_PEERCRED) or the bus daemon said. */
typedef struct PeerCreds {
        ServiceTransport transport; /* the transport that carries its requests */
        pid_t pid;
        uid_t uid;
        gid_t gid; /* (gid_t) -1: not vouched for (the bus) */
        /* Which process had @pid (base/procid.h): the transport's
         * stamp. 0: none (in-process peers only; a transport always
         * gives one), and then the pid is all the identity there is. */
        uint64_t instance;
        /* Whose bounds it counts against (sessions, connections,
         * subscriptions, groups): @uid, or a confined peer's account
         * (service_account()). The service sets it; transports leave it. */
        uid_t account;
} PeerCreds;

typedef struct ReclaimRound ReclaimRound;

/*
 * A peer's part in reclaim (service-reclaim.c): what it declared it can
 * give back, what it was asked and gave, and the charge of its own that
 * waits for a round. Under the service's reclaim lock, but waiting,
 * stalled and tries, which only its own thread touches.
 */
typedef struct PeerReclaim {
        /* Atomic, so that a sessions listing reads them without the lock. */
        _Atomic uint32_t parts;    /* reclaimable: bit 0 memory, bit s device region slot s */
        _Atomic uint32_t items;    /* memory's part, item by item (bit per MemStatItem); parts bit 0: all */
        bool skip;                 /* late: asked no more until it answers */
        _Atomic uint64_t asked;    /* bytes it was asked for */
        _Atomic uint64_t released; /* bytes it gave back when asked */
        _Atomic uint64_t late;     /* requests it answered after the deadline, or never */
        _Atomic uint64_t refused;  /* requests it said it cannot meet */
        ReclaimRound *waiting; /* the round its charge waits for; NULL: none */
        /* The group its waiting charge stalls (core/pressure.h), with a
         * reference; NULL: none (no charge waits, or an admin's request). */
        MemGroup *stalled;
        unsigned tries;      /* rounds its charge in progress has waited for */
        bool limits_taken;   /* the SetLimits that waits took its limits before the round */
        /* The transport's: the round it waits for ended (any thread; must not block). */
        void (*wake)(void *userdata);
        void *wake_userdata;
} PeerReclaim;

typedef struct Peer {
        Registry *registry;
        PeerCreds creds;
        AuthzWho who;               /* what authorisation looks at: creds.uid, and confinement */
        EventSubscriber subscriber; /* the session's userdata points here */
        MemSession *session;        /* NULL until peer_open_session() */
        void *stock_page;           /* mapped from the client; NULL: none */
        size_t stock_page_size;
        bool internal;              /* the daemon itself (service_daemon_peer()): no session */
        uint64_t saver_seq;       /* the change the last OK waits for (service_peer_take_wait()) */
        MemGroup **transient;       /* groups it created transient, with a reference each */
        size_t ntransient;
        char comm[16];              /* /proc/PID/comm at connect; "" if unreadable */
        /* The device region its last charge named, and its key: a GPU
         * allocator names the same region charge after charge, and one
         * comparison then replaces a lookup (service_peer_region_key()).
         * Its own thread only. */
        int region_key;             /* 0: none cached */
        char region_name[MEM_REGION_NAME_MAX + 1];
        PeerReclaim reclaim;
        /* In the registry's list of peers with a session (peers_lock). */
        struct Peer *list_prev, *list_next;
} Peer;

/* Called by registry_peer_free() once @p's session has ended, before @p is
 * freed: the service removes the peer's transient groups there. */
typedef void (*RegistryPeerGoneFn)(void *userdata, Peer *p);

/** registry_new() - an empty registry; peers' subscriptions go to @events. Return: 0, -ENOMEM. */
int registry_new(MemCore *core, Events *events, Registry **ret);

/** registry_free() - free a registry whose peers are all gone. */
Registry *registry_free(Registry *r);

/**
 * registry_set_peer_gone() - call @leaving(@userdata, peer) from every
 * registry_peer_free(), once the peer is off the list of sessions and
 * before its session (if any) ends, and @fn(@userdata, peer) from every
 * registry_peer_free(), on the peer's thread, after its session ended.
 * Before other threads use @r.
 */
void registry_set_peer_gone(Registry *r, RegistryPeerGoneFn leaving, RegistryPeerGoneFn fn, void *userdata);

/**
 * peer_add_transient() - remember that @p created the group @g
 * transient (a reference is taken), for the peer-gone hook; the hook
 * owns the references and sets ntransient to 0 (registry_peer_free()
 * drops whatever it leaves). On the peer's thread. Return: 0 or -ENOMEM.
 */
int peer_add_transient(Peer *p, MemGroup *g);

/** registry_set_sessions_per_uid() - the per-uid cap for sessions opened from now on (0: none). */
void registry_set_sessions_per_uid(Registry *r, unsigned max);

/** registry_sessions_per_uid() - the cap in force (0: none); any thread. */
unsigned registry_sessions_per_uid(Registry *r);

/** registry_session_count() - sessions open now, on every transport; any thread. */
unsigned registry_session_count(Registry *r);

/**
 * registry_peer_new() - a peer, without a session yet.
 * @delivery: how events reach it (NULL: it receives none); @userdata is
 *            passed to it
 * Return: 0 or -ENOMEM.
 */
int registry_peer_new(Registry *r, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                      Peer **ret);

/**
 * registry_peer_free() - the peer is gone: its subscriptions stop (no push
 * after this returns), its session ends and everything it holds is
 * uncharged, its stock page is unmapped. On the peer's thread, which is
 * registered with the core. Return: NULL.
 */
Peer *registry_peer_free(Peer *p);

/**
 * peer_open_session() - open @p's session if it has none (one of its
 * uid's sessions). On the peer's thread. Return: 0; -EUSERS (the uid's
 * sessions are used up); -ENOMEM.
 */
int peer_open_session(Peer *p);

/**
 * registry_peer_set_stock() - @p's stock page is @page, @size bytes:
 * set where registry_for_each_session() may read it. @p's thread.
 */
void registry_peer_set_stock(Peer *p, void *page, size_t size);

/**
 * registry_for_each_session() - call @fn for every peer with a session,
 * under the registry's peers lock: @fn must be quick, may look at the
 * peer's session, creds, comm and stock page (which stay put meanwhile)
 * and take the core's read lock, but take no other lock. Stops at @fn's
 * first non-zero return. Any thread. Return: that, or 0.
 */
int registry_for_each_session(Registry *r, int (*fn)(Peer *p, void *userdata), void *userdata);

/* ---- what a uid holds besides its sessions ---- */

/* What is counted per uid and bounded ([limits] in memacctd.conf). */
typedef enum UidResource {
        UID_CONNECTIONS,   /* socket connections */
        UID_SUBSCRIPTIONS, /* event subscriptions */
        UID_GROUPS,        /* groups it owns */
        _UID_RESOURCE_MAX,
        _UID_RESOURCE_INVALID = -EINVAL,
} UidResource;

/* The bounds; 0 is no bound. Totals count every uid but root. */
typedef struct RegistryBounds {
        unsigned per_uid[_UID_RESOURCE_MAX];
        unsigned total[_UID_RESOURCE_MAX];
        uint64_t output_per_uid; /* bytes of unwritten output and queued events */
        uint64_t output_total;
} RegistryBounds;

/* One uid's counts; held (registry_usage_get()) by whoever adds output to it. */
typedef struct UidUsage UidUsage;

/** registry_set_bounds() - the bounds for what is acquired from now on; any thread. */
void registry_set_bounds(Registry *r, const RegistryBounds *b);

/** registry_bounds() - the bounds in force; any thread. */
RegistryBounds registry_bounds(Registry *r);

/**
 * registry_usage_get() - @uid's counts, with a reference that keeps them
 * (and the pointer) valid until registry_usage_put(). Any thread.
 * Return: the counts, or NULL when out of memory.
 */
UidUsage *registry_usage_get(Registry *r, uid_t uid);

/** registry_usage_put() - drop a reference from registry_usage_get(). Accepts NULL. Return: NULL. */
UidUsage *registry_usage_put(Registry *r, UidUsage *u);

/**
 * registry_usage_acquire() - count one more @what for @u, unless a bound
 * is reached; root (uid 0) and @force are never refused (but counted).
 * Any thread; concurrent calls never together pass a bound.
 * Return: 0; -EUSERS (@u's own bound), -ENOSPC (the total of all uids).
 */
int registry_usage_acquire(Registry *r, UidUsage *u, UidResource what, bool force);

/** registry_usage_release() - @n fewer @what for @u (acquired before). Any thread. */
void registry_usage_release(Registry *r, UidUsage *u, UidResource what, unsigned n);

/**
 * registry_uid_acquire() - registry_usage_acquire() for @uid, without a
 * reference to keep (the count keeps the entry). Any thread.
 * Return: as registry_usage_acquire(), or -ENOMEM.
 */
int registry_uid_acquire(Registry *r, uid_t uid, UidResource what, bool force);

/** registry_uid_release() - undo @n registry_uid_acquire(@uid, @what). Any thread. */
void registry_uid_release(Registry *r, uid_t uid, UidResource what, unsigned n);

/** registry_uid_count() - how many @what @uid holds now; any thread. */
unsigned registry_uid_count(Registry *r, uid_t uid, UidResource what);

/**
 * registry_output_add() - @delta more (or, negative, fewer) bytes wait to
 * be written to a client of @u. Any thread; no lock.
 */
void registry_output_add(Registry *r, UidUsage *u, int64_t delta);

/**
 * registry_output_over() - is @u (never root) or the total of all uids
 * but root above its output bound? Then its clients' reading pauses
 * and its events are not queued. Any thread; no lock.
 */
bool registry_output_over(Registry *r, const UidUsage *u);
