/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calls that wait for a round of reclaim, on the bus (park.h).
 *
 * A peer with a call held is on the manager's list of parked peers, its
 * calls in order on its own list, the held one first. The rounds'
 * deadlines are the service's (service_reclaim_wait_usec()); one timer
 * serves the nearest, and a wake-up (an eventfd the service's wake
 * writes, thread.c watches it) serves a round that ended early. Either
 * way every parked peer is looked at: they are few (one per peer whose
 * charge waits), and each look is one short lock in the service.
 */

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "bus/error.h"
#include "bus/manager.h"
#include "bus/park.h"
#include "bus/peer.h"
#include "macro.h"

struct BusParkedCall {
        BusParkedCall *next;
        sd_bus_message *msg;
        BusMethodFn fn;
        ServiceOp op;
};

void bus_park_wake(void *userdata) {
        BusManager *m = userdata;

        (void) eventfd_write(m->park_fd, 1);
}

static BusParkedCall *call_new(sd_bus_message *msg, BusMethodFn fn, ServiceOp op) {
        BusParkedCall *pc = malloc(sizeof(*pc));

        if (pc)
                *pc = (BusParkedCall) { .msg = sd_bus_message_ref(msg), .fn = fn, .op = op };
        return pc;
}

static BusParkedCall *call_free(BusParkedCall *pc) {
        BusParkedCall *next = pc->next;

        sd_bus_message_unref(pc->msg);
        free(pc);
        return next;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s, (void) usec;
        bus_park_serve(userdata);
        return 0;
}

/* The timer at @usec from now; UINT64_MAX: off. A timer that cannot be
 * armed leaves the rounds to their wake-ups, and a late holder's to the
 * next round's. */
static void arm(BusManager *m, uint64_t usec) {
        if (usec == UINT64_MAX) {
                if (m->park_timer)
                        (void) sd_event_source_set_enabled(m->park_timer, SD_EVENT_OFF);
                return;
        }
        if (!m->park_timer) {
                (void) sd_event_add_time_relative(sd_bus_get_event(m->bus), &m->park_timer, CLOCK_MONOTONIC,
                                                  usec, 1000, on_timer, m);
                return;
        }
        if (sd_event_source_set_time_relative(m->park_timer, usec) >= 0)
                (void) sd_event_source_set_enabled(m->park_timer, SD_EVENT_ONESHOT);
}

int bus_call_park(BusCall *c) {
        BusPeer *p = c->caller;
        BusManager *m = c->manager;
        BusParkedCall *pc;
        uint64_t wait;

        pc = call_new(c->msg, c->fn, c->op);
        if (!pc)
                return bus_fail(c->error, -ENOMEM, "out of memory");
        /* First: it is served again before those queued behind it. */
        pc->next = p->calls;
        p->calls = pc;
        p->ncalls++;
        p->parked = true;
        p->parked_next = m->parked;
        m->parked = p;
        c->parked = true;
        wait = service_reclaim_wait_usec(c->svc, p->peer);
        arm(m, wait == UINT64_MAX ? 0 : wait);
        return 1;
}

int bus_park_behind(BusManager *m, sd_bus_message *msg, BusMethodFn fn, ServiceOp op, sd_bus_error *error) {
        BusPeer *p = bus_peer_find(m, sd_bus_message_get_sender(msg));
        BusParkedCall *pc, **tail;

        if (!p || !p->calls)
                return 0;
        if (p->ncalls >= BUS_PARK_QUEUE_MAX)
                return bus_fail(error, -EBUSY, "%u calls already wait behind one that waits for reclaim",
                                p->ncalls);
        pc = call_new(msg, fn, op);
        if (!pc)
                return bus_fail(error, -ENOMEM, "out of memory");
        for (tail = &p->calls; *tail; tail = &(*tail)->next)
                ;
        *tail = pc;
        p->ncalls++;
        return 1;
}

/* Serve @pc now, its reply or error included; then free it. */
static void serve_one(BusManager *m, BusParkedCall *pc) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_message_rewind(pc->msg, true);
        if (r >= 0)
                r = bus_call_serve(m, pc->msg, &error, pc->fn, pc->op);
        if (r < 0) {
                if (sd_bus_error_is_set(&error))
                        (void) sd_bus_reply_method_error(pc->msg, &error);
                else
                        (void) sd_bus_reply_method_errno(pc->msg, r, NULL);
        }
        sd_bus_error_free(&error);
        (void) call_free(pc);
}

/* @p's round ended: its calls in order, until one waits again. */
static void serve_peer(BusManager *m, BusPeer *p) {
        while (p->calls && !p->parked) {
                BusParkedCall *pc = p->calls;

                p->calls = pc->next;
                p->ncalls--;
                pc->next = NULL;
                serve_one(m, pc);
        }
}

static void unlink_parked(BusManager *m, BusPeer *p) {
        for (BusPeer **i = &m->parked; *i; i = &(*i)->parked_next)
                if (*i == p) {
                        *i = p->parked_next;
                        break;
                }
        p->parked_next = NULL;
        p->parked = false;
}

void bus_park_serve(BusManager *m) {
        eventfd_t ignored;

        (void) eventfd_read(m->park_fd, &ignored);
        for (;;) {
                uint64_t next = UINT64_MAX;
                BusPeer *ready = NULL;

                for (BusPeer *p = m->parked; p && !ready; p = p->parked_next) {
                        uint64_t wait = service_reclaim_wait_usec(m->service, p->peer);

                        /* UINT64_MAX: its round is gone; served again, it tries afresh. */
                        if (wait == 0 || wait == UINT64_MAX)
                                ready = p;
                        else
                                next = MIN(next, wait);
                }
                if (!ready) {
                        arm(m, next);
                        return;
                }
                unlink_parked(m, ready);
                serve_peer(m, ready);
        }
}

void bus_park_drop(BusManager *m, BusPeer *p) {
        if (p->parked)
                unlink_parked(m, p);
        for (BusParkedCall *pc = p->calls; pc;)
                pc = call_free(pc);
        p->calls = NULL;
        p->ncalls = 0;
}

void bus_park_done(BusManager *m) {
        /* The peers' calls went with the peers (bus_park_drop()). */
        m->park_timer = sd_event_source_disable_unref(m->park_timer);
}
