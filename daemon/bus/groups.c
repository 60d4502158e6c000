/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.memacct1.Group: one bus object per group, without registering any
 *
 * A fallback vtable on /org/memacct1/group answers for every object path
 * below it: the find callback decodes the path (sd_bus_path_decode(), the
 * inverse of the sd_bus_path_encode() that names the objects: "/" is
 * .../group/_2f, "/a/b" is .../group/_2fa_2fb), looks the group up, and
 * reads it once into a view that the property getters then copy from. A
 * node enumerator lists the groups for introspection and the
 * ObjectManager. So groups come and go in the core alone; the bus learns
 * of them when it is asked.
 *
 * The limits (MemoryMax, MemoryHigh, MemoryLow, MemoryMin, and in the
 * device regions DeviceMemoryMax and the like) emit PropertiesChanged
 * whenever they are set, over any transport (signals.c); the counters
 * (current, peak, events, stats) change on every charge and emit
 * nothing, as systemd's MemoryCurrent does not
 * (EmitsChangedSignal=false): read them when you need them, or watch the
 * Event and RegionEvent signals. Path never changes. PressureSome and
 * PressureFull, memory.pressure's two lines, change with time itself and
 * emit nothing either.
 *
 * The device memory properties are arrays of (region, value), one entry
 * per device region the group has counters in: memory's own are the
 * Memory* properties, unchanged, so that no reader of those mistakes a
 * device region's figures for memory's.
 *
 * Reads follow the daemon's read access: when it is not "all", a peer
 * that may not read a group cannot get its properties, and does not see
 * it in the enumeration.
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/error.h"
#include "bus/groups.h"
#include "bus/manager.h"
#include "bus/names.h"
#include "bus/peer.h"
#include "service/service.h"
#include "macro.h"

/*
 * Who asks, when reads are restricted: 1 with the caller's peer; 0 when
 * reads are open to all, or nobody asks (our own signals, which are sent
 * only while reads are open); < 0 with @error.
 */
static int reader(BusManager *m, sd_bus *bus, Peer **ret, sd_bus_error *error) {
        sd_bus_message *msg;
        BusPeer *p;
        int r;

        *ret = NULL;
        if (service_reads_open(m->service))
                return 0;
        msg = sd_bus_get_current_message(bus);
        if (!msg || !sd_bus_message_get_sender(msg))
                return 0;
        r = bus_peer_get(m, msg, &p, error);
        if (r < 0)
                return r;
        *ret = p->peer;
        return 1;
}

/* ServiceGroupFn of the find callback: the view the getters read. */
static int view_group(void *userdata, const char *path, const MemGroupInfo *info) {
        BusGroupView *v = userdata;

        /* The service's look-up bounds it by MEM_PATH_MAX. */
        snprintf(v->path, sizeof(v->path), "%s", path);
        v->info = *info;
        return 0;
}

static int group_find(sd_bus *bus, const char *object, const char *interface, void *userdata,
                      void **ret_found, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_free_ char *path = NULL;
        Peer *peer;
        Refusal rf;
        int r;

        (void) interface;
        r = sd_bus_path_decode(object, BUS_GROUP_PREFIX, &path);
        if (r <= 0)
                return r;
        if (!m->service) {
                /* --bus-introspect: any well-formed name stands for a group. */
                m->view = (BusGroupView) {};
                snprintf(m->view.path, sizeof(m->view.path), "%s", path);
                *ret_found = &m->view;
                return 1;
        }
        r = reader(m, bus, &peer, error);
        if (r < 0)
                return r;
        refusal_init(&rf);
        r = service_get_group(m->service, peer, path, NULL, 0, view_group, &m->view, &rf);
        if (r == -EPERM)
                return bus_refusal(error, &rf);
        if (r < 0)
                return 0; /* no such object */
        *ret_found = &m->view;
        return 1;
}

typedef struct Enumerate {
        char **nodes;
        size_t n, cap;
} Enumerate;

/* ServiceGroupFn of the node enumerator: one object path more. */
static int enumerate_group(void *userdata, const char *path, const MemGroupInfo *info) {
        Enumerate *e = userdata;
        int r;

        (void) info;
        if (e->n + 2 > e->cap) {
                size_t cap = e->cap ? e->cap * 2 : 64;
                char **v = realloc(e->nodes, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                e->nodes = v;
                e->cap = cap;
        }
        r = bus_group_object_path(path, &e->nodes[e->n]);
        if (r < 0)
                return r;
        e->nodes[++e->n] = NULL;
        return 0;
}

/* Every group the reader may read (a group it may not read may have
 * children delegated to it: they are listed). */
static int group_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***ret_nodes,
                           sd_bus_error *error) {
        BusManager *m = userdata;
        Enumerate e = {};
        Peer *peer;
        Refusal rf;
        int r = 0;

        (void) prefix;
        if (m->service) {
                r = reader(m, bus, &peer, error);
                if (r < 0)
                        return r;
                refusal_init(&rf);
                r = service_list_groups(m->service, peer, "/", SERVICE_READ_RECURSIVE | SERVICE_READ_PATHS,
                                        enumerate_group, &e, &rf);
        }
        if (r >= 0 && !e.nodes) {
                e.nodes = calloc(1, sizeof(char *));
                if (!e.nodes)
                        r = -ENOMEM;
        }
        if (r < 0) {
                for (size_t i = 0; i < e.n; i++)
                        free(e.nodes[i]);
                free(e.nodes);
                return r;
        }
        *ret_nodes = e.nodes;
        return 0;
}

static int property_get_path(sd_bus *bus, const char *object, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const BusGroupView *v = userdata;

        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "s", v->path);
}

static int append_counters(sd_bus_message *reply, const char *(*name)(unsigned), const void *values,
                           bool is_signed, unsigned n) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{st}");
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n; i++) {
                /* Stats are signed in the core; like the socket, the bus
                 * reports their bits as unsigned. */
                uint64_t v = is_signed ? (uint64_t) ((const int64_t *) values)[i]
                                       : ((const uint64_t *) values)[i];

                r = sd_bus_message_append(reply, "{st}", name(i), v);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static const char *event_name(unsigned i) {
        return mem_event_to_string((MemEvent) i);
}

static const char *stat_name(unsigned i) {
        return mem_stat_item_to_string((MemStatItem) i);
}

/* UINT64_MAX for a group that mirrors no kernel cgroup. */
static int property_get_kernel_current(sd_bus *bus, const char *object, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        const BusGroupView *v = userdata;

        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "t", v->info.mirror ? v->info.kernel_current : UINT64_MAX);
}

/* The group's own kept and session bytes: service_info_kept(), _session(). */
static int property_get_kept(sd_bus *bus, const char *object, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const BusGroupView *v = userdata;

        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "t", service_info_kept(&v->info));
}

static int property_get_session(sd_bus *bus, const char *object, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error) {
        const BusGroupView *v = userdata;

        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "t", service_info_session(&v->info));
}

static int property_get_events(sd_bus *bus, const char *object, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return append_counters(reply, event_name, userdata, false, _MEM_EVENT_MAX);
}

static int property_get_stats(sd_bus *bus, const char *object, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return append_counters(reply, stat_name, userdata, true, _MEM_STAT_MAX);
}

/*
 * (dddt): one line of memory.pressure, the averages in percent (the
 * hundredths the kernel prints) and the total in µs. userdata: the
 * MemPressureFigures.
 */
static int property_get_pressure(sd_bus *bus, const char *object, const char *interface,
                                 const char *property, sd_bus_message *reply, void *userdata,
                                 sd_bus_error *error) {
        const MemPressureFigures *f = userdata;

        (void) bus, (void) object, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "(dddt)", f->avg10 / 100.0, f->avg60 / 100.0, f->avg300 / 100.0,
                                     f->total_usec);
}

/*
 * The device memory properties: each an array of (region, value), one
 * entry per device region the group has counters in (MemGroupInfo's
 * regions, in region order), so that a group that uses none reads
 * empty arrays. A documented table: property name, MemRegionInfo field.
 */
static const struct {
        const char *property;
        size_t offset;
} region_fields[] = {
        { "DeviceMemoryCurrent", offsetof(MemRegionInfo, current) },
        { "DeviceMemoryPeak", offsetof(MemRegionInfo, peak) },
        { "DeviceMemoryMax", offsetof(MemRegionInfo, max) },
        { "DeviceMemoryHigh", offsetof(MemRegionInfo, high) },
        { "DeviceMemoryLow", offsetof(MemRegionInfo, low) },
        { "DeviceMemoryMin", offsetof(MemRegionInfo, min) },
        { "EffectiveDeviceMemoryMin", offsetof(MemRegionInfo, effective_min) },
        { "EffectiveDeviceMemoryLow", offsetof(MemRegionInfo, effective_low) },
        { "DeviceMemoryFailCount", offsetof(MemRegionInfo, failcnt) },
        { "DeviceMemoryKept", offsetof(MemRegionInfo, kept) },
        { "DeviceMemoryCapacity", offsetof(MemRegionInfo, capacity) },
};

/* a(st): the MemRegionInfo field of @property, per region. */
static int property_get_region_values(sd_bus *bus, const char *object, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error) {
        const BusGroupView *v = userdata;
        size_t f;
        int r;

        (void) bus, (void) object, (void) interface, (void) error;
        for (f = 0; f < ELEMENTSOF(region_fields) && strcmp(property, region_fields[f].property) != 0; f++)
                ;
        if (f == ELEMENTSOF(region_fields))
                return -EINVAL; /* the vtable names only these: not reached */
        r = sd_bus_message_open_container(reply, 'a', "(st)");
        for (unsigned i = 0; r >= 0 && i < v->info.nr_regions; i++) {
                const MemRegionInfo *ri = &v->info.regions[i];
                uint64_t value = *(const uint64_t *) ((const uint8_t *) ri + region_fields[f].offset);

                r = sd_bus_message_append(reply, "(st)", ri->name, value);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* a(sa{st}): the events of each region, hierarchical (DeviceMemoryEvents) or local. */
static int property_get_region_events(sd_bus *bus, const char *object, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error) {
        const BusGroupView *v = userdata;
        bool local = strcmp(property, "DeviceMemoryEventsLocal") == 0;
        int r;

        (void) bus, (void) object, (void) interface, (void) error;
        r = sd_bus_message_open_container(reply, 'a', "(sa{st})");
        for (unsigned i = 0; r >= 0 && i < v->info.nr_regions; i++) {
                const MemRegionInfo *ri = &v->info.regions[i];

                r = sd_bus_message_open_container(reply, 'r', "sa{st}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", ri->name);
                if (r >= 0)
                        r = append_counters(reply, event_name, local ? ri->events_local : ri->events, false,
                                            _MEM_EVENT_MAX);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

#define VIEW(field) offsetof(BusGroupView, info.field)
#define REGION_PROPERTY(name, flags) SD_BUS_PROPERTY(name, "a(st)", property_get_region_values, 0, flags)

static const sd_bus_vtable group_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Path", "s", property_get_path, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MemoryCurrent", "t", NULL, VIEW(current), 0),
        SD_BUS_PROPERTY("MemoryPeak", "t", NULL, VIEW(peak), 0),
        SD_BUS_PROPERTY("MemoryMax", "t", NULL, VIEW(max), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemoryHigh", "t", NULL, VIEW(high), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemoryLow", "t", NULL, VIEW(low), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemoryMin", "t", NULL, VIEW(min), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("EffectiveMemoryMin", "t", NULL, VIEW(effective_min), 0),
        SD_BUS_PROPERTY("EffectiveMemoryLow", "t", NULL, VIEW(effective_low), 0),
        SD_BUS_PROPERTY("FailCount", "t", NULL, VIEW(failcnt), 0),
        SD_BUS_PROPERTY("Events", "a{st}", property_get_events, VIEW(events), 0),
        SD_BUS_PROPERTY("EventsLocal", "a{st}", property_get_events, VIEW(events_local), 0),
        SD_BUS_PROPERTY("Stats", "a{st}", property_get_stats, VIEW(stat), 0),
        SD_BUS_PROPERTY("KernelMemoryCurrent", "t", property_get_kernel_current, 0, 0),
        SD_BUS_PROPERTY("Owner", "u", NULL, VIEW(owner), 0),
        SD_BUS_PROPERTY("MemoryKept", "t", property_get_kept, 0, 0),
        SD_BUS_PROPERTY("MemorySession", "t", property_get_session, 0, 0),
        SD_BUS_PROPERTY("NSessions", "u", NULL, VIEW(nr_attached), 0),
        SD_BUS_PROPERTY("NChildren", "u", NULL, VIEW(nr_children), 0),
        SD_BUS_PROPERTY("PressureSome", "(dddt)", property_get_pressure, VIEW(pressure[MEM_PRESSURE_SOME]), 0),
        SD_BUS_PROPERTY("PressureFull", "(dddt)", property_get_pressure, VIEW(pressure[MEM_PRESSURE_FULL]), 0),
        REGION_PROPERTY("DeviceMemoryCurrent", 0),
        REGION_PROPERTY("DeviceMemoryPeak", 0),
        REGION_PROPERTY("DeviceMemoryMax", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        REGION_PROPERTY("DeviceMemoryHigh", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        REGION_PROPERTY("DeviceMemoryLow", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        REGION_PROPERTY("DeviceMemoryMin", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        REGION_PROPERTY("EffectiveDeviceMemoryMin", 0),
        REGION_PROPERTY("EffectiveDeviceMemoryLow", 0),
        REGION_PROPERTY("DeviceMemoryFailCount", 0),
        SD_BUS_PROPERTY("DeviceMemoryEvents", "a(sa{st})", property_get_region_events, 0, 0),
        SD_BUS_PROPERTY("DeviceMemoryEventsLocal", "a(sa{st})", property_get_region_events, 0, 0),
        REGION_PROPERTY("DeviceMemoryKept", 0),
        REGION_PROPERTY("DeviceMemoryCapacity", 0),
        SD_BUS_VTABLE_END
};

int bus_group_register(BusManager *m) {
        int r;

        r = sd_bus_add_fallback_vtable(m->bus, NULL, BUS_GROUP_PREFIX, BUS_GROUP_INTERFACE, group_vtable,
                                       group_find, m);
        if (r < 0)
                return r;
        return sd_bus_add_node_enumerator(m->bus, NULL, BUS_GROUP_PREFIX, group_enumerate, m);
}
