/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim on the bus (reclaim.h): the manager's SetReclaimable,
 * ReclaimDone and Reclaim, each one service call (service-reclaim.c),
 * and the ReclaimRequest signal that asks a bus peer to give back.
 *
 * A request is sent to the one peer asked: a signal with a destination,
 * which the bus daemon routes to that peer alone, whatever match rules
 * anyone added (no other peer can see who holds what). It goes through
 * the bus's signal queue, since the service asks from whatever thread
 * charged (signals.c). A Reclaim, like a charge that waits, is held
 * unanswered until its round ends (park.c).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/call.h"
#include "bus/manager.h"
#include "bus/park.h"
#include "bus/reclaim.h"
#include "macro.h"

/* What a request carries from the service's thread to the queue. */
typedef struct ReclaimAsk {
        uint64_t id, bytes;
        char region[MEM_REGION_NAME_MAX + 1];
} ReclaimAsk;

/* EventDelivery.encode: only reclaim requests are a bus peer's own (a
 * move notice is the socket's: an empty buffer, pushed nowhere). */
static int encode(const EventItem *ev, uint8_t **ret, size_t *ret_len) {
        ReclaimAsk *a;

        *ret = NULL;
        *ret_len = 0;
        if (ev->kind != EVENT_RECLAIM)
                return 0;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->id = ev->id;
        a->bytes = ev->count;
        if (ev->region)
                snprintf(a->region, sizeof(a->region), "%s", ev->region);
        *ret = (uint8_t *) a;
        *ret_len = sizeof(*a);
        return 0;
}

/* EventDelivery.push: any thread; the peer is alive (it is being asked). */
static void push(void *userdata, const uint8_t *buf, size_t len) {
        const BusPeer *p = userdata;
        ReclaimAsk a;
        EventItem ev;

        if (len != sizeof(a))
                return;
        memcpy(&a, buf, sizeof(a));
        ev = (EventItem) {
                .kind = EVENT_RECLAIM,
                .id = a.id,
                .count = a.bytes,
                .region = a.region[0] ? a.region : NULL,
        };
        bus_signals_send_to(p->manager->signals, p->name, &ev);
}

const EventDelivery bus_reclaim_delivery = {
        .encode = encode,
        .push = push,
};

static int set_reclaimable(BusCall *c) {
        const char *region, *stat;
        Peer *peer;
        int on, r;

        r = sd_bus_message_read(c->msg, "ssb", &region, &stat, &on);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_set_reclaimable(c->svc, peer, region, stat, on, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_set_reclaimable, set_reclaimable, SERVICE_OP_SET_RECLAIMABLE)

static int reclaim_done(BusCall *c) {
        uint64_t id;
        Peer *peer;
        int cannot, r;

        r = sd_bus_message_read(c->msg, "tb", &id, &cannot);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_reclaim_done(c->svc, peer, id, cannot);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_reclaim_done, reclaim_done, SERVICE_OP_RECLAIM_DONE)

static int reclaim(BusCall *c) {
        ServiceReclaim rq = { .can_wait = true };
        uint64_t released;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "sst", &rq.path, &rq.region, &rq.bytes);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_reclaim(c->svc, peer, &rq, &released, &c->rf);
        if (r == -EINPROGRESS)
                return bus_call_park(c);
        if (r < 0)
                return bus_call_refused(c);
        return bus_call_return(c, "t", released);
}
BUS_METHOD(bus_method_reclaim, reclaim, SERVICE_OP_RECLAIM)
