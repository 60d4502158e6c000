/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events over D-Bus: the manager's Event signal, matched from the first
 * subscription on and filtered here by the subscribed subtrees (the bus
 * cannot match on a path prefix inside an argument), into the handle's
 * event queue.
 *
 * Event's arguments are fixed, so a daemon that says who raised an event
 * sends it again, with the requester, as EventBy. The manager's
 * introspection data tells whether it does, once at the first
 * subscription; then that one signal is matched, never both, so no event
 * comes twice and none needs pairing with another.
 *
 * Signals are read by whichever call runs sd-bus (sd_bus_call() dispatches
 * what arrives meanwhile), so memacct_next_event() cannot rely on poll()
 * alone: it sleeps without the lock on the bus fd and an eventfd, and
 * every call kicks the eventfd on its way out (bus_unlock()) while a
 * thread sleeps, so that the sleeper looks at the queue again.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "client-bus-conn.h"
#include "client-bus-events.h"
#include "client-deadline.h"
#include "client-error.h"
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

/* @path is under a subscribed subtree. */
static bool wanted(BusConn *c, const char *path) {
        for (size_t i = 0; i < c->n_prefixes; i++)
                if (path_under(path, c->prefixes[i]))
                        return true;
        return false;
}

/* Runs inside sd_bus_process() or sd_bus_wait() of any call: lock held. */
static int on_event(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        BusConn *c = m->bus_conn;
        const char *path, *name;
        uint64_t count;

        (void) ret_error;
        if (sd_bus_message_read(msg, "sst", &path, &name, &count) < 0)
                return 0; /* not ours to judge: ignore it */
        if (wanted(c, path))
                event_queue_push(&c->events, path, name, count);
        return 0;
}

/* The same, for EventBy (sstuu: Event's arguments, then pid and uid). */
static int on_event_by(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        BusConn *c = m->bus_conn;
        const char *path, *name;
        uint64_t count;
        uint32_t pid, uid;

        (void) ret_error;
        if (sd_bus_message_read(msg, "sstuu", &path, &name, &count, &pid, &uid) < 0)
                return 0; /* not ours to judge: ignore it */
        if (wanted(c, path))
                event_queue_push_by(&c->events, path, name, count, pid, uid);
        return 0;
}

/* Does the daemon send EventBy? Its introspection data says. On any
 * failure, no: Event is what every daemon sends. Lock held. */
static bool daemon_sends_event_by(memacct *m) {
        sd_bus_message *reply = NULL;
        const char *xml = NULL;
        bool yes;

        if (sd_bus_call_method(m->bus_conn->bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Introspectable",
                               "Introspect", NULL, &reply, "") < 0)
                return false;
        yes = sd_bus_message_read(reply, "s", &xml) >= 0 && strstr(xml, "<signal name=\"EventBy\"");
        sd_bus_message_unref(reply);
        return yes;
}

static int subscribe_locked(memacct *m, const char *path) {
        BusConn *c = m->bus_conn;
        sd_bus_message *reply = NULL;
        char *copy, **p;
        int r;

        /* The match first: events raised from the moment the daemon
         * confirms the group are then all ours. */
        if (!c->match) {
                bool by = daemon_sends_event_by(m);

                r = sd_bus_match_signal(c->bus, &c->match, BUS_NAME, BUS_PATH, BUS_MANAGER,
                                        by ? "EventBy" : "Event", by ? on_event_by : on_event, m);
                if (r < 0)
                        return bus_fail(m, NULL, r);
        }
        /* What the socket's Subscribe checks: the group exists and we may read it. */
        r = bus_manager_call_locked(m, "GetGroup", &reply, "s", path);
        sd_bus_message_unref(reply);
        if (r < 0)
                return r;
        copy = strdup(path);
        p = copy ? realloc(c->prefixes, (c->n_prefixes + 1) * sizeof(char *)) : NULL;
        if (!p) {
                free(copy);
                return client_error(m, -ENOMEM, NULL, NULL);
        }
        c->prefixes = p;
        c->prefixes[c->n_prefixes++] = copy;
        return 0;
}

int bus_subscribe(memacct *m, const char *path) {
        int r;

        bus_lock(m);
        r = subscribe_locked(m, path);
        bus_unlock(m);
        return r;
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
                struct pollfd pfd[2];
                uint64_t until = UINT64_MAX;
                int left, events, fd;

                if (event_queue_pop(&c->events, ret)) {
                        r = 1;
                        break;
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
                fd = sd_bus_get_fd(c->bus);
                events = sd_bus_get_events(c->bus);
                if (fd < 0 || events < 0) {
                        r = bus_fail(m, NULL, fd < 0 ? fd : events);
                        break;
                }
                /* sd-bus's own deadline (a reply timeout), absolute CLOCK_MONOTONIC µs. */
                if (sd_bus_get_timeout(c->bus, &until) > 0 && until < CLIENT_NO_DEADLINE / 1000) {
                        int bus_left = client_deadline_left_msec(until * 1000);

                        if (left < 0 || bus_left < left)
                                left = bus_left;
                }
                pfd[0] = (struct pollfd) { .fd = fd, .events = (short) events };
                pfd[1] = (struct pollfd) { .fd = c->wake_fd, .events = POLLIN };
                /* Sleep without the lock: other threads' calls go on. */
                c->sleepers++;
                pthread_mutex_unlock(&m->lock);
                r = poll(pfd, 2, left);
                if (r < 0 && errno == EINTR) {
                        pthread_mutex_lock(&m->lock);
                        c->sleepers--;
                        bus_unlock(m);
                        return client_error(m, -EINTR, "interrupted", NULL);
                }
                pthread_mutex_lock(&m->lock);
                c->sleepers--;
                if (pfd[1].revents & POLLIN) {
                        eventfd_t v;

                        (void) eventfd_read(c->wake_fd, &v);
                }
        }
        bus_unlock(m);
        return r;
}

void bus_events_done(BusConn *c) {
        c->match = sd_bus_slot_unref(c->match);
        event_queue_done(&c->events);
        for (size_t i = 0; i < c->n_prefixes; i++)
                free(c->prefixes[i]);
        free(c->prefixes);
        c->prefixes = NULL;
        c->n_prefixes = 0;
}
