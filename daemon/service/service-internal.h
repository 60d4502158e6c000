/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the service's operation files (service-groups.c,
 * service-charges.c) share: the object and the look-ups every operation
 * starts with.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/core.h"
#include "core/group.h"
#include "core/region.h"
#include "state/saver.h"
#include "cgroup/placement.h"
#include "service/service.h"

/* The settings, read on every request by every transport thread: one
 * relaxed load each, no lock. A reload changes them one at a time; each
 * is independent of the others. */
typedef struct LiveSettings {
        _Atomic uint32_t max_frame;
        _Atomic uint64_t charge_batch;
        _Atomic int read_access;
        _Atomic int confined_read;
} LiveSettings;

/* A transient group whose creator is gone, and when it may be removed
 * (CLOCK_MONOTONIC µs; 0: once empty). */
typedef struct Orphan {
        MemGroup *g; /* a reference */
        uint64_t not_before_usec;
} Orphan;

struct Service {
        MemCore *core;
        Events *events;
        Registry *registry;
        LiveSettings settings;
        Saver *saver; /* NULL: nothing is saved (tests) */
        CgroupMirror *cgroup;
        Placement *placement; /* never NULL; saved once a Saver gives the directory */
        Peer daemon_peer;
        pthread_mutex_t transient_lock; /* orphans, norphans */
        Orphan *orphans;                /* transient groups whose creator is gone, still busy */
        size_t norphans;
        _Atomic bool stopping;          /* service_stopping(): transient groups stay */
        uint64_t started_usec;    /* CLOCK_MONOTONIC at service_new() */
        _Atomic uint64_t requests; /* service_request_served() */
        /* Reclaim rounds in progress and every peer's PeerReclaim. */
        pthread_mutex_t reclaim_lock;
        ReclaimRound *rounds;
        uint64_t reclaim_next_id;
        _Atomic uint64_t reclaim_timeout_usec;
        atomic_bool prune_on_sample; /* [cgroup] prune: service_sample_mirrors() prunes */
};

/**
 * service_peer_gone() - the registry's peer-gone hook (RegistryPeerGoneFn):
 * remove the transient groups @p created, or keep the busy ones as
 * orphans, and try the orphans again. On the peer's thread.
 */
void service_peer_gone(void *userdata, Peer *p);

/**
 * service_transient_restore() - at service_new(), before any other thread
 * uses the service: every group restored transient becomes an orphan, not
 * removed before the grace period has passed. Return: 0 or -ENOMEM.
 */
int service_transient_restore(Service *svc);

/** service_transient_done() - at service_free(): forget the orphans. */
void service_transient_done(Service *svc);

/**
 * service_groups_recount() - count the groups each uid owns (the state
 * restored at start) into the registry; at service_new(), before any
 * other thread uses the service. Return: 0 or -ENOMEM.
 */
int service_groups_recount(Service *svc);

/**
 * service_reclaim_start() - @p's charge of @bytes in region @key to
 * @charged (its session's group, or the group of a kept charge) was
 * refused by @refused's max: ask the reclaimable holders below @refused
 * (not @p) for what it needs, by the kernel's split (core/reclaim.h), and
 * park @p on the round; while it waits, @charged and its ancestors count
 * a stall (core/pressure.h). Return: -EINPROGRESS (asked: @p waits); 0
 * (nothing to ask: the refusal stands); -ENOMEM.
 */
int service_reclaim_start(Service *svc, Peer *p, MemGroup *charged, MemGroup *refused, int key,
                          uint64_t bytes);

/**
 * service_reclaim_high() - @p's charge left groups from @g up above their
 * high in @key: ask each one's reclaimable holders (not @p) for its
 * overage, one round at a time per group, without waiting
 * (mem_cgroup_handle_over_high()).
 */
void service_reclaim_high(Service *svc, Peer *p, MemGroup *g, int key);

/**
 * service_reclaim_end() - @p's request is served again: end the round it
 * waited for (holders that did not answer count late and are asked no
 * more until they do), and its charge's stall, and say in *@ret_released (may be NULL) what the
 * holders gave back. Return: whether it waited for one.
 */
bool service_reclaim_end(Service *svc, Peer *p, uint64_t *ret_released);

/**
 * service_limits_reclaim() - a max of @max bytes on @g in @key was (with
 * SERVICE_LIMITS_FORCE in @flags) or is about to be set: ask the holders
 * below @g for what usage is above it and park @p, when @flags allow
 * (SERVICE_LIMITS_WAIT, not SERVICE_LIMITS_NO_RECLAIM). Remembers whether
 * the max was taken already, for service_limits_reclaim_resume().
 * Return: -EINPROGRESS (asked); 0 (nothing to ask, or not allowed to wait).
 */
int service_limits_reclaim(Service *svc, Peer *p, MemGroup *g, int key, uint64_t max, unsigned flags);

/**
 * service_limits_reclaim_resume() - a SetLimits is served: if it waited
 * for reclaim, end the round; no more reclaim for it (*@flags loses
 * SERVICE_LIMITS_WAIT). Return: false when the limits were taken before
 * the round (the request is done), true when they are still to be set.
 */
bool service_limits_reclaim_resume(Service *svc, Peer *p, unsigned *flags);

/**
 * service_peer_leaving() - the registry's hook for a peer whose session is
 * about to end (RegistryPeerGoneFn): its reclaim round and its stall
 * end, and its requests count answered, while its session still is.
 */
void service_peer_leaving(void *userdata, Peer *p);

/** service_now_usec() - CLOCK_MONOTONIC in microseconds (service-info.c). */
uint64_t service_now_usec(void);

/**
 * service_account() - the account a peer confined to @group counts its
 * bounds against: 2^31 + a hash of @group (service-confine.c). Pure.
 */
uid_t service_account(const char *group);

/**
 * service_confinement() - the group the process @pid is confined to, into
 * @ret_group. Return: 0; -ENOENT (not confined: no confining rule covers
 * its cgroup, or none is in force); another negative errno: cannot tell
 * (confine it to nothing).
 */
int service_confinement(Service *svc, pid_t pid, char *ret_group, size_t size);

/**
 * service_identify() - set @creds->account, and say whether the peer is
 * confined (*@ret_confined) and to which group (@ret_scope; "" when that
 * cannot be told).
 */
void service_identify(Service *svc, PeerCreds *creds, char *ret_scope, size_t size, bool *ret_confined);

/** service_confine() - @p is confined to @scope ("" or a group that is gone: to nothing). */
void service_confine(Service *svc, Peer *p, const char *scope);

/**
 * service_audit() - log a change @p made, with who made it: "WHAT, by uid
 * U pid P (COMM) over the socket|bus", at notice, the daemon's default
 * level: the journal's record of who changed what (memacctd(8),
 * DIAGNOSTICS).
 * Under the journal it carries @message_id (service/message-ids.h) and
 * the fields MEMACCT_GROUP= (@group, unless NULL), MEMACCT_UID=,
 * MEMACCT_PID=, MEMACCT_COMM= and MEMACCT_TRANSPORT=. Called after the
 * change is made, on the caller's thread.
 */
void service_audit(const Peer *p, const char *message_id, const char *group, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/** service_read_access() - who may read, now. */
ReadAccess service_read_access(Service *svc);

/** service_confined_read() - what a confined peer reads outside its group, now. */
ConfinedRead service_confined_read(Service *svc);

/** service_may_read() - may @p read @g under the read access in force? */
bool service_may_read(Service *svc, const Peer *p, MemGroup *g);

/**
 * service_admit() - may a durable change be made now (the state can be
 * saved)? Before the change. Return: 0; -ENOSPC with @rf naming the cause.
 */
int service_admit(Service *svc, Refusal *rf);

/**
 * service_committed() - @p made a durable change to the group @path (NULL:
 * to any number of groups): have it saved, and hold @p's OK until it is
 * (the transport asks service_peer_take_wait()).
 */
void service_committed(Service *svc, Peer *p, const char *path);

/** service_changed() - something saved changed that nobody waits for: save it soon. */
void service_changed(Service *svc);

/**
 * service_lookup() - @path, with a reference.
 * Return: 0; -EINVAL (empty or malformed), -ENAMETOOLONG, -EMLINK or
 * -ENOENT, with @rf.
 */
int service_lookup(Service *svc, const char *path, MemGroup **ret, Refusal *rf);

/**
 * service_lookup_for() - @path, with a reference, for @p to do what @may
 * (an authz.h rule) allows: charge, attach, move into (authz_may_use),
 * remove or set limits (authz_may_modify)... A refusal names the group
 * as it was asked for: look-ups take canonical paths only, so that is
 * g->path to the letter. Return: 0; a service_lookup() error or -EPERM,
 * with @rf and no reference taken.
 */
int service_lookup_for(Service *svc, Peer *p, const char *path, bool (*may)(const AuthzWho *who, MemGroup *g),
                       MemGroup **ret, Refusal *rf);

/**
 * service_place() - the group an Attach of "" or "auto" from @p means,
 * into @buf (@size bytes): service_place_cgroup() of @p's kernel memory
 * cgroup. The one decision both transports' Attach reaches. Only root
 * has mirrors made ([cgroup] auto-create): a mirror is root's group, an
 * import takes over the groups at its paths, and another caller could
 * not use the mirror anyway; so a refused Attach leaves the tree as it
 * was.
 * Return: 0; -ESRCH (no such process), -ENOENT, an import error, with @rf.
 */
int service_place(Service *svc, Peer *p, char *buf, size_t size, Refusal *rf);

/**
 * service_place_cgroup() - where a process in the kernel cgroup @cgroup
 * lands: the explicit rule that covers it with the longest cgroup; else,
 * whatever the length of either, the mirrors' word (cgroup_mirror_place():
 * its own mirror, imported if auto-create and @may_create allow, else its
 * nearest mirrored ancestor's). A mirror made is told to the saver.
 * Return: 0; -ENOENT, -ENAMETOOLONG, an import error, with @rf.
 */
int service_place_cgroup(Service *svc, const char *cgroup, bool may_create, char *buf, size_t size,
                         Refusal *rf);

/** service_region_key() - the core's key of @region (NULL, "", "memory": memory's). Return: 0; -ENOENT with @rf. */
int service_region_key(Service *svc, const char *region, int *ret, Refusal *rf);

/*
 * Per thread and region slot: the key last found live there
 * (core_region_live()), in which core, and service_region_removals then
 * (service-regions.c says why that is enough).
 */
typedef struct ServiceRegionLive {
        const MemCore *core;
        unsigned long removals;
        int key;
} ServiceRegionLive;

extern _Atomic unsigned long service_region_removals;
extern _Thread_local ServiceRegionLive service_region_live[MEM_REGION_MAX];

/**
 * service_region_key_ask() - service_region_key_live() when this thread's
 * record does not answer: core_region_live(), and a yes recorded with
 * @removals, the count read before asking. Any thread.
 */
bool service_region_key_ask(MemCore *core, int key, unsigned long removals);

/**
 * service_region_key_live() - core_region_live() of the device region key
 * @key, answered from this thread's record of it while no region removal
 * has been done since the core last said yes. Any thread.
 */
static inline bool service_region_key_live(MemCore *core, int key) {
        /* Acquire: the count of removals is read before the core is asked
         * (service_region_key_ask() records it), and one that has moved
         * it is seen done there. */
        unsigned long removals = atomic_load_explicit(&service_region_removals, memory_order_acquire);
        const ServiceRegionLive *seen = &service_region_live[region_slot(key)];

        if (seen->key == key && seen->core == core && seen->removals == removals)
                return true;
        return service_region_key_ask(core, key, removals);
}

/**
 * service_peer_region_lookup() - service_peer_region_key() when @p's
 * cache does not answer: service_region_key(), and the cache set to a
 * device region's answer. On @p's thread. Return: as service_region_key().
 */
int service_peer_region_lookup(Service *svc, Peer *p, const char *region, int *ret, Refusal *rf);

/**
 * service_peer_region_key() - service_region_key() through @p's cache of
 * the region its last charge named, whose key is checked live: one
 * removed since is looked up again, and a region of the name registered
 * anew gets its own. On @p's thread. Inline: every charge and uncharge
 * asks, memory's (no region) included, and out of line the call and the
 * registers it saved cost about as much as a device region's hit itself
 * (a comparison and a few loads).
 */
static inline int service_peer_region_key(Service *svc, Peer *p, const char *region, int *ret,
                                          Refusal *rf) {
        if (!region || !*region) {
                *ret = MEM_REGION_MEMORY;
                return 0;
        }
        if (p->region_key > 0 && strcmp(region, p->region_name) == 0 &&
            service_region_key_live(svc->core, p->region_key)) {
                *ret = p->region_key;
                return 0;
        }
        return service_peer_region_lookup(svc, p, region, ret, rf);
}

/**
 * service_kept_by_delegator() - is a kept charge @who makes on @g its
 * delegator's (a reservation its delegate may not release)?
 * service_kept_by_delegate(): is @who @g's delegate, releasing only its own?
 */
bool service_kept_by_delegator(const AuthzWho *who, MemGroup *g);
bool service_kept_by_delegate(const AuthzWho *who, MemGroup *g);

/** service_audit_limits() - log the limits @l set on @path (in @region; NULL: memory). */
void service_audit_limits(const Peer *p, const char *path, const char *region, const MemLimits *l, bool force);
