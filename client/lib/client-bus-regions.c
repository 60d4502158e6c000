/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions over D-Bus, one manager call each: AddRegion,
 * RemoveRegion, ListRegions, ChargeRegion, UnchargeRegion,
 * SetRegionLimits, ResetRegionPeak, Transfer and EvictValuable
 * (org.memacct1(5)). A region NULL is sent as "", which the daemon takes
 * for memory, as the socket does. Replies are read into the public
 * header's structs; one that does not match the method's signature is
 * -EBADMSG. A daemon without regions answers UnknownMethod: -EOPNOTSUPP.
 */

#include <errno.h>
#include <string.h>

#include "client-bus-conn.h"
#include "client-bus-ops.h"
#include "client-bus-regions.h"
#include "client-error.h"
#include "client-regions.h"

/* The region argument: "" is memory on the bus, as NULL is here. */
static const char *region_arg(const char *region) {
        return region ? region : "";
}

int bus_add_region(memacct *m, const char *name, uint64_t capacity) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "AddRegion", NULL, "st", name, capacity);
        bus_unlock(m);
        return r;
}

int bus_remove_region(memacct *m, const char *name) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "RemoveRegion", NULL, "s", name);
        bus_unlock(m);
        return r;
}

/* The a(stttu) of a ListRegions reply onto @l. */
static int read_regions(sd_bus_message *reply, memacct_regions *l) {
        uint64_t capacity, current, peak;
        const char *name;
        uint32_t groups;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(stttu)");
        while (r >= 0 &&
               (r = sd_bus_message_read(reply, "(stttu)", &name, &capacity, &current, &peak, &groups)) > 0)
                r = client_region_list_append(l, name, capacity, current, peak, groups);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r;
}

int bus_list_regions(memacct *m, memacct_regions **ret) {
        sd_bus_message *reply = NULL;
        memacct_regions *l = client_region_list_new();
        int r;

        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        bus_lock(m);
        r = bus_manager_call_locked(m, "ListRegions", &reply, "");
        if (r >= 0) {
                r = read_regions(reply, l);
                if (r < 0)
                        r = client_error(m, r == -ENOMEM ? r : -EBADMSG,
                                         r == -ENOMEM ? NULL : "malformed ListRegions reply", NULL);
        }
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r < 0) {
                memacct_regions_free(l);
                return r;
        }
        *ret = l;
        return 0;
}

int bus_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                      memacct_charge_result *ret) {
        sd_bus_message *reply = NULL;
        int r;

        if (flags & MEMACCT_FORCE)
                return client_bus_unsupported(m, "a forced charge");
        bus_lock(m);
        /* As bus_charge(): the method with flags only for what needs it. */
        if (flags & MEMACCT_NO_WAIT)
                r = bus_charge_with_flags_locked(m, path, region_arg(region), bytes, NULL, flags, &reply);
        else
                r = bus_manager_call_locked(m, "ChargeRegion", &reply, "sstb", path ? path : "",
                                            region_arg(region), bytes, (int) !!(flags & MEMACCT_KEEP));
        r = bus_charge_reply_locked(m, r, reply, "malformed ChargeRegion reply", ret);
        bus_unlock(m);
        return r;
}

int bus_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "UnchargeRegion", NULL, "sstb", path ? path : "", region_arg(region),
                                    bytes, (int) !!(flags & MEMACCT_KEEP));
        bus_unlock(m);
        return r;
}

int bus_set_region_limits(memacct *m, const char *path, const char *region, const memacct_limits *limits) {
        sd_bus_message *call = NULL;
        int r;

        bus_lock(m);
        r = bus_manager_call_new(m, "SetRegionLimits", &call);
        if (r >= 0) {
                r = sd_bus_message_append(call, "ss", path, region_arg(region));
                if (r >= 0)
                        r = bus_limits_append(call, limits);
                r = bus_send_locked(m, call, r, NULL);
        }
        bus_unlock(m);
        return r;
}

int bus_reset_region_peak(memacct *m, const char *path, const char *region) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "ResetRegionPeak", NULL, "ss", path, region_arg(region));
        bus_unlock(m);
        return r;
}

int bus_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "Transfer", NULL, "ssst", from, to, region_arg(region), bytes);
        bus_unlock(m);
        return r;
}

/* EvictValuable's answer as MEMACCT_EVICT_*; -EBADMSG for a word we do not know. */
static int evict_from_string(const char *s) {
        if (strcmp(s, "yes") == 0)
                return MEMACCT_EVICT_YES;
        if (strcmp(s, "no") == 0)
                return MEMACCT_EVICT_NO;
        if (strcmp(s, "hit_low") == 0)
                return MEMACCT_EVICT_HIT_LOW;
        return -EBADMSG;
}

int bus_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                       unsigned flags) {
        sd_bus_message *reply = NULL;
        const char *answer;
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "EvictValuable", &reply, "sssb", limit ? limit : "", candidate,
                                    region_arg(region), (int) !!(flags & MEMACCT_IGNORE_LOW));
        if (r >= 0) {
                r = sd_bus_message_read(reply, "s", &answer) > 0 ? evict_from_string(answer) : -EBADMSG;
                if (r < 0)
                        r = client_error(m, r, "malformed EvictValuable reply", NULL);
        }
        sd_bus_message_unref(reply);
        bus_unlock(m);
        return r;
}
