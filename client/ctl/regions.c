/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions from the command line (regions.h). As every
 * verb, each checks all its arguments before it connects: a usage error
 * is exit status 2 with or without a daemon, and a bad argument never
 * leaves half a change behind. A set that names several regions sends
 * one request per region, memory's first: each is all or nothing, as a
 * dmem write of several lines is line by line in the kernel.
 */

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmem-limit.h"
#include "limit-names.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "parse-size.h"
#include "gpu-probe.h"
#include "regions.h"

/* At most this many regions one set names: the daemon has 31 device regions. */
#define SETTINGS_MAX 32

typedef struct RegionSetting {
        DmemLimit value; /* .region names the region */
        unsigned bit;    /* MEMACCT_LIMIT_* */
} RegionSetting;

struct RegionSettings {
        size_t n;
        RegionSetting v[SETTINGS_MAX * 4];
};

bool region_is_memory(const char *region) {
        return !region || !*region || strcmp(region, MEMACCT_REGION_MEMORY) == 0;
}

static int settings_add(RegionSettings **rs, const DmemLimit *value, unsigned bit) {
        if (!*rs) {
                *rs = calloc(1, sizeof(**rs));
                if (!*rs)
                        return usage_error("out of memory");
        }
        if ((*rs)->n == ELEMENTSOF((*rs)->v))
                return usage_error("too many region settings in one set");
        (*rs)->v[(*rs)->n++] = (RegionSetting) { .value = *value, .bit = bit };
        return 0;
}

/* dmem.KEY="REGION VALUE[\nREGION VALUE...]": the kernel's file grammar. */
static int parse_dmem(const char *s, const char *eq, RegionSettings **rs) {
        DmemLimit l[SETTINGS_MAX];
        unsigned bit = limit_by_name(s + 5, (size_t) (eq - s - 5)), line = 0;
        int n, r;

        if (bit == 0)
                return usage_error("unknown key in '%s' (dmem keys: dmem.max dmem.high dmem.low dmem.min)", s);
        n = dmem_limit_parse(eq + 1, l, ELEMENTSOF(l), &line);
        if (n == -ENAMETOOLONG)
                return usage_error("a region name is at most %d bytes in '%s'", DMEM_LIMIT_REGION_MAX, s);
        if (n == -E2BIG)
                return usage_error("too many regions in '%s'", s);
        if (n < 0)
                return usage_error("invalid line %u in '%s': expected \"REGION SIZE\", \"REGION max\" or "
                                   "\"REGION N%%\"", line, s);
        if (n == 0)
                return usage_error("'%s' names no region", s);
        for (int i = 0; i < n; i++) {
                if (region_is_memory(l[i].region))
                        return usage_error("'%s': memory's limits are max= high= low= min=", s);
                r = settings_add(rs, &l[i], bit);
                if (r != 0)
                        return r;
        }
        return 1;
}

int region_setting_parse(const char *s, RegionSettings **rs) {
        const char *eq = strchr(s, '='), *dot;
        DmemLimit l = {};
        unsigned bit;
        int r;

        if (!eq)
                return 0;
        if ((size_t) (eq - s) > 5 && strncmp(s, "dmem.", 5) == 0)
                return parse_dmem(s, eq, rs);
        /* REGION.KEY=VALUE: names have dots too, the key is after the last. */
        dot = memrchr(s, '.', (size_t) (eq - s));
        if (!dot || dot == s)
                return 0;
        bit = limit_by_name(dot + 1, (size_t) (eq - dot - 1));
        if (bit == 0)
                return usage_error("unknown key in '%s' (keys: REGION.max REGION.high REGION.low REGION.min)", s);
        if ((size_t) (dot - s) > DMEM_LIMIT_REGION_MAX)
                return usage_error("a region name is at most %d bytes in '%s'", DMEM_LIMIT_REGION_MAX, s);
        memcpy(l.region, s, (size_t) (dot - s));
        if (region_is_memory(l.region))
                return usage_error("'%s': memory's limits are max= high= low= min=", s);
        if (dmem_value_parse(eq + 1, &l) < 0)
                return usage_error("invalid value in '%s': a size, max or N%%", s);
        r = settings_add(rs, &l, bit);
        return r != 0 ? r : 1;
}

RegionSettings *region_settings_free(RegionSettings *rs) {
        free(rs);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_regions *, memacct_regions_free);

/* The capacity of @name among @list; -ENOENT when it is not registered. */
static int capacity_of(const memacct_regions *list, const char *name, uint64_t *ret) {
        for (size_t i = 0; i < memacct_regions_size(list); i++) {
                const memacct_region *r = memacct_regions_get(list, i);

                if (strcmp(r->name, name) == 0) {
                        *ret = r->capacity;
                        return 0;
                }
        }
        return -ENOENT;
}

int region_settings_apply(memacct *m, const char *path, const RegionSettings *rs) {
        _cleanup_(memacct_regions_freep) memacct_regions *list = NULL;
        bool done[ELEMENTSOF(rs->v)] = {};
        int r;

        for (size_t i = 0; i < rs->n; i++)
                if (rs->v[i].value.kind == DMEM_VALUE_PERCENT && !list) {
                        r = memacct_list_regions(m, &list);
                        if (r < 0)
                                return fail(m, "set", path, r);
                }
        /* One request per region, with every key set for it. */
        for (size_t i = 0; i < rs->n; i++) {
                const char *name = rs->v[i].value.region;
                memacct_limits l = {};

                if (done[i])
                        continue;
                for (size_t k = i; k < rs->n; k++) {
                        uint64_t capacity = UINT64_MAX, v;

                        if (strcmp(rs->v[k].value.region, name) != 0)
                                continue;
                        done[k] = true;
                        if (list && capacity_of(list, name, &capacity) < 0) {
                                fprintf(stderr, "memacctctl: set refused: %s: no region '%s' (memacctctl region "
                                                "list)\n", path, name);
                                return EXIT_FAILURE;
                        }
                        if (dmem_limit_bytes(&rs->v[k].value, capacity, &v) < 0) {
                                fprintf(stderr, "memacctctl: set refused: %s: region %s has no capacity: a "
                                                "share of it means nothing\n", path, name);
                                return EXIT_FAILURE;
                        }
                        limits_set(&l, rs->v[k].bit, v);
                }
                r = memacct_set_region_limits(m, path, name, &l);
                if (r < 0)
                        return fail(m, "set", path, r);
        }
        return 0;
}

/* ---- region add | remove | list ---- */

static int print_regions(const memacct_regions *list) {
        size_t n = memacct_regions_size(list);
        json_object *a;

        if (arg.json) {
                a = json_object_new_array();
                for (size_t i = 0; a && i < n; i++) {
                        const memacct_region *r = memacct_regions_get(list, i);
                        json_object *o = json_object_new_object();

                        if (!o)
                                break;
                        json_object_object_add(o, "name", json_object_new_string(r->name));
                        json_object_object_add(o, "capacity", r->capacity == MEMACCT_UNLIMITED
                                                                      ? json_object_new_string("max")
                                                                      : json_object_new_uint64(r->capacity));
                        json_object_object_add(o, "current", json_object_new_uint64(r->current));
                        json_object_object_add(o, "peak", json_object_new_uint64(r->peak));
                        json_object_object_add(o, "groups", json_object_new_uint64(r->groups));
                        json_object_array_add(a, o);
                }
                if (!a) {
                        fputs("memacctctl: out of memory\n", stderr);
                        return EXIT_FAILURE;
                }
                puts(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(a);
                return 0;
        }
        printf("%-32s %14s %14s %14s %7s\n", "REGION", "CAPACITY", "CURRENT", "PEAK", "GROUPS");
        for (size_t i = 0; i < n; i++) {
                const memacct_region *r = memacct_regions_get(list, i);
                char cap[24], cur[24], peak[24];

                if (r->capacity == MEMACCT_UNLIMITED)
                        snprintf(cap, sizeof(cap), "max");
                else
                        snprintf(cap, sizeof(cap), "%" PRIu64, r->capacity);
                snprintf(cur, sizeof(cur), "%" PRIu64, r->current);
                snprintf(peak, sizeof(peak), "%" PRIu64, r->peak);
                printf("%-32s %14s %14s %14s %7" PRIu32 "\n", r->name, cap, cur, peak, r->groups);
        }
        return 0;
}

int region_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret)) {
        _cleanup_(memacct_regions_freep) memacct_regions *list = NULL;
        uint64_t capacity = MEMACCT_UNLIMITED;
        const char *sub = argc > 1 ? argv[1] : "";
        int r;

        if (strcmp(sub, "list") == 0) {
                if (argc != 2)
                        return usage_error("region list: too many arguments");
        } else if (strcmp(sub, "remove") == 0) {
                if (argc != 3)
                        return usage_error("region remove NAME");
        } else if (strcmp(sub, "add") == 0) {
                if (argc < 3 || argc > 4)
                        return usage_error("region add NAME [capacity=SIZE]");
                if (argc == 4 && (strncmp(argv[3], "capacity=", 9) != 0 || parse_size(argv[3] + 9, &capacity) < 0))
                        return usage_error("region add: expected capacity=SIZE or capacity=max, got '%s'", argv[3]);
        } else if (strcmp(sub, "probe") == 0) {
                if (argc != 2)
                        return usage_error("region probe: too many arguments");
                return gpu_probe(mp, connect);
        } else
                return usage_error("region: expected add, remove, list or probe");
        r = connect(mp);
        if (r != 0)
                return r;
        if (strcmp(sub, "list") == 0) {
                r = memacct_list_regions(*mp, &list);
                return r < 0 ? fail(*mp, "region list", "", r) : print_regions(list);
        }
        if (strcmp(sub, "remove") == 0)
                r = memacct_remove_region(*mp, argv[2]);
        else
                r = memacct_add_region(*mp, argv[2], capacity);
        return r < 0 ? fail(*mp, strcmp(sub, "add") == 0 ? "region add" : "region remove", argv[2], r) : 0;
}

/* ---- transfer, evict-valuable ---- */

int transfer_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret)) {
        uint64_t bytes;
        int r;

        if (argc != 4)
                return usage_error("transfer FROM TO SIZE [--region REGION]");
        if (parse_size(argv[3], &bytes) < 0 || bytes == MEMACCT_UNLIMITED)
                return usage_error("transfer: invalid size '%s'", argv[3]);
        r = connect(mp);
        if (r != 0)
                return r;
        r = memacct_transfer(*mp, argv[1], argv[2], arg.region, bytes);
        return r < 0 ? fail(*mp, "transfer", argv[2], r) : 0;
}

int evict_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret)) {
        static const char *const answers[] = {
                [MEMACCT_EVICT_NO] = "no",
                [MEMACCT_EVICT_YES] = "yes",
                [MEMACCT_EVICT_HIT_LOW] = "hit_low",
        };
        int r;

        if (argc != 3)
                return usage_error("evict-valuable LIMIT CANDIDATE [--region REGION] [--ignore-low]");
        r = connect(mp);
        if (r != 0)
                return r;
        r = memacct_evict_valuable(*mp, argv[1], argv[2], arg.region, arg.ignore_low ? MEMACCT_IGNORE_LOW : 0);
        if (r < 0)
                return fail(*mp, "evict-valuable", argv[2], r);
        if (r >= (int) ELEMENTSOF(answers))
                return fail(*mp, "evict-valuable", argv[2], -EPROTO);
        if (arg.json)
                printf("{\"answer\":\"%s\"}\n", answers[r]);
        else
                puts(answers[r]);
        /* A script asks with the status as test(1) does: yes is 0. */
        return r == MEMACCT_EVICT_YES ? 0 : 1;
}

/* ---- a group in one region ---- */

void region_view(const memacct_group_info *g, const char *region, memacct_group_info *ret,
                 memacct_counter scratch[8]) {
        static const char *const names[] = { "low", "high", "max", "oom" };
        const memacct_region_info *ri = NULL;

        *ret = *g;
        if (region_is_memory(region))
                return;
        for (size_t i = 0; i < g->n_regions; i++)
                if (strcmp(g->regions[i].name, region) == 0)
                        ri = &g->regions[i];
        ret->current = ri ? ri->current : 0;
        ret->peak = ri ? ri->peak : 0;
        ret->max = ri ? ri->max : MEMACCT_UNLIMITED;
        ret->high = ri ? ri->high : MEMACCT_UNLIMITED;
        ret->low = ri ? ri->low : 0;
        ret->min = ri ? ri->min : 0;
        ret->effective_min = ri ? ri->effective_min : 0;
        ret->effective_low = ri ? ri->effective_low : 0;
        ret->failcnt = ri ? ri->failcnt : 0;
        ret->kept = ri ? ri->kept : 0;
        ret->session = 0; /* sessions' holdings are not told apart per region */
        ret->kernel_current = MEMACCT_NO_KERNEL_CURRENT;
        ret->stat = NULL;
        ret->n_stat = 0;
        if (ri) {
                ret->events = ri->events;
                ret->n_events = ri->n_events;
                ret->events_local = ri->events_local;
                ret->n_events_local = ri->n_events_local;
                return;
        }
        for (size_t i = 0; i < 4; i++) {
                scratch[i] = (memacct_counter) { .name = names[i] };
                scratch[4 + i] = (memacct_counter) { .name = names[i] };
        }
        ret->events = scratch;
        ret->n_events = 4;
        ret->events_local = scratch + 4;
        ret->n_events_local = 4;
}
