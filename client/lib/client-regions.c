/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions on the socket (memacct.h, "device memory
 * regions"): registering, removing and listing regions, charges, limits
 * and peaks in a region, transfers, the eviction question, subscriptions
 * to a region's events and the region of the last event. One request,
 * one reply each, as client-groups.c; a bus handle goes to its table once
 * the arguments are checked. "memory" (or NULL) is the built-in region:
 * the calls on it are the plain ones, which any daemon answers.
 *
 * The session's charges in a device region are noted per region as they
 * succeed, as the stock notes memory's (client-charge.c): a reconnection
 * charges them again on the new session. Invariant: region_held holds
 * one entry per region with bytes held, each region name a copy; it is
 * read and written under the handle's lock.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-call.h"
#include "client-error.h"
#include "client-events.h"
#include "client-reconnect.h"
#include "client-regions.h"
#include "macro.h"

bool client_region_is_memory(const char *region) {
        return !region || !*region || strcmp(region, MEMACCT_REGION_MEMORY) == 0;
}

_public_ int memacct_add_region(memacct *m, const char *name, uint64_t capacity) {
        Memacct__V1__AddRegion add = MEMACCT__V1__ADD_REGION__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !name)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->add_region(m, name, capacity);
        add.name = (char *) name;
        add.has_capacity = true;
        add.capacity = capacity;
        req.op_case = MEMACCT__V1__REQUEST__OP_ADD_REGION;
        req.add_region = &add;
        /* Repeatable: the same region again is a success. */
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_remove_region(memacct *m, const char *name) {
        Memacct__V1__RemoveRegion rm = MEMACCT__V1__REMOVE_REGION__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !name)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->remove_region(m, name);
        rm.name = (char *) name;
        req.op_case = MEMACCT__V1__REQUEST__OP_REMOVE_REGION;
        req.remove_region = &rm;
        /* Not repeatable: once applied, a second one is -ENOENT. */
        return client_call(m, &req, false, NULL);
}

_public_ int memacct_list_regions(memacct *m, memacct_regions **ret) {
        Memacct__V1__ListRegions list = MEMACCT__V1__LIST_REGIONS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        const Memacct__V1__RegionList *rl;
        Response *resp = NULL;
        memacct_regions *l;
        int r = 0;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->list_regions(m, ret);
        req.op_case = MEMACCT__V1__REQUEST__OP_LIST_REGIONS;
        req.list_regions = &list;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        l = client_region_list_new();
        rl = resp->result_case == MEMACCT__V1__RESPONSE__RESULT_REGIONS ? resp->regions : NULL;
        if (!l)
                r = -ENOMEM;
        for (size_t i = 0; rl && r >= 0 && i < rl->n_regions; i++) {
                const Memacct__V1__Region *src = rl->regions[i];

                r = client_region_list_append(l, src->name ? src->name : "",
                                              src->has_capacity ? src->capacity : MEMACCT_UNLIMITED, src->current,
                                              src->peak, src->groups);
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        if (r < 0) {
                memacct_regions_free(l);
                return client_error(m, r, NULL, NULL);
        }
        *ret = l;
        return 0;
}

/* The entry of @region in what the session holds, created with @create; NULL when none (or no memory). */
static ClientRegionHeld *region_held_find(memacct *m, const char *region, bool create) {
        ClientRegionHeld *v;
        char *copy;

        for (size_t i = 0; i < m->n_region_held; i++)
                if (strcmp(m->region_held[i].region, region) == 0)
                        return &m->region_held[i];
        if (!create)
                return NULL;
        copy = strdup(region);
        v = copy ? realloc(m->region_held, (m->n_region_held + 1) * sizeof(*v)) : NULL;
        if (!v) {
                free(copy);
                return NULL;
        }
        m->region_held = v;
        v[m->n_region_held] = (ClientRegionHeld) { .region = copy };
        return &v[m->n_region_held++];
}

int client_region_held_add(memacct *m, const char *region, uint64_t bytes, bool charged) {
        ClientRegionHeld *h = region_held_find(m, region, charged);

        if (!h)
                return charged ? -ENOMEM : 0;
        /* An uncharge the daemon took never exceeds what the session held. */
        h->bytes = charged ? h->bytes + bytes : h->bytes - MIN(bytes, h->bytes);
        return 0;
}

int client_region_replay_locked(memacct *m, int *ret_replay_r, uint64_t *ret_replayed) {
        for (size_t i = 0; i < m->n_region_held; i++) {
                ClientRegionHeld *h = &m->region_held[i];
                Memacct__V1__Charge charge = MEMACCT__V1__CHARGE__INIT;
                Request req = MEMACCT__V1__REQUEST__INIT;
                int r;

                if (h->bytes == 0)
                        continue;
                charge.has_bytes = true;
                charge.bytes = h->bytes;
                charge.region = h->region;
                /* Forced: it was admitted once and the caller uses it. */
                charge.has_force = charge.force = true;
                req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
                req.charge = &charge;
                r = client_call_locked(m, &req, -1, NULL);
                if (r == -EPERM) {
                        charge.has_force = charge.force = false;
                        r = client_call_locked(m, &req, -1, NULL);
                }
                if (r < 0 && m->conn.fd < 0)
                        return r;
                if (r < 0) {
                        /* Not held any more (the region may be gone): forget it, or uncharges would fail. */
                        h->bytes = 0;
                        if (*ret_replay_r == 0)
                                *ret_replay_r = r;
                        continue;
                }
                *ret_replayed += charge.bytes;
        }
        return 0;
}

void client_region_held_done(memacct *m) {
        for (size_t i = 0; i < m->n_region_held; i++)
                free(m->region_held[i].region);
        m->region_held = mfree(m->region_held);
        m->n_region_held = 0;
}

/* A Charge (@charge) or an Uncharge of @bytes in the device region @region, sent. */
static int region_charge_call(memacct *m, bool charge, const char *path, const char *region, uint64_t bytes,
                              unsigned flags, memacct_charge_result *ret) {
        bool session = !path && !(flags & MEMACCT_KEEP);
        ChargeRequest cr;
        Response *resp = NULL;
        Request *req;
        int r;

        /* MEMACCT_STAT_DEVICE stands for no stat item: a region has none. */
        req = client_charge_request(&cr, charge, path, bytes, MEMACCT_STAT_DEVICE, flags);
        if (charge) {
                cr.charge.stat = NULL;
                cr.charge.region = (char *) region;
        } else {
                cr.uncharge.stat = NULL;
                cr.uncharge.region = (char *) region;
        }
        /* A session charge is repeatable after a break: the old session's
         * went with it, and a reconnection replays only what succeeded. A
         * kept one may have been saved: never repeated. */
        r = client_call(m, req, session, charge && ret ? &resp : NULL);
        if (r < 0)
                return r;
        if (resp) {
                *ret = (memacct_charge_result) { .margin = client_charge_margin(resp) };
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE) {
                        ret->over_high = resp->charge->over_high;
                        ret->throttle_usec = resp->charge->throttle_usec;
                        ret->over_max = !!resp->charge->over_max;
                }
                memacct__v1__response__free_unpacked(resp, NULL);
        }
        if (session) {
                pthread_mutex_lock(&m->lock);
                r = client_region_held_add(m, region, bytes, charge);
                pthread_mutex_unlock(&m->lock);
                if (r < 0)
                        return client_error(m, r, "charged, but out of memory noting it for a reconnection", NULL);
        }
        return 0;
}

_public_ int memacct_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes,
                                   unsigned flags, memacct_charge_result *ret) {
        if (!m || (flags & ~(MEMACCT_KEEP | MEMACCT_FORCE | MEMACCT_NO_WAIT)))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept charge needs a path", NULL);
        if (client_region_is_memory(region))
                return memacct_charge(m, path, bytes, MEMACCT_STAT_DEVICE, flags, ret);
        if (m->bus)
                return m->bus->charge_region(m, path, region, bytes, flags, ret);
        return region_charge_call(m, true, path, region, bytes, flags, ret);
}

_public_ int memacct_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes,
                                     unsigned flags) {
        if (!m || (flags & ~MEMACCT_KEEP))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept uncharge needs a path", NULL);
        if (client_region_is_memory(region))
                return memacct_uncharge(m, path, bytes, MEMACCT_STAT_DEVICE, flags);
        if (m->bus)
                return m->bus->uncharge_region(m, path, region, bytes, flags);
        return region_charge_call(m, false, path, region, bytes, flags, NULL);
}

_public_ int memacct_set_region_limits(memacct *m, const char *path, const char *region,
                                       const memacct_limits *limits) {
        Memacct__V1__SetLimits set = MEMACCT__V1__SET_LIMITS__INIT;
        Memacct__V1__Limits l = MEMACCT__V1__LIMITS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path || !limits)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (client_region_is_memory(region))
                return memacct_set_limits(m, path, limits, 0);
        if (m->bus)
                return m->bus->set_region_limits(m, path, region, limits);
        l.has_max = !!(limits->set & MEMACCT_LIMIT_MAX), l.max = limits->max;
        l.has_high = !!(limits->set & MEMACCT_LIMIT_HIGH), l.high = limits->high;
        l.has_low = !!(limits->set & MEMACCT_LIMIT_LOW), l.low = limits->low;
        l.has_min = !!(limits->set & MEMACCT_LIMIT_MIN), l.min = limits->min;
        set.path = (char *) path;
        set.limits = &l;
        set.region = (char *) region;
        req.op_case = MEMACCT__V1__REQUEST__OP_SET_LIMITS;
        req.set_limits = &set;
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_reset_region_peak(memacct *m, const char *path, const char *region) {
        Memacct__V1__ResetPeak reset = MEMACCT__V1__RESET_PEAK__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (client_region_is_memory(region))
                return memacct_reset_peak(m, path);
        if (m->bus)
                return m->bus->reset_region_peak(m, path, region);
        reset.path = (char *) path;
        reset.region = (char *) region;
        req.op_case = MEMACCT__V1__REQUEST__OP_RESET_PEAK;
        req.reset_peak = &reset;
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes) {
        Memacct__V1__Transfer t = MEMACCT__V1__TRANSFER__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !from || !to)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->transfer(m, from, to, region, bytes);
        t.from_group = (char *) from;
        t.to_group = (char *) to;
        t.has_bytes = true;
        t.bytes = bytes;
        t.region = client_region_is_memory(region) ? NULL : (char *) region;
        req.op_case = MEMACCT__V1__REQUEST__OP_TRANSFER;
        req.transfer = &t;
        /* Not repeatable: a transfer applied before the break would be made twice. */
        return client_call(m, &req, false, NULL);
}

_public_ int memacct_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                                    unsigned flags) {
        Memacct__V1__EvictValuable ev = MEMACCT__V1__EVICT_VALUABLE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        int r;

        if (!m || !candidate || (flags & ~MEMACCT_IGNORE_LOW))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->evict_valuable(m, limit, candidate, region, flags);
        ev.limit = (char *) limit;
        ev.candidate = (char *) candidate;
        ev.region = client_region_is_memory(region) ? NULL : (char *) region;
        ev.has_ignore_low = ev.ignore_low = !!(flags & MEMACCT_IGNORE_LOW);
        req.op_case = MEMACCT__V1__REQUEST__OP_EVICT_VALUABLE;
        req.evict_valuable = &ev;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        r = resp->result_case != MEMACCT__V1__RESPONSE__RESULT_EVICT ? -EPROTO :
            resp->evict->answer == MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_YES ? MEMACCT_EVICT_YES :
            resp->evict->answer == MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_HIT_LOW ? MEMACCT_EVICT_HIT_LOW :
            resp->evict->answer == MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_NO ? MEMACCT_EVICT_NO : -EPROTO;
        memacct__v1__response__free_unpacked(resp, NULL);
        return r < 0 ? client_error(m, r, "an EvictValuable reply without an answer", NULL) : r;
}

_public_ int memacct_subscribe_region(memacct *m, const char *path, const char *region) {
        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->subscribe_region(m, path, region);
        return client_subscribe_socket(m, path, region);
}

_public_ int memacct_event_region(memacct *m, const char **ret) {
        int r;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->event_region(m, ret);
        pthread_mutex_lock(&m->lock);
        r = event_queue_region(&m->events, ret);
        pthread_mutex_unlock(&m->lock);
        return r;
}
