/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus's signals (signals.h)
 *
 * The sink copies an event into a queue under a mutex and, when the
 * queue was empty, writes the eventfd; the bus thread takes the whole
 * queue at once and emits one signal per entry. The consumer reads the
 * eventfd before it takes the queue, so an event queued after the take
 * finds the queue empty and writes the eventfd again: no wake-up is
 * lost. A flush before a reply runs the same steps, so it loses nothing
 * either.
 *
 * Signals of a group that is gone by the time they are emitted fail and
 * are skipped (InterfacesAdded reads the object's properties then): a
 * watcher sees the InterfacesRemoved that follows.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bus/names.h"
#include "bus/signals.h"
#include "macro.h"
#include "base/log.h"

typedef struct Queued {
        struct Queued *next;
        EventItem ev; /* ev.path points at path, ev.region (when not NULL) at region */
        char region[MEM_REGION_NAME_MAX + 1];
        bool unicast; /* to the peer named in path alone (EVENT_RECLAIM) */
        char path[];
} Queued;

struct BusSignals {
        pthread_mutex_t lock;
        Queued *head, **tail;
        unsigned n;
        _Atomic uint64_t dropped;
        int fd;
};

int bus_signals_new(BusSignals **ret) {
        BusSignals *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->tail = &s->head;
        s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->fd < 0) {
                int r = -errno;

                bus_signals_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static void queue_free(Queued *q) {
        for (Queued *next; q; q = next) {
                next = q->next;
                free(q);
        }
}

BusSignals *bus_signals_free(BusSignals *s) {
        if (!s)
                return NULL;
        queue_free(s->head);
        if (s->fd >= 0)
                close(s->fd);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

int bus_signals_fd(BusSignals *s) {
        return s->fd;
}

/* Relaxed: a statistic, read by the bus thread for a log line. */
static void count_drop(BusSignals *s) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
}

/* Queue @ev, with @path (a group's, or the unicast's destination) copied. */
static void queue(BusSignals *s, const EventItem *ev, const char *path, bool unicast) {
        size_t n = strlen(path) + 1;
        Queued *q;
        bool wake;

        q = malloc(sizeof(*q) + n);
        if (!q) {
                count_drop(s);
                return;
        }
        q->next = NULL;
        q->ev = *ev;
        q->unicast = unicast;
        memcpy(q->path, path, n);
        q->ev.path = q->path;
        /* The raiser's region name lives on its stack: copy it too. */
        if (ev->region) {
                snprintf(q->region, sizeof(q->region), "%s", ev->region);
                q->ev.region = q->region;
        }

        pthread_mutex_lock(&s->lock);
        if (s->n >= BUS_EVENTS_MAX) {
                pthread_mutex_unlock(&s->lock);
                free(q);
                count_drop(s);
                return;
        }
        *s->tail = q;
        s->tail = &q->next;
        wake = s->n++ == 0;
        pthread_mutex_unlock(&s->lock);
        if (wake)
                (void) eventfd_write(s->fd, 1);
}

void bus_signals_sink(const EventItem *ev, void *userdata) {
        queue(userdata, ev, ev->path, false);
}

void bus_signals_send_to(BusSignals *s, const char *destination, const EventItem *ev) {
        queue(s, ev, destination, true);
}

/* ReclaimRequest, to the one peer asked: its unique name is in ev->path. */
static int emit_reclaim(sd_bus *bus, const EventItem *ev) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_signal(bus, &m, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "ReclaimRequest");
        if (r >= 0)
                r = sd_bus_message_set_destination(m, ev->path);
        if (r >= 0)
                r = sd_bus_message_append(m, "tst", ev->id, ev->region ? ev->region : "", ev->count);
        return r < 0 ? r : sd_bus_send(bus, m, NULL);
}

/* PropertiesChanged for the limits @mask names: memory's, or with @region the device regions'. */
static int emit_limits(sd_bus *bus, const char *object, unsigned mask, bool region) {
        static const struct {
                MemLimitMask bit;
                const char *property, *device;
        } names[] = {
                { MEM_LIMIT_MAX, "MemoryMax", "DeviceMemoryMax" },
                { MEM_LIMIT_HIGH, "MemoryHigh", "DeviceMemoryHigh" },
                { MEM_LIMIT_LOW, "MemoryLow", "DeviceMemoryLow" },
                { MEM_LIMIT_MIN, "MemoryMin", "DeviceMemoryMin" },
        };
        const char *changed[ELEMENTSOF(names) + 1];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (mask & names[i].bit)
                        changed[n++] = region ? names[i].device : names[i].property;
        changed[n] = NULL;
        if (n == 0)
                return 0;
        return sd_bus_emit_properties_changed_strv(bus, object, BUS_GROUP_INTERFACE, (char **) changed);
}

/*
 * A device region's memory event: RegionEvent and RegionEventBy, never
 * Event, whose listeners take every event for memory's (Event's
 * arguments are fixed, and name no region).
 */
static int emit_region_event(sd_bus *bus, const EventItem *ev) {
        const char *name = mem_event_to_string(ev->event);
        int r;

        r = sd_bus_emit_signal(bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "RegionEvent", "ssst", ev->path,
                               ev->region, name, ev->count);
        if (r < 0)
                return r;
        return sd_bus_emit_signal(bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "RegionEventBy", "ssstuu",
                                  ev->path, ev->region, name, ev->count, (uint32_t) ev->pid,
                                  (uint32_t) ev->uid);
}

static int emit(sd_bus *bus, const EventItem *ev) {
        _cleanup_free_ char *object = NULL;
        int r;

        if (ev->kind == EVENT_RECLAIM)
                return emit_reclaim(bus, ev);
        if (ev->kind == EVENT_MEMORY && ev->region)
                return emit_region_event(bus, ev);
        if (ev->kind == EVENT_MEMORY) {
                /* Event's arguments are fixed by the interface: who raised
                 * it goes in a second signal, EventBy, sent right after. */
                r = sd_bus_emit_signal(bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "Event", "sst", ev->path,
                                       mem_event_to_string(ev->event), ev->count);
                if (r < 0)
                        return r;
                return sd_bus_emit_signal(bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "EventBy", "sstuu",
                                          ev->path, mem_event_to_string(ev->event), ev->count,
                                          (uint32_t) ev->pid, (uint32_t) ev->uid);
        }
        r = bus_group_object_path(ev->path, &object);
        if (r < 0)
                return r;
        switch (ev->kind) {
        case EVENT_GROUP_ADDED:
                return sd_bus_emit_object_added(bus, object);
        case EVENT_GROUP_REMOVED:
                return sd_bus_emit_interfaces_removed(bus, object, BUS_GROUP_INTERFACE, NULL);
        case EVENT_LIMITS_CHANGED:
                return emit_limits(bus, object, ev->limits, ev->region != NULL);
        default:
                return 0; /* EVENT_MOVED goes to its session's socket only */
        }
}

uint64_t bus_signals_flush(BusSignals *s, sd_bus *bus, bool broadcast) {
        uint64_t dropped = 0;
        eventfd_t ignored;
        Queued *q;

        /* First the eventfd, then the queue: see the top of the file. */
        (void) eventfd_read(s->fd, &ignored);
        pthread_mutex_lock(&s->lock);
        q = s->head;
        s->head = NULL;
        s->tail = &s->head;
        s->n = 0;
        pthread_mutex_unlock(&s->lock);

        for (Queued *i = q; i; i = i->next) {
                uint64_t queued = 0;
                int r;

                /* A request to one holder is its own business: it goes
                 * whatever the read access. */
                if (!bus || (!broadcast && !i->unicast))
                        continue;
                /* A bus daemon that does not read (stopped, overloaded)
                 * would grow sd-bus's write queue without bound: past
                 * BUS_EVENTS_MAX unsent messages, events are dropped here
                 * too. */
                if (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued >= BUS_EVENTS_MAX) {
                        dropped++;
                        continue;
                }
                r = emit(bus, &i->ev);
                if (r < 0)
                        log_debug_errno(r, "Cannot signal a change of %s, ignoring: %m", i->ev.path);
        }
        queue_free(q);
        return dropped + atomic_exchange_explicit(&s->dropped, 0, memory_order_relaxed);
}
