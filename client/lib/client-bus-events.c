/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events over D-Bus: the manager's Event signal (memory's), matched from
 * the first subscription to memory's events on, and RegionEvent (a
 * device region's), from the first to a region's; each filtered here by
 * the subscriptions' subtrees and regions (the bus cannot match on a
 * path prefix inside an argument), into the handle's event queue.
 *
 * Event's arguments are fixed, so a daemon that says who raised an event
 * sends it again, with the requester, as EventBy, and RegionEvent as
 * RegionEventBy. The manager's introspection data tells whether it does,
 * once at the first match of each; then that one signal is matched,
 * never both, so no event comes twice and none needs pairing with
 * another.
 *
 * The queue (client-event-queue.h) keeps a path and a name, as the
 * socket's events have them; the bus keeps each event's region in front
 * of its path, "REGION\nPATH" (neither a region name nor a group path
 * holds a newline), and splits them again when the event is popped: the
 * path goes to the caller, the region to memacct_event_region(), both in
 * the popped event's one string, valid until the next pop.
 *
 * Signals are read by whichever call runs sd-bus (sd_bus_call() queues
 * what arrives meanwhile), so memacct_next_event() cannot rely on poll()
 * alone: it sleeps without the lock on the bus fd and an eventfd
 * (bus_sleep_locked()), and every call kicks the eventfd on its way out
 * (bus_unlock()) while a thread sleeps, so that the sleeper looks at the
 * queue again. The reclaim requests it dispatches on the way are served
 * here too (client-bus-reclaim.c), as on the socket.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-bus-conn.h"
#include "client-bus-events.h"
#include "client-deadline.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "macro.h"

/* @path is @prefix or below it. */
static bool path_under(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        if (strcmp(prefix, "/") == 0)
                return true;
        while (n > 1 && prefix[n - 1] == '/')
                n--;
        return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Does a subscription want events of @region (NULL: memory) on @path? */
static bool wanted(BusConn *c, const char *path, const char *region) {
        for (size_t i = 0; i < c->n_subs; i++) {
                const char *want = c->subs[i].region;

                if (!path_under(path, c->subs[i].path))
                        continue;
                if ((want && strcmp(want, "*") == 0) || (!want && !region) ||
                    (want && region && strcmp(want, region) == 0))
                        return true;
        }
        return false;
}

/*
 * Keep an event the subscriptions want: its path behind its region (see
 * the top of the file). Out of memory it is dropped, as the queue drops
 * one: an event is a hint, never a reply someone waits for.
 */
static void push(BusConn *c, const char *path, const char *region, const char *name, uint64_t count,
                 bool by, uint32_t pid, uint32_t uid) {
        char *keyed;

        if (!wanted(c, path, region))
                return;
        if (asprintf(&keyed, "%s\n%s", region ? region : MEMACCT_REGION_MEMORY, path) < 0)
                return;
        if (by)
                event_queue_push_by(&c->events, keyed, name, count, pid, uid);
        else
                event_queue_push(&c->events, keyed, name, count);
        free(keyed);
}

/* Runs inside sd_bus_process() or sd_bus_wait() of any call: lock held. */
static int on_event(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        const char *path, *name;
        uint64_t count;

        (void) ret_error;
        if (sd_bus_message_read(msg, "sst", &path, &name, &count) < 0)
                return 0; /* not ours to judge: ignore it */
        push(m->bus_conn, path, NULL, name, count, false, 0, 0);
        return 0;
}

/* The same, for EventBy (sstuu: Event's arguments, then pid and uid). */
static int on_event_by(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        const char *path, *name;
        uint64_t count;
        uint32_t pid, uid;

        (void) ret_error;
        if (sd_bus_message_read(msg, "sstuu", &path, &name, &count, &pid, &uid) < 0)
                return 0; /* not ours to judge: ignore it */
        push(m->bus_conn, path, NULL, name, count, true, pid, uid);
        return 0;
}

/* RegionEvent (ssst: path, region, name, count). */
static int on_region_event(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        const char *path, *region, *name;
        uint64_t count;

        (void) ret_error;
        if (sd_bus_message_read(msg, "ssst", &path, &region, &name, &count) < 0)
                return 0; /* not ours to judge: ignore it */
        push(m->bus_conn, path, region, name, count, false, 0, 0);
        return 0;
}

/* RegionEventBy (ssstuu: RegionEvent's arguments, then pid and uid). */
static int on_region_event_by(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        const char *path, *region, *name;
        uint64_t count;
        uint32_t pid, uid;

        (void) ret_error;
        if (sd_bus_message_read(msg, "ssstuu", &path, &region, &name, &count, &pid, &uid) < 0)
                return 0; /* not ours to judge: ignore it */
        push(m->bus_conn, path, region, name, count, true, pid, uid);
        return 0;
}

/* Does the daemon send the signal @name? Its introspection data says. On
 * any failure, no: the caller falls back to the signal every daemon
 * sends. Lock held. */
static bool daemon_sends(memacct *m, const char *name) {
        sd_bus_message *reply = NULL;
        const char *xml = NULL;
        char tag[64];
        bool yes;

        if (sd_bus_call_method(m->bus_conn->bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Introspectable",
                               "Introspect", NULL, &reply, "") < 0)
                return false;
        snprintf(tag, sizeof(tag), "<signal name=\"%s\"", name);
        yes = sd_bus_message_read(reply, "s", &xml) >= 0 && strstr(xml, tag);
        sd_bus_message_unref(reply);
        return yes;
}

/* Match memory's events (Event, EventBy) or with @region the device
 * regions' (RegionEvent, RegionEventBy), once. Lock held. */
static int match_locked(memacct *m, bool region) {
        BusConn *c = m->bus_conn;
        sd_bus_slot **slot = region ? &c->region_match : &c->match;
        bool by;
        int r;

        if (*slot)
                return 0;
        by = daemon_sends(m, region ? "RegionEventBy" : "EventBy");
        if (region)
                r = sd_bus_match_signal(c->bus, slot, BUS_NAME, BUS_PATH, BUS_MANAGER,
                                        by ? "RegionEventBy" : "RegionEvent",
                                        by ? on_region_event_by : on_region_event, m);
        else
                r = sd_bus_match_signal(c->bus, slot, BUS_NAME, BUS_PATH, BUS_MANAGER,
                                        by ? "EventBy" : "Event", by ? on_event_by : on_event, m);
        return r < 0 ? bus_fail(m, NULL, r) : 0;
}

/* What the socket's Subscribe checks of a region: the daemon has it. Lock held. */
static int region_check_locked(memacct *m, const char *region) {
        sd_bus_message *reply = NULL;
        uint64_t capacity, current, peak;
        char message[128];
        const char *name;
        bool found = false;
        uint32_t groups;
        int r;

        r = bus_manager_call_locked(m, "ListRegions", &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(stttu)");
        while (r >= 0 && !found &&
               (r = sd_bus_message_read(reply, "(stttu)", &name, &capacity, &current, &peak, &groups)) > 0)
                found = strcmp(name, region) == 0;
        sd_bus_message_unref(reply);
        if (r < 0)
                return client_error(m, -EBADMSG, "malformed ListRegions reply", NULL);
        if (found)
                return 0;
        /* The daemon's words for a region it does not know. */
        snprintf(message, sizeof(message), "no region '%.64s' (memacctctl region list)", region);
        return client_error(m, -ENOENT, message, NULL);
}

/* @region: NULL, "" or "memory" for memory's events, "*" for every region's. */
static int subscribe_locked(memacct *m, const char *path, const char *region) {
        BusConn *c = m->bus_conn;
        sd_bus_message *reply = NULL;
        bool every, memory;
        BusSubscription *v;
        char *p, *k = NULL;
        int r;

        memory = !region || !*region || strcmp(region, MEMACCT_REGION_MEMORY) == 0;
        every = !memory && strcmp(region, "*") == 0;
        /* The matches first: events raised from the moment the daemon
         * confirms the group are then all ours. */
        r = memory || every ? match_locked(m, false) : 0;
        if (r >= 0 && !memory)
                r = match_locked(m, true);
        /* What the socket's Subscribe checks: the group exists and we
         * may read it; the region exists. */
        if (r >= 0)
                r = bus_manager_call_locked(m, "GetGroup", &reply, "s", path);
        sd_bus_message_unref(reply);
        if (r >= 0 && !memory && !every)
                r = region_check_locked(m, region);
        if (r < 0)
                return r;
        p = strdup(path);
        if (p && !memory)
                k = strdup(region);
        v = p && (memory || k) ? realloc(c->subs, (c->n_subs + 1) * sizeof(*v)) : NULL;
        if (!v) {
                free(p);
                free(k);
                return client_error(m, -ENOMEM, NULL, NULL);
        }
        c->subs = v;
        c->subs[c->n_subs++] = (BusSubscription) { .path = p, .region = k };
        return 0;
}

int bus_subscribe(memacct *m, const char *path) {
        int r;

        bus_lock(m);
        r = subscribe_locked(m, path, NULL);
        bus_unlock(m);
        return r;
}

int bus_subscribe_region(memacct *m, const char *path, const char *region) {
        int r;

        bus_lock(m);
        r = subscribe_locked(m, path, region);
        bus_unlock(m);
        return r;
}

int bus_event_region(memacct *m, const char **ret) {
        int r = 0;

        bus_lock(m);
        if (m->bus_conn->last_region)
                *ret = m->bus_conn->last_region;
        else
                r = client_error(m, -ENODATA, "no event yet", NULL);
        bus_unlock(m);
        return r;
}

/*
 * The event just popped into @ret: its one string, "REGION\nPATH",
 * split in place into the region (last_region) and the path (@ret's).
 * Lock held.
 */
static void split_popped(BusConn *c, memacct_event *ret) {
        char *keyed = c->events.last.path, *nl = strchr(keyed, '\n');

        if (!nl) {
                c->last_region = MEMACCT_REGION_MEMORY; /* not reached: push() keys every event */
                return;
        }
        *nl = 0;
        c->last_region = keyed;
        ret->path = nl + 1;
}

int bus_event_requester(memacct *m, uint32_t *ret_pid, uint32_t *ret_uid) {
        int r;

        bus_lock(m);
        r = event_queue_requester(&m->bus_conn->events, ret_pid, ret_uid);
        bus_unlock(m);
        return r;
}

int bus_next_event(memacct *m, int timeout_msec, memacct_event *ret) {
        BusConn *c = m->bus_conn;
        uint64_t deadline = client_deadline_nsec(timeout_msec);
        int r;

        bus_lock(m);
        for (;;) {
                int left;

                if (event_queue_pop(&c->events, ret)) {
                        split_popped(c, ret);
                        r = 1;
                        break;
                }
                if (m->n_reclaim_q > 0) {
                        /* Reclaim requests read meanwhile: served here too,
                         * as on the socket, without the lock. */
                        bus_unlock(m);
                        r = client_reclaim_serve(m);
                        bus_lock(m);
                        if (r < 0)
                                break;
                        continue;
                }
                /* Everything queued or readable now, one message a round. */
                r = sd_bus_process(c->bus, NULL);
                if (r < 0) {
                        r = bus_fail(m, NULL, r);
                        break;
                }
                if (r > 0)
                        continue;
                left = client_deadline_left_msec(deadline);
                if (left == 0) {
                        r = 0;
                        break;
                }
                r = bus_sleep_locked(m, left);
                if (r < 0)
                        break;
        }
        bus_unlock(m);
        return r;
}

void bus_events_done(BusConn *c) {
        c->match = sd_bus_slot_unref(c->match);
        c->region_match = sd_bus_slot_unref(c->region_match);
        event_queue_done(&c->events);
        c->last_region = NULL;
        for (size_t i = 0; i < c->n_subs; i++) {
                free(c->subs[i].path);
                free(c->subs[i].region);
        }
        free(c->subs);
        c->subs = NULL;
        c->n_subs = 0;
}
