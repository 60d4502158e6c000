/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl's output of device regions: show's dmem.* lines, in the
 * kernel's file format (kernel/cgroup/dmem.c, dmemcg_limit_show(): one
 * "REGION VALUE" line per region, "max" for no limit), with memory's
 * "KEY: first line, then tab-indented lines" layout of memory.events;
 * the events in the nested-keyed form proposed for dmem.events
 * ("REGION low=N high=N max=N oom=N"); and the same as JSON.
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "output.h"
#include "regions.h"

/* A region's byte counts, in the order show prints them. */
static const struct {
        const char *key;
        size_t offset;
        bool limit;     /* MEMACCT_UNLIMITED is "max" */
        bool root_only; /* dmem.capacity: the kernel shows it on the root alone */
} region_values[] = {
        { "capacity", offsetof(memacct_region_info, capacity), true, true },
        { "current", offsetof(memacct_region_info, current), false, false },
        { "kept", offsetof(memacct_region_info, kept), false, false },
        { "peak", offsetof(memacct_region_info, peak), false, false },
        { "max", offsetof(memacct_region_info, max), true, false },
        { "high", offsetof(memacct_region_info, high), true, false },
        { "low", offsetof(memacct_region_info, low), true, false },
        { "min", offsetof(memacct_region_info, min), true, false },
        { "effective_min", offsetof(memacct_region_info, effective_min), true, false },
        { "effective_low", offsetof(memacct_region_info, effective_low), true, false },
        { "failcnt", offsetof(memacct_region_info, failcnt), false, false },
};

static uint64_t region_value(const memacct_region_info *r, size_t i) {
        return *(const uint64_t *) ((const char *) r + region_values[i].offset);
}

static const char *value_text(char buf[static 24], uint64_t v, bool limit) {
        if (limit && v == MEMACCT_UNLIMITED)
                return "max";
        snprintf(buf, 24, "%" PRIu64, v);
        return buf;
}

static bool shown(const memacct_region_info *r, const char *only) {
        return !only || strcmp(r->name, only) == 0;
}

/* "dmem.events: REGION low=0 high=0 max=2 oom=1", one line per region. */
static void print_events(const memacct_group_info *g, const char *only, bool local) {
        bool first = true;

        printf("dmem.%s:", local ? "events.local" : "events");
        for (size_t i = 0; i < g->n_regions; i++) {
                const memacct_region_info *r = &g->regions[i];
                const memacct_counter *c = local ? r->events_local : r->events;
                size_t n = local ? r->n_events_local : r->n_events;

                if (!shown(r, only))
                        continue;
                printf("%s%s", first ? " " : "\t", r->name);
                for (size_t k = 0; k < n; k++)
                        printf(" %s=%" PRIu64, c[k].name, c[k].value);
                putchar('\n');
                first = false;
        }
        if (first)
                putchar('\n');
}

void print_group_regions_text(const memacct_group_info *g, const char *only) {
        bool root = strcmp(g->path, "/") == 0;

        if (g->n_regions == 0 && !only)
                return;
        for (size_t i = 0; i < ELEMENTSOF(region_values); i++) {
                bool first = true;

                if (region_values[i].root_only && !root)
                        continue;
                printf("dmem.%s:", region_values[i].key);
                for (size_t k = 0; k < g->n_regions; k++) {
                        const memacct_region_info *r = &g->regions[k];
                        char buf[24];

                        if (!shown(r, only))
                                continue;
                        printf("%s%s %s\n", first ? " " : "\t", r->name,
                               value_text(buf, region_value(r, i), region_values[i].limit));
                        first = false;
                }
                if (first)
                        putchar('\n');
        }
        print_events(g, only, false);
        print_events(g, only, true);
}

static json_object *json_counters(const memacct_counter *c, size_t n) {
        json_object *o = json_object_new_object();

        for (size_t k = 0; o && k < n; k++)
                json_object_object_add(o, c[k].name, json_object_new_uint64(c[k].value));
        return o;
}

json_object *json_region(const memacct_region_info *r) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "name", json_object_new_string(r->name));
        for (size_t i = 0; i < ELEMENTSOF(region_values); i++) {
                uint64_t v = region_value(r, i);

                json_object_object_add(o, region_values[i].key,
                                       region_values[i].limit && v == MEMACCT_UNLIMITED
                                               ? json_object_new_string("max")
                                               : json_object_new_uint64(v));
        }
        json_object_object_add(o, "events", json_counters(r->events, r->n_events));
        json_object_object_add(o, "events_local", json_counters(r->events_local, r->n_events_local));
        return o;
}

json_object *json_group_regions(const memacct_group_info *g, const char *only) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < g->n_regions; i++)
                if (shown(&g->regions[i], only))
                        json_object_array_add(a, json_region(&g->regions[i]));
        return a;
}

int print_group_region(const memacct_group_info *g, const char *region, bool json) {
        bool found = false;

        for (size_t i = 0; i < g->n_regions; i++)
                found = found || strcmp(g->regions[i].name, region) == 0;
        if (json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (o) {
                        json_object_object_add(o, "path", json_object_new_string(g->path));
                        json_object_object_add(o, "regions", json_group_regions(g, region));
                }
                return print_json_object(o);
        }
        printf("%s:\n", g->path);
        /* A group with no counters in the region has nothing there. */
        if (!found)
                printf("dmem: no counters in %s\n", region);
        else
                print_group_regions_text(g, region);
        return 0;
}

int print_region_event(const memacct_event *ev, const char *region, uint32_t pid, uint32_t uid, bool json) {
        memacct_event e = *ev;
        char name[160];

        if (json)
                return print_event_json_region(ev, region ? region : MEMACCT_REGION_MEMORY, pid, uid);
        /* In text, the event's name says its region, as dmem.events would. */
        snprintf(name, sizeof(name), "%s:%s", region ? region : MEMACCT_REGION_MEMORY, ev->name);
        e.name = name;
        return print_event(&e, pid, uid, false);
}
