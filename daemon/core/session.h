/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Sessions (one client connection) and clients (all sessions of one
 * process instance: a pid and the instance stamp the service gave it, so
 * that a process that gets a recycled pid is another client), with the
 * clients' split RSS counters and session moves.
 */

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu/list.h>
#include <urcu/rculfhash.h>

#include "charge.h"
#include "core.h"
#include "region.h"

/* session_charge() flag: on a refusal, drain the stock pages of the
 * sessions under the refusing group and try once more (drain_all_stock()). */
#define MEM_CHARGE_DRAIN (1u << 8)

/** mem_rss_from_stat() - the RSS member a stat item feeds, or -EINVAL for none. */
MemRss mem_rss_from_stat(MemStatItem item);

/* Before fast path 4 (SPLIT_RSS_COUNTING): sync all members every 64 events. */
#define MEM_RSS_EVENTS_THRESH 64

typedef struct MemClient {
        _Atomic int64_t rss[_MEM_RSS_MAX] _cacheline_aligned_;
        pid_t pid;
        uint64_t instance; /* which process of that pid; 0: none vouched for */
        unsigned refs; /* sessions; clients_lock */
        struct cds_list_head sessions; /* clients_lock */
        struct cds_lfht_node node;
        struct rcu_head rcu;
} MemClient;

typedef struct MemSession {
        /* Written by the session's own thread on every charge. */
        _Atomic int64_t rss_delta[_MEM_RSS_MAX];
        unsigned rss_events; /* before-variant only */
        /* Also written by stock drains from other threads: RMW only. */
        _Atomic int64_t held[_MEM_STAT_MAX];
        /* Device region charges it holds, by region slot (region.h):
         * allocated by its own thread on its first one, read by movers
         * under the group's move protocol, like held. */
        _Atomic(_Atomic int64_t *) region_held;
        /* Shared with the client process: its unused stock per item. */
        _Atomic uint64_t *stock;
        /* The device region whose counter each region slot of the page
         * is (0: none yet): a slot reused by a later region keeps its
         * first one for the page's life. Owner thread only. */
        int stock_region_key[MEM_REGION_MAX];
        struct cds_list_head stock_link; /* core->stock_sessions; stock_lock */

        MemCore *core;
        MemClient *client;
        _Atomic(MemGroup *) group; /* attached group, holds a reference */
        void *userdata;            /* the transport's, for the move hook */
        pid_t pid;
        uid_t uid;
        gid_t gid;
        struct cds_list_head client_link; /* clients_lock */
} MemSession;

/**
 * session_new_process() - a session for a peer whose identity the kernel
 * vouched for: process @pid, instance @instance (an opaque stamp, equal
 * for the same process and different for another process that got the
 * same pid; 0: no instance was vouched for, the pid is all there is).
 * Sessions of the same @pid and @instance are one client.
 * Return: 0 or -ENOMEM.
 */
int session_new_process(MemCore *core, pid_t pid, uint64_t instance, uid_t uid, gid_t gid,
                        MemSession **ret);

/** session_new() - session_new_process() with instance 0 (in-process callers). */
int session_new(MemCore *core, pid_t pid, uid_t uid, gid_t gid, MemSession **ret);

/**
 * session_free() - end the session: everything it holds is uncharged, its
 * RSS residue folded into its client. Safe against a concurrent move.
 */
MemSession *session_free(MemSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(MemSession *, session_free);

/**
 * session_attach() - attach to @g. Only while the session holds nothing;
 * to change group with charges, move it.
 * Return: 0; -EBUSY (holds charges); -ENOENT (@g is being removed).
 */
int session_attach(MemSession *s, MemGroup *g);

/**
 * session_charge() - charge @bytes of @item to the attached group; the
 * charge belongs to the session. The session's own calls are serialised by
 * its owner (one worker); moves from other threads are safe.
 * Return: as group_charge(), and -ENOTCONN when not attached.
 */
int session_charge(MemSession *s, uint64_t bytes, MemStatItem item, unsigned flags,
                   MemChargeResult *ret);

/**
 * session_uncharge() - release @bytes of @item the session holds.
 * Return: 0, -ERANGE (holds fewer; nothing released), -ENOTCONN, -EINVAL.
 */
int session_uncharge(MemSession *s, uint64_t bytes, MemStatItem item);

uint64_t session_held(MemSession *s, MemStatItem item);

/**
 * session_charge_region() - session_charge() in device region @key
 * (region.h), with MEM_CHARGE_DRAIN draining the clients' stock pages
 * in @key under a refusing group before one more try.
 * Return: as session_charge(); -ENOENT (no such region), -EINVAL
 * (memory's key: use session_charge()), -ENOMEM.
 */
int session_charge_region(MemSession *s, int key, uint64_t bytes, unsigned flags, MemChargeResult *ret);

/** session_uncharge_region() - session_uncharge() in device region @key. Return: as session_uncharge(), -ENOENT. */
int session_uncharge_region(MemSession *s, int key, uint64_t bytes);

/** session_held_region() - what the session holds in device region @key. */
uint64_t session_held_region(MemSession *s, int key);

/**
 * session_charge_region_stock() - session_charge_stock() in device
 * region @key: the bytes go to the page's counter of the region's slot,
 * whose index is stored in *@ret_index. Return: as session_charge_stock();
 * -EBUSY (the counter is an earlier region's of the slot: the client's
 * view of it would mix the two; the caller charges exactly instead).
 */
int session_charge_region_stock(MemSession *s, int key, uint64_t bytes, MemChargeResult *ret, unsigned *ret_index);

/*
 * The stock page (memacct(7), "The stock page"): per stat item of
 * memory the unused stock, then, written by the daemon alone, the totals
 * its refills added to each item and its drains took from it, from which
 * the client derives what it holds; after those the same three rows for
 * device regions, one counter per region slot (slot 0, memory's, unused).
 */
#define MEM_STOCK_REFILLED(item) (_MEM_STAT_MAX + (item))
#define MEM_STOCK_DRAINED(item) (2 * _MEM_STAT_MAX + (item))
#define MEM_STOCK_REGION(slot) (3 * _MEM_STAT_MAX + (slot))
#define MEM_STOCK_REGION_REFILLED(slot) (MEM_STOCK_REGION(slot) + MEM_REGION_MAX)
#define MEM_STOCK_REGION_DRAINED(slot) (MEM_STOCK_REGION(slot) + 2 * MEM_REGION_MAX)
#define MEM_STOCK_COUNTERS (3 * _MEM_STAT_MAX + 3 * MEM_REGION_MAX)

/**
 * session_set_stock() - share @page (MEM_STOCK_COUNTERS counters, mapped
 * from the client) as the session's stock. The page must stay mapped until
 * session_free() returns. Return: 0, -EBUSY if the session has one.
 */
int session_set_stock(MemSession *s, _Atomic uint64_t *page);

/**
 * session_charge_stock() - a stock refill: session_charge() of @bytes,
 * and on success the bytes are added to the page's @item counter. A
 * refused refill raises max but not oom (the client falls back to an
 * exact charge). Return: as session_charge(), -ENXIO without a page.
 */
int session_charge_stock(MemSession *s, uint64_t bytes, MemStatItem item, MemChargeResult *ret);

/**
 * core_drain_stock() - empty the stock pages of every session attached at
 * or below @under, memory's items (@key MEM_REGION_MEMORY) or device
 * region @key's counter, and uncharge what was in them (at most what each
 * session holds, whatever its page says). Return: the bytes released.
 */
uint64_t core_drain_stock(MemCore *core, MemGroup *under, int key);

/**
 * core_charge_kept_in() - group_charge_kept() of @item in memory (@key
 * MEM_REGION_MEMORY), or region_charge_kept() in device region @key,
 * that with MEM_CHARGE_DRAIN drains the stocks in @key under a refusing
 * group and retries once.
 */
int core_charge_kept_in(MemCore *core, MemGroup *g, int key, uint64_t bytes, MemStatItem item, unsigned flags,
                        MemChargeResult *ret);

/** core_charge_kept() - core_charge_kept_in() in memory. */
static inline int core_charge_kept(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item, unsigned flags,
                                   MemChargeResult *ret) {
        return core_charge_kept_in(core, g, MEM_REGION_MEMORY, bytes, item, flags, ret);
}

/**
 * session_move() - move the session and everything it holds to @dst,
 * atomically for core_read_usage_consistent() readers. @dst is charged
 * with try-charge semantics up to the common ancestor.
 * Return: 0; -EDQUOT (nothing moved; ret->refused set); -ENOENT (@dst is
 * being removed); -ENOTCONN.
 */
int session_move(MemSession *s, MemGroup *dst, MemChargeResult *ret);

/**
 * client_move() - move every session of @pid to @dst with everything they
 * hold, all or nothing: when this fails, none moved. A session that is
 * not attached yet (it holds nothing) is attached to @dst with the
 * others, as writing a pid to cgroup.procs moves every thread.
 * Return: the number of sessions (now all in @dst); -ESRCH (no such
 * client); -EDQUOT (ret->refused set); -ENOENT (@dst is being removed);
 * -ENOMEM.
 */
int client_move(MemCore *core, pid_t pid, MemGroup *dst, MemChargeResult *ret);

/* client_move_process() @uid: sessions of any uid. */
#define MEM_UID_ANY ((uid_t) -1)

/**
 * client_move_process() - client_move() of the sessions of process @pid
 * instance @instance, and of those of @pid opened with instance 0 (no
 * instance vouched for), that belong to @uid (MEM_UID_ANY: every uid).
 * The others of @pid stay where they are. All or nothing, as client_move().
 * Return: as client_move(); -ESRCH when no session matches.
 */
int client_move_process(MemCore *core, pid_t pid, uint64_t instance, uid_t uid, MemGroup *dst,
                        MemChargeResult *ret);

/**
 * client_read_rss() - the client's RSS counters in bytes. Approximate:
 * the shared counters, clamped at 0, off by at most rss_threshold per
 * session per member. Exact: the residues of every session folded in.
 * Return: 0 or -ESRCH.
 */
int client_read_rss(MemCore *core, pid_t pid, bool exact, int64_t ret[_MEM_RSS_MAX]);

/**
 * client_read_rss_process() - client_read_rss() of the client of process
 * @pid instance @instance, or when there is none, of @pid's client with
 * instance 0. Return: 0 or -ESRCH.
 */
int client_read_rss_process(MemCore *core, pid_t pid, uint64_t instance, bool exact,
                            int64_t ret[_MEM_RSS_MAX]);
