/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Event fan-out: everything that happened that someone outside may want
 * to hear of, whichever transport (or the core itself) made it happen,
 * goes through here once.
 *
 * - Memory events (memory.events counters going up, raised by the core
 *   on whatever thread charged) reach every subscription of the group or
 *   an ancestor, and the sink.
 * - A session that was moved is told where it is now (only that session).
 * - Group changes the service layer made (added, removed, limits set)
 *   reach the sink.
 *
 * Subscribers are the peers of a transport that can deliver events (the
 * socket); the sink is the transport that broadcasts them (the bus, as
 * signals). Both are called on the thread that raised the event and must
 * not block: they queue and wake their own thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "core/model.h"
#include "service/authz.h"

typedef struct Events Events;
typedef struct MemCore MemCore;

/* One thing that happened, as the fan-out carries it. */
typedef struct EventItem {
        EventKind kind;
        const char *path;
        const char *region; /* EVENT_MEMORY, EVENT_LIMITS_CHANGED: the device region; NULL: memory */
        MemEvent event;
        uint64_t count;
        unsigned limits;
        /* EVENT_MEMORY: who made the request that raised it
         * (events_requester_set()); 0 and 0 when no request did. */
        pid_t pid;
        uid_t uid;
        uint64_t id; /* EVENT_RECLAIM: the request, which the answer names */
} EventItem;

/* How a subscriber's transport receives what is sent to it. */
typedef struct EventDelivery {
        /*
         * @ev in this transport's encoding, in a new buffer (free()d by
         * the fan-out). Called once per event for all the subscribers
         * that share this delivery. Return: 0 or -ENOMEM (the event is
         * then not delivered).
         */
        int (*encode)(const EventItem *ev, uint8_t **ret, size_t *ret_len);
        /*
         * Queue @len bytes for the subscriber @userdata and wake its
         * thread. Any thread, under the fan-out's lock: it must not wait
         * or call back into the service.
         */
        void (*push)(void *userdata, const uint8_t *buf, size_t len);
} EventDelivery;

/* A receiver of events: one per peer (registry.c embeds it). */
typedef struct EventSubscriber {
        const EventDelivery *delivery; /* NULL: this peer cannot receive events */
        void *userdata;
        const AuthzWho *who; /* whose reads it delivers: checked against the read access of each event's time */
        unsigned nsubs; /* its subscriptions; its own thread only */
        uint64_t delivered; /* the last memory event pushed to it; under the fan-out's lock */
} EventSubscriber;

/* The broadcasting transport: any thread, must not block. */
typedef void (*EventsSinkFn)(const EventItem *ev, void *userdata);

/**
 * events_new() - the fan-out for @core; installs the core's event and
 * move hooks, so call it before any other thread uses the core.
 * Return: 0 or -ENOMEM.
 */
int events_new(MemCore *core, Events **ret);

/**
 * events_send() - deliver @ev to @sub alone (a request for that peer).
 * Any thread; @sub's peer must stay alive meanwhile. Return: 0; -ENOTSUP
 * (@sub cannot receive); -ENOMEM (not delivered).
 */
int events_send(EventSubscriber *sub, const EventItem *ev);

/** events_free() - uninstall the hooks and free; every subscription must be gone. */
Events *events_free(Events *e);

/**
 * events_set_read_access() - who may read now: a memory event reaches a
 * subscriber only while it may read the group (authz_may_read()),
 * so a reload that restricts reads stops what it forbids at once. Any
 * thread.
 */
void events_set_read_access(Events *e, ReadAccess read_access, ConfinedRead confined_read);

/**
 * events_set_sink() - the one broadcasting transport (NULL: none). Set or
 * clear it while no other thread raises events.
 */
void events_set_sink(Events *e, EventsSinkFn sink, void *userdata);

/**
 * events_subscribe() - deliver @sub the memory events of @path and below
 * in the region of key @region (EVENTS_ALL_REGIONS: every region),
 * from now until events_unsubscribe_all(). @path is a group's canonical
 * path. A subscriber gets each event once, however many of its
 * subscriptions cover the group. The caller bounds how many there are:
 * each event walks them all. On @sub's own thread. Return: 0, -ENOMEM.
 */
int events_subscribe(Events *e, EventSubscriber *sub, const char *path, int region);

/* events_subscribe() @region: the events of every region. */
#define EVENTS_ALL_REGIONS (-1)

/**
 * events_unsubscribe_all() - drop @sub's subscriptions. Once it returns
 * no push to @sub runs or starts (the fan-out pushes under the same
 * lock). On @sub's own thread.
 */
void events_unsubscribe_all(Events *e, EventSubscriber *sub);

/**
 * events_emit() - tell the sink of a change to @path (EVENT_GROUP_ADDED,
 * _REMOVED, _LIMITS_CHANGED with the MemLimitMask @limits) that the
 * service layer made. @e NULL: nobody listens. Any thread.
 */
void events_emit(Events *e, EventKind kind, const char *path, unsigned limits);

/**
 * events_emit_region() - events_emit() of a change in the device region
 * @region (NULL: memory's, as events_emit()): EVENT_LIMITS_CHANGED of a
 * group's limits there, which the sink must not announce as memory's.
 */
void events_emit_region(Events *e, EventKind kind, const char *path, const char *region, unsigned limits);

/** events_notify() - events_emit() with the fan-out as @userdata, for a layer below (CgroupNotifyFn). */
void events_notify(void *userdata, EventKind kind, const char *path, unsigned limits);

/**
 * events_requester_set() - the memory events this thread raises from now
 * on are @pid's, of @uid: the service sets it before an operation that
 * may raise one (a charge, a max, a move) and clears it (pid 0) after.
 * Thread-local, since the core raises an event on the charging thread
 * and knows no requester.
 */
void events_requester_set(pid_t pid, uid_t uid);

/**
 * events_path_within() - is @path @top or below it? Both canonical.
 * (Also what decides which subscriptions an event reaches.)
 */
bool events_path_within(const char *path, const char *top);
