/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The events kept for memacct_next_event(), on a socket handle and on a
 * bus handle alike: a bounded ring of copies, oldest first.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memacct.h"

/* Events kept; beyond that the oldest are dropped. */
#define CLIENT_MAX_EVENTS 4096

typedef struct QueuedEvent {
        char *path;
        char *name;
        uint64_t count;
        uint32_t pid, uid; /* who raised it; 0: not said */
        char *region;      /* the device region it was raised in; NULL: memory */
} QueuedEvent;

typedef struct EventQueue {
        QueuedEvent *ring; /* CLIENT_MAX_EVENTS of them, from the first push on */
        size_t head, len;
        /* What event_queue_pop() returned last: its strings stay valid
         * until the next pop, as memacct_next_event() promises. */
        QueuedEvent last;
} EventQueue;

/**
 * event_queue_push() - keep a copy of an event, dropping the oldest when
 * CLIENT_MAX_EVENTS are kept already (nobody reads them). Out of memory,
 * the event is dropped: an event is a hint, never a reply someone waits
 * for. Under the lock that guards @q.
 */
void event_queue_push(EventQueue *q, const char *path, const char *name, uint64_t count);

/** event_queue_push_by() - event_queue_push() of an event raised by @pid of @uid. */
void event_queue_push_by(EventQueue *q, const char *path, const char *name, uint64_t count, uint32_t pid,
                         uint32_t uid);

/**
 * event_queue_push_region() - event_queue_push_by() of an event raised in
 * device region @region (NULL or "memory": memory's).
 */
void event_queue_push_region(EventQueue *q, const char *path, const char *name, uint64_t count, uint32_t pid,
                             uint32_t uid, const char *region);

/**
 * event_queue_region() - the region of the event popped last: "memory"
 * for memory's; the string stays valid until the next pop. Under the
 * lock that guards @q. Return: 0, or -ENODATA when none was popped.
 */
int event_queue_region(const EventQueue *q, const char **ret);

/**
 * event_queue_requester() - who raised the event popped last (0, 0: not
 * said). Under the lock that guards @q.
 * Return: 0, or -ENODATA when none was popped.
 */
int event_queue_requester(const EventQueue *q, uint32_t *ret_pid, uint32_t *ret_uid);

/**
 * event_queue_pop() - the oldest event into @ret, whose strings stay valid
 * until the next pop or event_queue_done(). Under the lock that guards @q.
 * Return: true, or false when none is kept.
 */
bool event_queue_pop(EventQueue *q, memacct_event *ret);

/** event_queue_done() - free every event kept and the last one popped. */
void event_queue_done(EventQueue *q);
