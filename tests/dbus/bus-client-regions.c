/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-bus-client's tests of device memory regions through libmemacct's
 * bus handle, as its users call them: each public region call
 * (memacct_add_region() ... memacct_event_region()) on a handle of
 * memacct_connect_bus() against the daemon, its results read back over
 * sd-bus where the daemon's own figures are the measure, its refusals
 * with the errno, words and refused group the socket reports; the
 * library's own checks of the arguments, which refuse before anything is
 * sent; memory's calls for a region NULL, "" or "memory"; the regions
 * memacct_get_group() and memacct_list_groups() fill from the
 * DeviceMemory* properties; and subscriptions by region, each event with
 * its region (memacct_event_region()).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-client-regions.h"
#include "bus-test-util.h"

#define NOT_LISTED (UINT64_MAX - 1)

/* The value of @region in the a(st) property @name of @path, read over sd-bus; NOT_LISTED if none. */
static uint64_t region_prop(sd_bus *bus, const char *path, const char *name, const char *region) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char *object = object_of(path);
        uint64_t v, found = NOT_LISTED;
        const char *key;
        int r;

        r = sd_bus_get_property(bus, DEST, object, GROUP_IFACE, name, &error, &reply, "a(st)");
        assert_true(r >= 0);
        assert_true(sd_bus_message_enter_container(reply, 'a', "(st)") >= 0);
        while ((r = sd_bus_message_read(reply, "(st)", &key, &v)) > 0)
                if (strcmp(key, region) == 0)
                        found = v;
        assert_true(r >= 0);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        free(object);
        return found;
}

/* Stat item @item of @path, statistics flushed first: read over the socket, as the bus's Stats may
 * be a flush interval old. NOT_LISTED if none. */
static uint64_t stat_exact(const char *path, const char *item) {
        memacct *m = sock_open();
        memacct_group_info *g = NULL;
        uint64_t found = NOT_LISTED;

        assert_int_equal(memacct_get_group(m, path, NULL, MEMACCT_EXACT, &g), 0);
        for (size_t i = 0; i < g->n_stat; i++)
                if (strcmp(g->stat[i].name, item) == 0)
                        found = g->stat[i].value;
        memacct_group_info_free(g);
        memacct_close(m);
        return found;
}

/* The one region of group @path as memacct_get_group() reads it; fails the test unless it has exactly one. */
static memacct_group_info *group_one_region(memacct *m, const char *path, const memacct_region_info **ret) {
        memacct_group_info *g = NULL;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        assert_int_equal(g->n_regions, 1);
        assert_non_null(g->regions);
        *ret = &g->regions[0];
        return g;
}

/* @c[0..n) are the four events, in the socket's order, with max and oom at @max and @oom. */
static void assert_events(const memacct_counter *c, size_t n, uint64_t max, uint64_t oom) {
        static const char *const names[] = { "low", "high", "max", "oom" };

        assert_int_equal(n, ELEMENTSOF(names));
        for (size_t i = 0; i < n; i++)
                assert_string_equal(c[i].name, names[i]);
        assert_int_equal(c[2].value, max);
        assert_int_equal(c[3].value, oom);
}

static void remove_bus(sd_bus *bus, const char *path) {
        Outcome o;

        bcall(bus, &o, NULL, "RemoveGroup", "s", path);
        assert_ok(path, &o);
}

#define R "gpuT"
#define CAP M

/* @call returned -EINVAL with @message, the library's own words for an argument it refuses before
 * sending anything: the daemon's refusals have other words. */
#define assert_refused_here(m, call, message)                                                             \
        do {                                                                                              \
                int r_ = (call);                                                                          \
                const char *e_ = memacct_last_error(m);                                                   \
                                                                                                          \
                if (r_ != -EINVAL || !e_ || strcmp(e_, (message)) != 0)                                   \
                        fail_msg("%s: %d (%s), want -EINVAL (%s)", #call, r_, e_ ? e_ : "no error",       \
                                 (message));                                                              \
        } while (0)

/* Every region call refuses a NULL handle; the list accessors take a NULL list. */
static void regions_null_handle(void) {
        memacct_limits limits = { .set = MEMACCT_LIMIT_MAX, .max = K };
        memacct_charge_result res;
        const char *region = NULL;
        memacct_regions *l = NULL;

        assert_int_equal(memacct_add_region(NULL, R, CAP), -EINVAL);
        assert_int_equal(memacct_remove_region(NULL, R), -EINVAL);
        assert_int_equal(memacct_list_regions(NULL, &l), -EINVAL);
        assert_null(l);
        assert_int_equal(memacct_charge_region(NULL, "/rg/k", R, K, MEMACCT_KEEP, &res), -EINVAL);
        assert_int_equal(memacct_charge_region(NULL, "/rg/k", NULL, K, MEMACCT_KEEP, &res), -EINVAL);
        assert_int_equal(memacct_uncharge_region(NULL, "/rg/k", R, K, MEMACCT_KEEP), -EINVAL);
        assert_int_equal(memacct_uncharge_region(NULL, "/rg/k", NULL, K, MEMACCT_KEEP), -EINVAL);
        assert_int_equal(memacct_set_region_limits(NULL, "/rg", R, &limits), -EINVAL);
        assert_int_equal(memacct_set_region_limits(NULL, "/rg", NULL, &limits), -EINVAL);
        assert_int_equal(memacct_reset_region_peak(NULL, "/rg", R), -EINVAL);
        assert_int_equal(memacct_reset_region_peak(NULL, "/rg", NULL), -EINVAL);
        assert_int_equal(memacct_transfer(NULL, "/rg/k", "/rg", R, K), -EINVAL);
        assert_int_equal(memacct_evict_valuable(NULL, "/rg", "/rg/k", R, 0), -EINVAL);
        assert_int_equal(memacct_subscribe_region(NULL, "/rg", R), -EINVAL);
        assert_int_equal(memacct_event_region(NULL, &region), -EINVAL);
        assert_null(region);

        assert_int_equal(memacct_regions_size(NULL), 0);
        assert_null(memacct_regions_get(NULL, 0));
        assert_null(memacct_regions_free(NULL));
}

/* AddRegion and ListRegions, with their refusals. */
static void regions_registered(memacct *m) {
        memacct_regions *l = NULL;
        const memacct_region *r;

        /* A bus handle: its server is the bus name and its owner, not a memacctd version. */
        if (strncmp(memacct_server(m), DEST " :", strlen(DEST " :")) != 0)
                fail_msg("the handle's server is '%s', not " DEST " and its owner", memacct_server(m));
        assert_int_equal(memacct_add_region(m, R, CAP), 0);
        assert_int_equal(memacct_add_region(m, R, CAP), 0);
        assert_int_equal(memacct_add_region(m, R, 1), -EEXIST);
        assert_string_equal(memacct_last_error(m),
                            "region " R " is registered with another capacity; remove it first");
        /* "memory" is the daemon's to refuse: the library sends it. */
        assert_int_equal(memacct_add_region(m, "memory", 1), -EINVAL);
        assert_string_equal(memacct_last_error(m),
                            "'memory' is not a region name: [A-Za-z0-9._:/@+-], not \"memory\"");
        assert_int_equal(memacct_remove_region(m, MEMACCT_REGION_MEMORY), -EINVAL);
        assert_string_equal(memacct_last_error(m), "memory is built in");
        assert_int_equal(memacct_list_regions(m, &l), 0);
        assert_int_equal(memacct_regions_size(l), 2);
        assert_string_equal(memacct_regions_get(l, 0)->name, MEMACCT_REGION_MEMORY);
        r = memacct_regions_get(l, 1);
        assert_string_equal(r->name, R);
        assert_int_equal(r->capacity, CAP);
        assert_int_equal(r->current, 0);
        assert_int_equal(r->groups, 1);
        assert_null(memacct_regions_get(l, 2));
        assert_null(memacct_regions_free(l));
}

/* The arguments each call refuses itself on a bus handle, before anything reaches the daemon:
 * the region's figures after them are those before. */
static void regions_arguments(memacct *m) {
        memacct_limits limits = { .set = MEMACCT_LIMIT_MAX, .max = K };
        memacct_charge_result res;
        memacct_regions *l = NULL;
        const char *region = NULL;
        const char *inval = "invalid argument";

        assert_refused_here(m, memacct_add_region(m, NULL, CAP), inval);
        assert_refused_here(m, memacct_remove_region(m, NULL), inval);
        assert_refused_here(m, memacct_list_regions(m, NULL), inval);

        /* Flags a call does not take, and kept charges without a group, memory's included. */
        assert_refused_here(m, memacct_charge_region(m, "/rg/k", R, K, MEMACCT_IGNORE_LOW, &res), inval);
        assert_refused_here(m, memacct_charge_region(m, "/rg/k", NULL, K, MEMACCT_IGNORE_LOW, &res), inval);
        assert_refused_here(m, memacct_charge_region(m, NULL, R, K, MEMACCT_KEEP, &res),
                            "a kept charge needs a path");
        assert_refused_here(m, memacct_charge_region(m, NULL, MEMACCT_REGION_MEMORY, K, MEMACCT_KEEP, &res),
                            "a kept charge needs a path");
        assert_refused_here(m, memacct_uncharge_region(m, "/rg/k", R, K, MEMACCT_FORCE), inval);
        assert_refused_here(m, memacct_uncharge_region(m, "/rg/k", "", K, MEMACCT_FORCE), inval);
        assert_refused_here(m, memacct_uncharge_region(m, NULL, R, K, MEMACCT_KEEP),
                            "a kept uncharge needs a path");
        assert_refused_here(m, memacct_uncharge_region(m, NULL, NULL, K, MEMACCT_KEEP),
                            "a kept uncharge needs a path");

        assert_refused_here(m, memacct_set_region_limits(m, NULL, R, &limits), inval);
        assert_refused_here(m, memacct_set_region_limits(m, "/rg", R, NULL), inval);
        assert_refused_here(m, memacct_reset_region_peak(m, NULL, R), inval);
        assert_refused_here(m, memacct_transfer(m, NULL, "/rg", R, K), inval);
        assert_refused_here(m, memacct_transfer(m, "/rg/k", NULL, R, K), inval);
        assert_refused_here(m, memacct_evict_valuable(m, "/rg", NULL, R, 0), inval);
        assert_refused_here(m, memacct_evict_valuable(m, "/rg", "/rg/k", R, MEMACCT_KEEP), inval);
        assert_refused_here(m, memacct_subscribe_region(m, NULL, R), inval);
        assert_refused_here(m, memacct_event_region(m, NULL), inval);
        /* No event was returned on @m: the daemon's answer, not the library's. */
        assert_int_equal(memacct_event_region(m, &region), -ENODATA);
        assert_null(region);

        /* Nothing was charged, limited or registered. */
        assert_int_equal(memacct_list_regions(m, &l), 0);
        assert_int_equal(memacct_regions_size(l), 2);
        assert_string_equal(memacct_regions_get(l, 1)->name, R);
        assert_int_equal(memacct_regions_get(l, 1)->current, 0);
        assert_int_equal(memacct_regions_get(l, 1)->groups, 1);
        memacct_regions_free(l);
}

/* Kept and session charges, and the refusals of each kind. */
static void regions_charged(memacct *m, sd_bus *bus) {
        memacct_limits limits = {
                .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH | MEMACCT_LIMIT_LOW | MEMACCT_LIMIT_MIN,
                .max = 64 * K, .high = 48 * K, .low = 8 * K, .min = 4 * K,
        };
        memacct_charge_result res;

        assert_int_equal(memacct_set_region_limits(m, "/rg", R, &limits), 0);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryHigh", R), 48 * K);
        assert_int_equal(memacct_charge_region(m, "/rg/k", R, 16 * K, MEMACCT_KEEP, &res), 0);
        assert_int_equal(res.margin, MEMACCT_UNLIMITED);
        assert_int_equal(res.over_high, 0);
        /* The session: attached by its first charge, "" (NULL) its group after. */
        assert_int_equal(memacct_charge_region(m, "/rg/k", R, 8 * K, 0, &res), 0);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryCurrent", R), 24 * K);
        assert_int_equal(memacct_uncharge_region(m, NULL, R, 8 * K, 0), 0);
        assert_int_equal(memacct_uncharge_region(m, NULL, R, 1, 0), -ERANGE);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryCurrent", R), 16 * K);
        /* Holding nothing, the session leaves /rg/k, which can then be removed. */
        assert_int_equal(memacct_attach(m, "/"), 0);

        assert_int_equal(memacct_charge_region(m, "/rg/k", R, 1, MEMACCT_KEEP | MEMACCT_FORCE, &res),
                         -EOPNOTSUPP);
        assert_int_equal(memacct_charge_region(m, "/rg/k", R, 64 * K, MEMACCT_KEEP, &res), -EDQUOT);
        assert_string_equal(memacct_last_error(m), "/rg/k: limit exceeded (max of /rg in region " R ")");
        assert_string_equal(memacct_refused_path(m), "/rg");
        assert_int_equal(memacct_charge_region(m, "/cap", R, CAP, MEMACCT_KEEP, &res), -EDQUOT);
        assert_string_equal(memacct_last_error(m), "/cap: region " R " is at its capacity");
        assert_string_equal(memacct_refused_path(m), "/");
        assert_int_equal(memacct_charge_region(m, "/rg/k", "nope", 1, MEMACCT_KEEP, &res), -ENOENT);
        /* No region is memory's, and so are "" and "memory": memacct_charge() of the device stat
         * item (a ChargeRegion in memory would charge anon). */
        assert_int_equal(memacct_charge_region(m, "/rg/k", NULL, 4 * K, MEMACCT_KEEP, &res), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 4 * K);
        assert_int_equal(stat_exact("/rg/k", "device"), 4 * K);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryKept", R), 16 * K);
        assert_int_equal(memacct_charge_region(m, "/rg/k", "", 2 * K, MEMACCT_KEEP, &res), 0);
        assert_int_equal(memacct_charge_region(m, "/rg/k", MEMACCT_REGION_MEMORY, 2 * K, MEMACCT_KEEP, &res),
                         0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 8 * K);
        assert_int_equal(stat_exact("/rg/k", "device"), 8 * K);
        assert_int_equal(stat_exact("/rg/k", "anon"), 0);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryKept", R), 16 * K);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", MEMACCT_REGION_MEMORY, 4 * K, MEMACCT_KEEP),
                         0);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", NULL, 4 * K, MEMACCT_KEEP), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 0);
        assert_int_equal(stat_exact("/rg/k", "device"), 0);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", "", 1, MEMACCT_KEEP), -ERANGE);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", R, 32 * K, MEMACCT_KEEP), -ERANGE);
}

/* What memacct_get_group() and memacct_list_groups() read of the regions. */
static void regions_read(memacct *m, sd_bus *bus) {
        const memacct_region_info *ri;
        memacct_group_list *list = NULL;
        memacct_group_info *g;

        g = group_one_region(m, "/rg", &ri);
        assert_string_equal(ri->name, R);
        assert_int_equal(ri->capacity, CAP);
        assert_int_equal(ri->current, 16 * K);
        assert_int_equal(ri->peak, 24 * K);
        assert_int_equal(ri->max, 64 * K);
        assert_int_equal(ri->high, 48 * K);
        assert_int_equal(ri->low, 8 * K);
        assert_int_equal(ri->min, 4 * K);
        assert_int_equal(ri->effective_min, region_prop(bus, "/rg", "EffectiveDeviceMemoryMin", R));
        assert_int_equal(ri->effective_low, region_prop(bus, "/rg", "EffectiveDeviceMemoryLow", R));
        assert_int_equal(ri->failcnt, 1);
        assert_int_equal(ri->kept, 0);
        assert_events(ri->events, ri->n_events, 1, 1);
        assert_events(ri->events_local, ri->n_events_local, 1, 1);
        /* Memory's figures stay memory's. */
        assert_int_equal(g->current, 0);
        assert_int_equal(g->max, MEMACCT_UNLIMITED);
        memacct_group_info_free(g);

        g = group_one_region(m, "/rg/k", &ri);
        assert_int_equal(ri->kept, 16 * K);
        assert_int_equal(ri->max, MEMACCT_UNLIMITED);
        assert_int_equal(ri->high, MEMACCT_UNLIMITED);
        assert_int_equal(ri->min, 0);
        assert_int_equal(ri->failcnt, 0);
        assert_events(ri->events_local, ri->n_events_local, 0, 0);
        memacct_group_info_free(g);

        assert_int_equal(memacct_get_group(m, "/rg/none", NULL, 0, &g), 0);
        assert_int_equal(g->n_regions, 0);
        assert_null(g->regions);
        memacct_group_info_free(g);

        assert_int_equal(memacct_list_groups(m, "/rg", MEMACCT_RECURSIVE, &list), 0);
        assert_int_equal(memacct_group_list_size(list), 3);
        assert_string_equal(memacct_group_list_get(list, 1)->path, "/rg/k");
        assert_int_equal(memacct_group_list_get(list, 0)->n_regions, 1);
        assert_int_equal(memacct_group_list_get(list, 0)->regions[0].max, 64 * K);
        assert_int_equal(memacct_group_list_get(list, 1)->regions[0].kept, 16 * K);
        assert_int_equal(memacct_group_list_get(list, 2)->n_regions, 0);
        memacct_group_list_free(list);
}

/* ResetRegionPeak, Transfer and EvictValuable. */
static void regions_moved(memacct *m, sd_bus *bus) {
        memacct_limits min = { .set = MEMACCT_LIMIT_MIN | MEMACCT_LIMIT_LOW, .min = 12 * K, .low = 0 };
        memacct_limits low = { .set = MEMACCT_LIMIT_MIN | MEMACCT_LIMIT_LOW, .min = 0, .low = 12 * K };

        assert_int_equal(memacct_reset_region_peak(m, "/rg", R), 0);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryPeak", R), 16 * K);
        assert_int_equal(memacct_reset_region_peak(m, "/rg", "nope"), -ENOENT);

        assert_int_equal(memacct_transfer(m, "/rg/k", "/rg", R, 4 * K), 0);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryKept", R), 12 * K);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryKept", R), 4 * K);
        assert_int_equal(memacct_transfer(m, "/rg/k", "/rg", R, M), -EDQUOT);
        assert_string_equal(memacct_refused_path(m), "/rg");
        assert_int_equal(memacct_transfer(m, "/rg/k", "/rg", R, 20 * K), -ERANGE);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryKept", R), 12 * K);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryKept", R), 4 * K);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryCurrent", R), 16 * K);

        assert_int_equal(memacct_evict_valuable(m, NULL, "/rg/k", R, 0), MEMACCT_EVICT_YES);
        assert_int_equal(memacct_set_region_limits(m, "/rg/k", R, &min), 0);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", R, 0), MEMACCT_EVICT_NO);
        assert_int_equal(memacct_set_region_limits(m, "/rg/k", R, &low), 0);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", R, 0), MEMACCT_EVICT_HIT_LOW);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", R, MEMACCT_IGNORE_LOW), MEMACCT_EVICT_YES);
        assert_int_equal(memacct_evict_valuable(m, "/rg/k", "/rg", R, 0), MEMACCT_EVICT_NO);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/nope", R, 0), -ENOENT);
}

/* A region NULL, "" or "memory" is memory: each call is memory's, on memory's figures, and the
 * device region's stay as they were. */
static void regions_memory(memacct *m, sd_bus *bus) {
        memacct_limits high = { .set = MEMACCT_LIMIT_HIGH, .high = 32 * K };
        memacct_limits no_high = { .set = MEMACCT_LIMIT_HIGH, .high = MEMACCT_UNLIMITED };
        memacct_charge_result res;
        uint64_t peak;

        assert_int_equal(memacct_set_region_limits(m, "/rg", NULL, &high), 0);
        assert_int_equal(prop_u64(bus, "/rg", "MemoryHigh"), 32 * K);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryHigh", R), 48 * K);
        assert_int_equal(memacct_set_region_limits(m, "/rg", MEMACCT_REGION_MEMORY, &no_high), 0);
        assert_int_equal(prop_u64(bus, "/rg", "MemoryHigh"), MEMACCT_UNLIMITED);

        /* The peak: memory's reset, the region's kept. */
        assert_int_equal(memacct_charge_region(m, "/rg/k", MEMACCT_REGION_MEMORY, 8 * K, MEMACCT_KEEP, &res),
                         0);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", "", 4 * K, MEMACCT_KEEP), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 4 * K);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryPeak"), 8 * K);
        /* Above its 12K: a reset in the region would bring it down. */
        peak = region_prop(bus, "/rg/k", "DeviceMemoryPeak", R);
        assert_true(peak > 12 * K && peak != NOT_LISTED);
        assert_int_equal(memacct_reset_region_peak(m, "/rg/k", NULL), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryPeak"), 4 * K);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryPeak", R), peak);
        assert_int_equal(memacct_charge_region(m, "/rg/k", "", 4 * K, MEMACCT_KEEP, &res), 0);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", NULL, 4 * K, MEMACCT_KEEP), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryPeak"), 8 * K);
        assert_int_equal(memacct_reset_region_peak(m, "/rg/k", MEMACCT_REGION_MEMORY), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryPeak"), 4 * K);
        assert_int_equal(memacct_reset_region_peak(m, "/rg/k", ""), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryPeak"), 4 * K);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryPeak", R), peak);

        /* Transfers: memory's kept charge moves, the region's stays. In memory a transfer moves
         * anon (memacct_transfer()), and the region calls charge the device item: the kept bytes
         * become anon ones for it. */
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", NULL, 4 * K, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_charge(m, "/rg/k", 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &res), 0);
        assert_int_equal(memacct_transfer(m, "/rg/k", "/rg", NULL, 4 * K), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 0);
        assert_int_equal(prop_u64(bus, "/rg", "MemoryKept"), 4 * K);
        assert_int_equal(memacct_transfer(m, "/rg", "/rg/k", MEMACCT_REGION_MEMORY, 4 * K), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 4 * K);
        assert_int_equal(prop_u64(bus, "/rg", "MemoryKept"), 0);
        assert_int_equal(memacct_transfer(m, "/rg", "/rg/k", NULL, 4 * K), -ERANGE);
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryKept", R), 12 * K);
        assert_int_equal(region_prop(bus, "/rg", "DeviceMemoryKept", R), 4 * K);

        /* Eviction: in memory nothing protects /rg/k, in the region its low does. */
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", NULL, 0), MEMACCT_EVICT_YES);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", MEMACCT_REGION_MEMORY, 0),
                         MEMACCT_EVICT_YES);
        assert_int_equal(memacct_evict_valuable(m, "/rg", "/rg/k", R, 0), MEMACCT_EVICT_HIT_LOW);

        /* A session charge: memory's, in the attached group. */
        assert_int_equal(memacct_uncharge(m, "/rg/k", 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(prop_u64(bus, "/rg/k", "MemoryKept"), 0);
        assert_int_equal(memacct_attach(m, "/rg/k"), 0);
        assert_int_equal(memacct_charge_region(m, NULL, MEMACCT_REGION_MEMORY, 2 * K, 0, &res), 0);
        assert_true(current_becomes(bus, "/rg/k", 2 * K));
        assert_int_equal(region_prop(bus, "/rg/k", "DeviceMemoryCurrent", R), 12 * K);
        assert_int_equal(memacct_uncharge_region(m, NULL, NULL, 2 * K, 0), 0);
        assert_true(current_becomes(bus, "/rg/k", 0));
        assert_int_equal(memacct_attach(m, "/"), 0);
}

void test_regions_over_the_bus_handle(void **state) {
        sd_bus *bus = sdbus_open();
        memacct *m = bus_open();
        memacct_regions *l = NULL;

        (void) state;
        regions_null_handle();
        regions_registered(m);
        create_bus(bus, "/rg", 0);
        create_bus(bus, "/rg/k", 0);
        create_bus(bus, "/rg/none", 0);
        create_bus(bus, "/cap", 0);
        regions_arguments(m);
        regions_charged(m, bus);
        regions_read(m, bus);
        regions_moved(m, bus);
        regions_memory(m, bus);

        assert_int_equal(memacct_remove_region(m, R), -EBUSY);
        assert_int_equal(memacct_uncharge_region(m, "/rg/k", R, 12 * K, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_uncharge_region(m, "/rg", R, 4 * K, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_remove_region(m, R), 0);
        assert_int_equal(memacct_remove_region(m, R), -ENOENT);
        assert_int_equal(memacct_list_regions(m, &l), 0);
        assert_int_equal(memacct_regions_size(l), 1);
        memacct_regions_free(l);
        remove_bus(bus, "/rg/k");
        remove_bus(bus, "/rg/none");
        remove_bus(bus, "/rg");
        remove_bus(bus, "/cap");
        memacct_close(m);
        sd_bus_flush_close_unref(bus);
}

/* ---- events by region ---- */

#define E "gpuE"

/* The next event of @m is @name @count on @path in @region. */
static void assert_next(memacct *m, const char *path, const char *name, uint64_t count, const char *region) {
        memacct_event ev;
        const char *got = NULL;

        assert_int_equal(memacct_next_event(m, WAIT_MSEC, &ev), 1);
        assert_int_equal(memacct_event_region(m, &got), 0);
        if (strcmp(ev.path, path) != 0 || strcmp(ev.name, name) != 0 || ev.count != count ||
            strcmp(got, region) != 0)
                fail_msg("event %s %s %llu in %s, want %s %s %llu in %s", ev.path, ev.name,
                         (unsigned long long) ev.count, got, path, name, (unsigned long long) count, region);
}

void test_region_events_over_the_bus_handle(void **state) {
        sd_bus *bus = sdbus_open();
        memacct *dev = bus_open(), *mem = bus_open(), *memr = bus_open(), *all = bus_open();
        uint32_t pid = 0, uid = 0;
        const char *region;
        memacct_event ev;
        Outcome o;

        (void) state;
        assert_int_equal(memacct_add_region(dev, E, MEMACCT_UNLIMITED), 0);
        create_bus(bus, "/ev", 4 * K);
        bcall(bus, &o, NULL, "SetRegionLimits", "ssa{st}", "/ev", E, 1, "max", 4 * K);
        assert_ok("SetRegionLimits /ev", &o);

        assert_int_equal(memacct_event_region(dev, &region), -ENODATA);
        assert_int_equal(memacct_subscribe_region(dev, "/ev", E), 0);
        assert_int_equal(memacct_subscribe_region(dev, "/ev", "nope"), -ENOENT);
        assert_string_equal(memacct_last_error(dev), "no region 'nope' (memacctctl region list)");
        assert_int_equal(memacct_subscribe_region(dev, "/nope", E), -ENOENT);
        assert_int_equal(memacct_subscribe(mem, "/ev"), 0);
        assert_int_equal(memacct_subscribe_region(memr, "/ev", MEMACCT_REGION_MEMORY), 0);
        assert_int_equal(memacct_subscribe_region(all, "/", "*"), 0);

        /* Memory's, the region's, memory's again: one queue of signals, in order. */
        bcall(bus, &o, NULL, "Charge", "stsb", "/ev", 8 * K, "", 1);
        assert_string_equal(o.name, "org.memacct1.Error.LimitExceeded");
        bcall(bus, &o, NULL, "ChargeRegion", "sstb", "/ev", E, 8 * K, 1);
        assert_string_equal(o.name, "org.memacct1.Error.LimitExceeded");
        bcall(bus, &o, NULL, "Charge", "stsb", "/ev", 8 * K, "", 1);
        assert_string_equal(o.name, "org.memacct1.Error.LimitExceeded");

        /* The region's subscriber: the region's events alone, memory's
         * (before them in the queue) never. */
        assert_next(dev, "/ev", "max", 1, E);
        assert_int_equal(memacct_event_requester(dev, &pid, &uid), 0);
        assert_int_equal(pid, (uint32_t) getpid());
        assert_int_equal(uid, (uint32_t) geteuid());
        assert_next(dev, "/ev", "oom", 1, E);
        assert_int_equal(memacct_next_event(dev, 200, &ev), 0);

        /* Memory's: its own, the second ones counted 2, not the region's 1. */
        assert_next(mem, "/ev", "max", 1, MEMACCT_REGION_MEMORY);
        assert_next(mem, "/ev", "oom", 1, MEMACCT_REGION_MEMORY);
        assert_next(mem, "/ev", "max", 2, MEMACCT_REGION_MEMORY);
        assert_next(mem, "/ev", "oom", 2, MEMACCT_REGION_MEMORY);
        /* Subscribed to "memory" by name: the same, and the region's never. */
        assert_next(memr, "/ev", "max", 1, MEMACCT_REGION_MEMORY);
        assert_next(memr, "/ev", "oom", 1, MEMACCT_REGION_MEMORY);
        assert_next(memr, "/ev", "max", 2, MEMACCT_REGION_MEMORY);
        assert_next(memr, "/ev", "oom", 2, MEMACCT_REGION_MEMORY);
        assert_int_equal(memacct_next_event(memr, 200, &ev), 0);

        /* Every region's, in order, each with its own. */
        assert_next(all, "/ev", "max", 1, MEMACCT_REGION_MEMORY);
        assert_next(all, "/ev", "oom", 1, MEMACCT_REGION_MEMORY);
        assert_next(all, "/ev", "max", 1, E);
        assert_next(all, "/ev", "oom", 1, E);
        assert_next(all, "/ev", "max", 2, MEMACCT_REGION_MEMORY);
        assert_next(all, "/ev", "oom", 2, MEMACCT_REGION_MEMORY);

        memacct_close(dev);
        memacct_close(mem);
        memacct_close(memr);
        memacct_close(all);
        remove_bus(bus, "/ev");
        bcall(bus, &o, NULL, "RemoveRegion", "s", E);
        assert_ok("RemoveRegion " E, &o);
        sd_bus_flush_close_unref(bus);
}
