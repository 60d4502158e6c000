/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The events kept for memacct_next_event(): a ring of CLIENT_MAX_EVENTS
 * copies (path, name, count, who raised it, its region), filled by whatever reads the transport (the
 * socket's unsolicited frames, the bus's Event signal) and emptied by
 * memacct_next_event(). Invariants: the ring holds len events from head
 * on, oldest first; an entry outside them holds no strings; the entry last
 * popped is kept apart until the next pop, since the caller reads its
 * strings.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-event-queue.h"

static void queued_event_done(QueuedEvent *ev) {
        free(ev->path);
        free(ev->name);
        free(ev->region);
        *ev = (QueuedEvent) {};
}

void event_queue_push(EventQueue *q, const char *path, const char *name, uint64_t count) {
        event_queue_push_by(q, path, name, count, 0, 0);
}

void event_queue_push_by(EventQueue *q, const char *path, const char *name, uint64_t count, uint32_t pid,
                         uint32_t uid) {
        event_queue_push_region(q, path, name, count, pid, uid, NULL);
}

void event_queue_push_region(EventQueue *q, const char *path, const char *name, uint64_t count, uint32_t pid,
                             uint32_t uid, const char *region) {
        /* Memory's events carry no region: most events, no copy. */
        bool device = region && *region && strcmp(region, MEMACCT_REGION_MEMORY) != 0;
        QueuedEvent ev;

        if (!q->ring) {
                q->ring = calloc(CLIENT_MAX_EVENTS, sizeof(*q->ring));
                if (!q->ring)
                        return;
        }
        ev = (QueuedEvent) { .path = strdup(path), .name = strdup(name), .count = count, .pid = pid, .uid = uid };
        if (device)
                ev.region = strdup(region);
        if (!ev.path || !ev.name || (device && !ev.region)) {
                queued_event_done(&ev);
                return;
        }
        if (q->len == CLIENT_MAX_EVENTS) {
                queued_event_done(&q->ring[q->head]);
                q->head = (q->head + 1) % CLIENT_MAX_EVENTS;
                q->len--;
        }
        q->ring[(q->head + q->len) % CLIENT_MAX_EVENTS] = ev;
        q->len++;
}

int event_queue_requester(const EventQueue *q, uint32_t *ret_pid, uint32_t *ret_uid) {
        if (!q->last.path)
                return -ENODATA;
        *ret_pid = q->last.pid;
        *ret_uid = q->last.uid;
        return 0;
}

int event_queue_region(const EventQueue *q, const char **ret) {
        if (!q->last.path)
                return -ENODATA;
        *ret = q->last.region ? q->last.region : MEMACCT_REGION_MEMORY;
        return 0;
}

bool event_queue_pop(EventQueue *q, memacct_event *ret) {
        if (q->len == 0)
                return false;
        queued_event_done(&q->last);
        q->last = q->ring[q->head];
        q->ring[q->head] = (QueuedEvent) {};
        q->head = (q->head + 1) % CLIENT_MAX_EVENTS;
        q->len--;
        *ret = (memacct_event) {
                .path = q->last.path,
                .name = q->last.name,
                .count = q->last.count,
        };
        return true;
}

void event_queue_done(EventQueue *q) {
        for (size_t i = 0; i < q->len; i++)
                queued_event_done(&q->ring[(q->head + i) % CLIENT_MAX_EVENTS]);
        free(q->ring);
        queued_event_done(&q->last);
        *q = (EventQueue) {};
}
