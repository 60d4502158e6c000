/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods on sessions: Charge, Uncharge, Attach,
 * MoveProcess, GetClient and ListSessions (org.memacct1(5)), each a
 * handler of the one signature (call.h): decode, ask for the caller, one
 * service call, encode.
 *
 * What differs from the socket is only what the bus is: a peer's session
 * exists from its first session charge or Attach, not from a connect
 * (peer.c), and ends when the peer leaves the bus; there is no stock and
 * no force on Charge. A charge's reply is held until a kept charge is
 * saved; a charge refused at a max waits, its call held, while the
 * holders below give back (park.h), unless ChargeWithFlags says no_wait.
 */

#include "bus/call.h"
#include "bus/error.h"
#include "bus/manager.h"
#include "bus/park.h"
#include "bus/sessions.h"
#include "macro.h"

/* A Charge or Uncharge call's arguments: path, bytes, stat item, keep. */
static int read_charge(BusCall *c, ServiceCharge *ret) {
        int keep, r;

        *ret = (ServiceCharge) { .has_bytes = true };
        r = sd_bus_message_read(c->msg, "stsb", &ret->path, &ret->bytes, &ret->stat, &keep);
        ret->keep = keep;
        return r;
}

int bus_charge_read_by(BusCall *c, BusChargeReader read) {
        ServiceChargeResult res;
        ServiceCharge ch;
        Peer *peer;
        int r;

        r = read(c, &ch);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        /* The call is held while the holders below give back (park.c). */
        ch.can_wait = true;
        r = service_charge(c->svc, peer, &ch, &res, &c->rf);
        if (r == -EINPROGRESS)
                return bus_call_park(c);
        if (r < 0)
                return bus_call_refused(c);
        return bus_call_return(c, "tt", res.throttle_usec, res.over_high);
}

static int charge(BusCall *c) {
        return bus_charge_read_by(c, read_charge);
}
BUS_METHOD(bus_method_charge, charge, SERVICE_OP_CHARGE)

/* ChargeWithFlags's flags (org.memacct1(5)). */
#define BUS_CHARGE_KEEP 1u
#define BUS_CHARGE_NO_WAIT 2u

/* ChargeWithFlags's arguments: path, region, bytes, stat item, flags. */
static int read_charge_with_flags(BusCall *c, ServiceCharge *ret) {
        uint64_t flags;
        int r;

        *ret = (ServiceCharge) { .has_bytes = true };
        r = sd_bus_message_read(c->msg, "sstst", &ret->path, &ret->region, &ret->bytes, &ret->stat, &flags);
        if (r < 0)
                return r;
        if (flags & ~(uint64_t) (BUS_CHARGE_KEEP | BUS_CHARGE_NO_WAIT))
                return bus_fail(c->error, -EINVAL, "unknown flags 0x%llx (1 keep, 2 no_wait)",
                                (unsigned long long) flags);
        ret->keep = flags & BUS_CHARGE_KEEP;
        ret->no_wait = flags & BUS_CHARGE_NO_WAIT;
        return 0;
}

static int charge_with_flags(BusCall *c) {
        return bus_charge_read_by(c, read_charge_with_flags);
}
BUS_METHOD(bus_method_charge_with_flags, charge_with_flags, SERVICE_OP_CHARGE)

int bus_uncharge_read_by(BusCall *c, BusChargeReader read) {
        ServiceCharge ch;
        Peer *peer;
        int r;

        r = read(c, &ch);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_uncharge(c->svc, peer, &ch, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return bus_call_return(c, NULL);
}

static int uncharge(BusCall *c) {
        return bus_uncharge_read_by(c, read_charge);
}
BUS_METHOD(bus_method_uncharge, uncharge, SERVICE_OP_UNCHARGE)

static int attach(BusCall *c) {
        char group[MEM_PATH_MAX + 1];
        const char *path;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "s", &path);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_attach_to(c->svc, peer, path, group, sizeof(group), &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        (void) bus_manager_flush(c->manager);
        return bus_call_return(c, "s", group);
}
BUS_METHOD(bus_method_attach, attach, SERVICE_OP_ATTACH)

static int move_process(BusCall *c) {
        const char *path;
        uint32_t pid;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "us", &pid, &path);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_move(c->svc, peer, (pid_t) pid, path, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return sd_bus_reply_method_return(c->msg, "u", (uint32_t) r);
}
BUS_METHOD(bus_method_move_process, move_process, SERVICE_OP_MOVE)

static int get_client(BusCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t rss[_MEM_RSS_MAX];
        uint32_t pid_arg;
        int exact, r;
        Peer *peer;
        pid_t pid;

        r = sd_bus_message_read(c->msg, "ub", &pid_arg, &exact);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_get_client(c->svc, peer, (pid_t) pid_arg, exact, &pid, rss, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        r = bus_call_new_array(c, "{st}", &reply);
        for (MemRss i = 0; r >= 0 && i < _MEM_RSS_MAX; i++)
                r = sd_bus_message_append(reply, "{st}", mem_rss_to_string(i), rss[i]);
        return r < 0 ? r : bus_array_send(reply);
}
BUS_METHOD(bus_method_get_client, get_client, SERVICE_OP_GET_CLIENT)

/* ServiceSessionFn of ListSessions: one (uussstt) into the reply @userdata. */
static int listed_session(void *userdata, const ServiceSession *s) {
        return sd_bus_message_append(userdata, "(uussstt)", (uint32_t) s->pid, (uint32_t) s->uid, s->comm,
                                     s->transport, s->group, s->bytes, s->stock);
}

static int list_sessions(BusCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "s", &path);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r >= 0)
                r = bus_call_new_array(c, "(uussstt)", &reply);
        if (r < 0)
                return r;
        r = service_list_sessions(c->svc, peer, path, listed_session, reply, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return bus_array_send(reply);
}
BUS_METHOD(bus_method_list_sessions, list_sessions, SERVICE_OP_LIST_SESSIONS)
