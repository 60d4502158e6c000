/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods on device memory regions: AddRegion,
 * RemoveRegion, ListRegions, ChargeRegion, UnchargeRegion,
 * SetRegionLimits, ResetRegionPeak, Transfer and EvictValuable
 * (org.memacct1(5), DEVICE MEMORY). Each is a handler of the one
 * signature (call.h): decode, ask for the caller, one service call,
 * encode. A region named "" or "memory" is memory, so that each region
 * method is also its memory twin's (Charge of anon, SetLimits without
 * force, ResetPeak).
 *
 * Changes are held until saved (a region, a kept charge, limits), as
 * every change is; the reads reply at once. The request counts have no
 * region operations: a region method counts as the memory operation it
 * mirrors (ChargeRegion as Charge, SetRegionLimits as SetLimits...),
 * ListRegions as GetInfo (a read of the daemon-wide state, with its
 * authorisation), EvictValuable as GetGroup (a read of two groups), and
 * AddRegion and RemoveRegion as "other".
 */

#include "bus/call.h"
#include "bus/error.h"
#include "bus/group-limits.h"
#include "bus/manager.h"
#include "bus/regions.h"
#include "bus/sessions.h"
#include "macro.h"

static int add_region(BusCall *c) {
        const char *name;
        uint64_t capacity;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "st", &name, &capacity);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_add_region(c->svc, peer, name, capacity, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_add_region, add_region, SERVICE_OP_OTHER)

static int remove_region(BusCall *c) {
        return bus_call_path(c, service_remove_region);
}
BUS_METHOD(bus_method_remove_region, remove_region, SERVICE_OP_OTHER)

static int list_regions(BusCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        MemRegionDesc regions[MEM_REGION_MAX];
        Peer *peer;
        int n, r;

        r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        n = service_list_regions(c->svc, peer, regions, ELEMENTSOF(regions), &c->rf);
        if (n < 0)
                return bus_call_refused(c);
        r = bus_call_new_array(c, "(stttu)", &reply);
        for (int i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(stttu)", regions[i].name, regions[i].capacity,
                                          regions[i].current, regions[i].peak, (uint32_t) regions[i].groups);
        return r < 0 ? r : bus_array_send(reply);
}
BUS_METHOD(bus_method_list_regions, list_regions, SERVICE_OP_GET_INFO)

/* A ChargeRegion or UnchargeRegion call's arguments: path, region, bytes, keep. */
static int read_region_charge(BusCall *c, ServiceCharge *ret) {
        int keep, r;

        *ret = (ServiceCharge) { .has_bytes = true };
        r = sd_bus_message_read(c->msg, "sstb", &ret->path, &ret->region, &ret->bytes, &keep);
        ret->keep = keep;
        return r;
}

static int charge_region(BusCall *c) {
        return bus_charge_read_by(c, read_region_charge);
}
BUS_METHOD(bus_method_charge_region, charge_region, SERVICE_OP_CHARGE)

static int uncharge_region(BusCall *c) {
        return bus_uncharge_read_by(c, read_region_charge);
}
BUS_METHOD(bus_method_uncharge_region, uncharge_region, SERVICE_OP_UNCHARGE)

/*
 * No force: in a device region a max below usage is always taken, as a
 * dmem.max write is; in memory the holders below are asked for the
 * difference first, and it is refused if usage is still above (Busy):
 * SetLimits forces it. Either waits, held, while they give back.
 */
/* SetLimitsWithFlags's flags (org.memacct1(5)). */
#define BUS_LIMITS_FORCE 1u
#define BUS_LIMITS_NO_RECLAIM 2u

/* SetRegionLimits(s, s, a{st}), and with @with_flags SetLimitsWithFlags's (..., t flags). */
static int region_limits(BusCall *c, bool with_flags) {
        unsigned service_flags = SERVICE_LIMITS_WAIT;
        const char *path, *region;
        uint64_t flags = 0;
        MemLimits limits;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "ss", &path, &region);
        if (r >= 0)
                r = bus_read_limits(c->msg, &limits, c->error);
        if (r >= 0 && with_flags)
                r = sd_bus_message_read(c->msg, "t", &flags);
        if (r >= 0 && (flags & ~(uint64_t) (BUS_LIMITS_FORCE | BUS_LIMITS_NO_RECLAIM)))
                r = bus_fail(c->error, -EINVAL, "unknown flags 0x%llx (1 force, 2 no_reclaim)",
                             (unsigned long long) flags);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        if (flags & BUS_LIMITS_FORCE)
                service_flags |= SERVICE_LIMITS_FORCE;
        if (flags & BUS_LIMITS_NO_RECLAIM)
                service_flags |= SERVICE_LIMITS_NO_RECLAIM;
        r = service_set_region_limits(c->svc, peer, path, region, &limits, service_flags, &c->rf);
        return bus_call_done(c, r);
}

static int set_region_limits(BusCall *c) {
        return region_limits(c, false);
}
BUS_METHOD(bus_method_set_region_limits, set_region_limits, SERVICE_OP_SET_LIMITS)

static int set_limits_with_flags(BusCall *c) {
        return region_limits(c, true);
}
BUS_METHOD(bus_method_set_limits_with_flags, set_limits_with_flags, SERVICE_OP_SET_LIMITS)

static int reset_region_peak(BusCall *c) {
        const char *path, *region;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "ss", &path, &region);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_reset_region_peak(c->svc, peer, path, region, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_reset_region_peak, reset_region_peak, SERVICE_OP_RESET_PEAK)

/* Memory's transfers are of anon: a stat item would be memory's alone. */
static int transfer(BusCall *c) {
        const char *from, *to, *region;
        uint64_t bytes;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "ssst", &from, &to, &region, &bytes);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_transfer(c->svc, peer, from, to, bytes, region, NULL, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_transfer, transfer, SERVICE_OP_CHARGE)

static const char *evict_to_string(ServiceEvict e) {
        switch (e) {
        case SERVICE_EVICT_YES:
                return "yes";
        case SERVICE_EVICT_HIT_LOW:
                return "hit_low";
        default:
                return "no";
        }
}

static int evict_valuable(BusCall *c) {
        const char *limit, *candidate, *region;
        int ignore_low, r;
        Peer *peer;

        r = sd_bus_message_read(c->msg, "sssb", &limit, &candidate, &region, &ignore_low);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_evict_valuable(c->svc, peer, limit, candidate, region, ignore_low, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return sd_bus_reply_method_return(c->msg, "s", evict_to_string((ServiceEvict) r));
}
BUS_METHOD(bus_method_evict_valuable, evict_valuable, SERVICE_OP_GET_GROUP)
