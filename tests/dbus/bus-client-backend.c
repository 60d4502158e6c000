/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus backend's region entries through the handle's table
 * (bus-client-backend.h). The one file of the tests that sees the
 * handle's insides (client.h): the rest speak the public header only.
 */

#include "bus-client-backend.h"
#include "client.h"

int backend_is_bus(memacct *m) {
        const BusOps *b = m->bus;

        return b && b->add_region && b->remove_region && b->list_regions && b->charge_region &&
               b->uncharge_region && b->set_region_limits && b->reset_region_peak && b->transfer &&
               b->evict_valuable && b->subscribe_region && b->event_region;
}

int backend_add_region(memacct *m, const char *name, uint64_t capacity) {
        return m->bus->add_region(m, name, capacity);
}

int backend_remove_region(memacct *m, const char *name) {
        return m->bus->remove_region(m, name);
}

int backend_list_regions(memacct *m, memacct_regions **ret) {
        return m->bus->list_regions(m, ret);
}

int backend_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                          memacct_charge_result *ret) {
        return m->bus->charge_region(m, path, region, bytes, flags, ret);
}

int backend_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes,
                            unsigned flags) {
        return m->bus->uncharge_region(m, path, region, bytes, flags);
}

int backend_set_region_limits(memacct *m, const char *path, const char *region,
                              const memacct_limits *limits) {
        return m->bus->set_region_limits(m, path, region, limits);
}

int backend_reset_region_peak(memacct *m, const char *path, const char *region) {
        return m->bus->reset_region_peak(m, path, region);
}

int backend_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes) {
        return m->bus->transfer(m, from, to, region, bytes);
}

int backend_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                           unsigned flags) {
        return m->bus->evict_valuable(m, limit, candidate, region, flags);
}

int backend_subscribe_region(memacct *m, const char *path, const char *region) {
        return m->bus->subscribe_region(m, path, region);
}

int backend_event_region(memacct *m, const char **ret) {
        return m->bus->event_region(m, ret);
}
