/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.memacct1.Manager: the manager object and its one table of methods
 *
 * The vtable below names every method, its arguments and its entry
 * point; the handlers are in hierarchy.c (groups), sessions.c (charges
 * and sessions), mirrors.c (kernel cgroups and placement rules),
 * regions.c (device memory regions), reclaim.c (reclaim) and info.c
 * (the daemon), each decode, one service call, encode (call.h).
 *
 * What differs from the socket is only what the bus is: a peer's session
 * exists from its first session charge or Attach, not from a connect;
 * events are the Event signal, not a subscription; there is no stock and
 * no force on Charge; a call that waits for reclaim is held (park.h), and
 * a reclaim request is a signal to its one holder. Every change,
 * whichever transport made it, is signalled (signals.c); a change made
 * here has its signals sent before its reply, and its reply is held
 * until the change is saved (held.c).
 */

#include "bus/hierarchy.h"
#include "bus/info.h"
#include "bus/manager.h"
#include "bus/mirrors.h"
#include "bus/names.h"
#include "bus/park.h"
#include "bus/peer.h"
#include "bus/reclaim.h"
#include "bus/regions.h"
#include "bus/sessions.h"
#include "status.h"

void bus_manager_release(BusManager *m) {
        bus_held_release(&m->held, m->service);
}

bool bus_manager_may_broadcast(BusManager *m) {
        return !m->service || service_reads_open(m->service);
}

uint64_t bus_manager_flush(BusManager *m) {
        if (!m->signals)
                return 0;
        return bus_signals_flush(m->signals, m->bus, bus_manager_may_broadcast(m));
}

/*
 * The vtable: the one table of the manager's methods (member, in and out
 * arguments, entry point), in proto/org.memacct1.xml's order, and its
 * signals; a documented table. Each entry point is a handler made an
 * sd-bus one by BUS_METHOD() (call.h), with the operation it counts as.
 * Every method is UNPRIVILEGED: without the flag sd-bus would demand
 * CAP_SYS_ADMIN of the caller (a round trip to ask), while who may do
 * what is the service's decision, on the uid, as on the socket.
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("CreateGroup",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "u", owner),
                                SD_BUS_RESULT("o", group),
                                bus_method_create_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateTransientGroup",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "u", owner),
                                SD_BUS_RESULT("o", group),
                                bus_method_create_transient_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLimits",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "b", force),
                                SD_BUS_NO_RESULT,
                                bus_method_set_limits, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Charge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high),
                                bus_method_charge, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Uncharge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_NO_RESULT,
                                bus_method_uncharge, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("s", group),
                                bus_method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("o", group),
                                bus_method_get_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroups",
                                SD_BUS_ARGS("s", path, "b", recursive),
                                SD_BUS_RESULT("a(so)", groups),
                                bus_method_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroupsPage",
                                SD_BUS_ARGS("s", path, "b", recursive, "s", after, "u", limit),
                                SD_BUS_RESULT("a(so)", groups, "s", next, "b", more, "b", restarted),
                                bus_method_list_groups_page, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("MoveProcess",
                                SD_BUS_ARGS("u", pid, "s", path),
                                SD_BUS_RESULT("u", sessions),
                                bus_method_move_process, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetClient",
                                SD_BUS_ARGS("u", pid, "b", exact),
                                SD_BUS_RESULT("a{st}", rss),
                                bus_method_get_client, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetPeak",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                bus_method_reset_peak, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportCgroups",
                                SD_BUS_ARGS("s", from, "s", under),
                                SD_BUS_RESULT("u", created, "u", updated, "u", unchanged),
                                bus_method_import_cgroups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("PruneMirrors",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("as", removed, "a(ss)", kept),
                                bus_method_prune_mirrors, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportCgroupsKeepingLimits",
                                SD_BUS_ARGS("s", from, "s", under, "b", reset_limits),
                                SD_BUS_RESULT("a(sa{st}a{st})", kept_limits, "u", created, "u", updated,
                                              "u", unchanged, "u", kept, "u", kernel_owned),
                                bus_method_import_cgroups_keeping_limits, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddPlacementRule",
                                SD_BUS_ARGS("s", cgroup, "s", group),
                                SD_BUS_NO_RESULT,
                                bus_method_add_placement_rule, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddPlacementRuleWithFlags",
                                SD_BUS_ARGS("s", cgroup, "s", group, "t", flags),
                                SD_BUS_NO_RESULT,
                                bus_method_add_placement_rule_with_flags, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemovePlacementRule",
                                SD_BUS_ARGS("s", cgroup),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_placement_rule, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListPlacementRules",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ss)", rules),
                                bus_method_list_placement_rules, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListAllPlacementRules",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssb)", rules),
                                bus_method_list_all_placement_rules, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetOwner",
                                SD_BUS_ARGS("s", path, "u", owner),
                                SD_BUS_NO_RESULT,
                                bus_method_set_owner, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetInfo",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", version, "t", uptime_usec, "t", requests, "u", sessions,
                                              "u", groups, "s", state, "s", state_cause, "t", saves,
                                              "t", last_save_usec),
                                bus_method_get_info, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSessions",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("a(uussstt)", sessions),
                                bus_method_list_sessions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddRegion",
                                SD_BUS_ARGS("s", name, "t", capacity),
                                SD_BUS_NO_RESULT,
                                bus_method_add_region, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveRegion",
                                SD_BUS_ARGS("s", name),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_region, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListRegions",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(stttu)", regions),
                                bus_method_list_regions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ChargeRegion",
                                SD_BUS_ARGS("s", path, "s", region, "t", bytes, "b", keep),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high),
                                bus_method_charge_region, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("UnchargeRegion",
                                SD_BUS_ARGS("s", path, "s", region, "t", bytes, "b", keep),
                                SD_BUS_NO_RESULT,
                                bus_method_uncharge_region, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetRegionLimits",
                                SD_BUS_ARGS("s", path, "s", region, "a{st}", limits),
                                SD_BUS_NO_RESULT,
                                bus_method_set_region_limits, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetRegionPeak",
                                SD_BUS_ARGS("s", path, "s", region),
                                SD_BUS_NO_RESULT,
                                bus_method_reset_region_peak, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Transfer",
                                SD_BUS_ARGS("s", from, "s", to, "s", region, "t", bytes),
                                SD_BUS_NO_RESULT,
                                bus_method_transfer, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("EvictValuable",
                                SD_BUS_ARGS("s", limit, "s", candidate, "s", region, "b", ignore_low),
                                SD_BUS_RESULT("s", answer),
                                bus_method_evict_valuable, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ChargeWithFlags",
                                SD_BUS_ARGS("s", path, "s", region, "t", bytes, "s", stat, "t", flags),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high),
                                bus_method_charge_with_flags, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLimitsWithFlags",
                                SD_BUS_ARGS("s", path, "s", region, "a{st}", limits, "t", flags),
                                SD_BUS_NO_RESULT,
                                bus_method_set_limits_with_flags, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetReclaimable",
                                SD_BUS_ARGS("s", region, "s", stat, "b", on),
                                SD_BUS_NO_RESULT,
                                bus_method_set_reclaimable, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReclaimDone",
                                SD_BUS_ARGS("t", id, "b", cannot),
                                SD_BUS_NO_RESULT,
                                bus_method_reclaim_done, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reclaim",
                                SD_BUS_ARGS("s", path, "s", region, "t", bytes),
                                SD_BUS_RESULT("t", released),
                                bus_method_reclaim, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Event",
                                SD_BUS_ARGS("s", path, "s", name, "t", count),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("EventBy",
                                SD_BUS_ARGS("s", path, "s", name, "t", count, "u", pid, "u", uid),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("RegionEvent",
                                SD_BUS_ARGS("s", path, "s", region, "s", name, "t", count),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("RegionEventBy",
                                SD_BUS_ARGS("s", path, "s", region, "s", name, "t", count, "u", pid,
                                            "u", uid),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("ReclaimRequest",
                                SD_BUS_ARGS("t", id, "s", region, "t", bytes),
                                0),
        SD_BUS_VTABLE_END
};

/*
 * GetManagedObjects answers every group's properties in one message; sd-bus
 * builds it whole, on the bus thread, for any caller. At 40,000 groups it
 * passed the bus's 32 MiB message limit, the bus daemon dropped the
 * connection; at 20,000, one call every half second that was never read
 * held up root's calls for seconds and grew the daemon by hundreds of MiB.
 * So above BUS_MANAGED_OBJECTS_MAX groups it is refused before sd-bus
 * builds anything (a filter runs before the object dispatch), pointing at
 * ListGroupsPage, which pages; below, it answers as the ObjectManager
 * interface promises, a reply of about 2 KiB a group at most.
 *
 * Each device region a group uses adds to its properties about as much
 * again as all of memory's (a name of up to 63 bytes in each of 13
 * DeviceMemory* arrays): the bound is shared among the regions
 * registered, so that the reply stays within the same size.
 */
static unsigned managed_objects_max(BusManager *m) {
        MemRegionDesc regions[MEM_REGION_MAX];
        Refusal rf;
        int n;

        refusal_init(&rf);
        n = service_list_regions(m->service, service_daemon_peer(m->service), regions, MEM_REGION_MAX, &rf);
        return BUS_MANAGED_OBJECTS_MAX / (unsigned) (n > 1 ? n : 1); /* n counts memory */
}

static int filter_managed_objects(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        unsigned n, max;

        (void) error;
        if (!m->service || !sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.ObjectManager",
                                                          "GetManagedObjects"))
                return 0;
        n = service_group_count(m->service);
        if (n <= BUS_MANAGED_OBJECTS_MAX / MEM_REGION_MAX)
                return 0; /* within the bound whatever the regions: no need to count them */
        max = managed_objects_max(m);
        if (n <= max)
                return 0;
        (void) sd_bus_reply_method_errorf(msg, status_to_dbus_error(MEM_STATUS_RESOURCE_EXHAUSTED),
                                          "GetManagedObjects: %u groups are more than one reply carries here "
                                          "(at most %u): list them with ListGroupsPage", n, max);
        return 1;
}

int bus_manager_register(BusManager *m) {
        int r;

        r = sd_bus_add_object_vtable(m->bus, NULL, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, manager_vtable,
                                     m);
        if (r < 0)
                return r;
        r = sd_bus_add_object_manager(m->bus, NULL, BUS_MANAGER_PATH);
        if (r >= 0)
                r = sd_bus_add_filter(m->bus, NULL, filter_managed_objects, m);
        if (r < 0)
                return r;
        if (m->service) {
                r = bus_peers_watch(m);
                if (r < 0)
                        return r;
        }
        return bus_group_register(m);
}

void bus_manager_done(BusManager *m) {
        bus_held_clear(&m->held);
        bus_peers_free(m);
        bus_park_done(m);
}
