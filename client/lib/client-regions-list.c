/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions as libmemacct hands them out (client-regions.h):
 * the list of memacct_list_regions(), read with memacct_regions_size()
 * and memacct_regions_get(), and the per-group regions of a
 * memacct_group_info, freed with the group. Each string is the list's or
 * the group's own copy, so nothing outlives a reply or depends on the
 * transport that filled it.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-regions.h"
#include "macro.h"

memacct_regions *client_region_list_new(void) {
        return calloc(1, sizeof(memacct_regions));
}

int client_region_list_append(memacct_regions *l, const char *name, uint64_t capacity, uint64_t current,
                              uint64_t peak, uint32_t groups) {
        char *copy;

        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 8;
                memacct_region *v = realloc(l->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->v = v;
                l->cap = cap;
        }
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        l->v[l->n++] = (memacct_region) {
                .name = copy,
                .capacity = capacity,
                .current = current,
                .peak = peak,
                .groups = groups,
        };
        return 0;
}

_public_ size_t memacct_regions_size(const memacct_regions *l) {
        return l ? l->n : 0;
}

_public_ const memacct_region *memacct_regions_get(const memacct_regions *l, size_t i) {
        return l && i < l->n ? &l->v[i] : NULL;
}

_public_ memacct_regions *memacct_regions_free(memacct_regions *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                free((char *) l->v[i].name);
        free(l->v);
        free(l);
        return NULL;
}

static void counters_free(const memacct_counter *c, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) c[i].name);
        free((memacct_counter *) c);
}

void client_region_infos_free(const memacct_region_info *v, size_t n) {
        for (size_t i = 0; v && i < n; i++) {
                free((char *) v[i].name);
                counters_free(v[i].events, v[i].n_events);
                counters_free(v[i].events_local, v[i].n_events_local);
        }
        free((memacct_region_info *) v);
}
