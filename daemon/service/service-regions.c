/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations on device memory regions: registering them, their
 * limits and peaks, moving a kept charge between groups, and the
 * eviction question (docs/regions.md).
 *
 * Policy decided here:
 * - only root (not a container's) registers and removes regions, as only
 *   a driver registers a dmem region;
 * - a region change is durable, saved whole: rare, and every group line
 *   that names the region depends on it;
 * - in a device region a max below usage is always taken, as a dmem.max
 *   write is, where memory's keeps asking for --force;
 * - a transfer charges the destination first, so that a refusal by its
 *   limits changes nothing, and is authorised as the uncharge of the
 *   source plus the kept charge of the destination would be.
 */

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/charge.h"
#include "core/group.h"
#include "core/region.h"
#include "core/session.h"
#include "macro.h"
#include "service/message-ids.h"
#include "service/service-internal.h"

int service_region_key(Service *svc, const char *region, int *ret, Refusal *rf) {
        int key = core_region_lookup(svc->core, region);

        if (key < 0)
                return refusal_set(rf, -ENOENT, "no region '%s' (memacctctl region list)", region);
        *ret = key;
        return 0;
}

/*
 * Region removals done so far, daemon-wide: service_remove_region(), the
 * daemon's one caller of core_region_remove(), counts each once the core
 * is through with it (a removal refused counts too). A key the core found
 * live after the count was read as N is live while the count is still N:
 * only a removal ends a key (a region added, or registered anew, gets a
 * key of its own), and one done since would have moved the count. A
 * removal still under way is the race any check before a charge has
 * (the charge itself is then refused with -ENOENT by the core).
 * Global, not the Service's, so that it only ever grows in a process,
 * whatever services come and go (see service_region_live).
 */
_Atomic unsigned long service_region_removals;

/*
 * The cache hit of every device region charge asks whether its key is
 * still live; the core's answer costs a read-side section, this thread's
 * record a few loads. A record of a core since freed whose address a new
 * one got cannot vouch for a key of the new one: that key was looked up
 * after the record was made, so a removal that ended it moved the count
 * past the record's.
 */
_Thread_local ServiceRegionLive service_region_live[MEM_REGION_MAX];

bool service_region_key_ask(MemCore *core, int key, unsigned long removals) {
        ServiceRegionLive *seen = &service_region_live[region_slot(key)];

        if (!core_region_live(core, key))
                return false;
        *seen = (ServiceRegionLive) { .core = core, .removals = removals, .key = key };
        return true;
}

int service_peer_region_lookup(Service *svc, Peer *p, const char *region, int *ret, Refusal *rf) {
        int r;

        r = service_region_key(svc, region, ret, rf);
        if (r < 0)
                return r;
        if (*ret > 0 && strlen(region) < sizeof(p->region_name)) {
                strcpy(p->region_name, region);
                p->region_key = *ret;
        }
        return 0;
}

static const char *capacity_text(uint64_t capacity, char *buf, size_t size) {
        if (capacity == UINT64_MAX)
                return "max";
        snprintf(buf, size, "%llu", (unsigned long long) capacity);
        return buf;
}

int service_add_region(Service *svc, Peer *p, const char *name, uint64_t capacity, Refusal *rf) {
        char buf[32];
        int r;

        if (!authz_is_root(&p->who))
                return refusal_set(rf, -EPERM, "only root registers regions");
        r = mem_region_name_check(name);
        if (r == -ENAMETOOLONG)
                return refusal_set(rf, r, "a region name is at most %d bytes", MEM_REGION_NAME_MAX);
        if (r < 0 || strcmp(name, MEM_REGION_MEMORY_NAME) == 0)
                return refusal_set(rf, -EINVAL, "'%s' is not a region name: [A-Za-z0-9._:/@+-], not \"memory\"",
                                   name ? name : "");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        r = core_region_add(svc->core, name, capacity);
        if (r == -EEXIST)
                return refusal_set(rf, r, "region %s is registered with another capacity; remove it first", name);
        if (r == -ENOSPC)
                return refusal_set(rf, r, "too many regions (%d, memory included)", MEM_REGION_MAX);
        if (r < 0)
                return refusal_set(rf, r, "region %s: %s", name, refusal_errno_text(r));
        service_committed(svc, p, NULL);
        service_audit(p, MESSAGE_REGION_CHANGED, "/", "Region %s registered, capacity %s", name,
                      capacity_text(capacity, buf, sizeof(buf)));
        return 0;
}

int service_remove_region(Service *svc, Peer *p, const char *name, Refusal *rf) {
        int r;

        if (!authz_is_root(&p->who))
                return refusal_set(rf, -EPERM, "only root removes regions");
        if (name && strcmp(name, MEM_REGION_MEMORY_NAME) == 0)
                return refusal_set(rf, -EINVAL, "memory is built in");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        r = core_region_remove(svc->core, name);
        /* After the core: a key found live before this is asked again
         * (service_region_key_live()). Release: whoever reads the new
         * count finds the region gone in the core. */
        atomic_fetch_add_explicit(&service_region_removals, 1, memory_order_release);
        if (r == -ENOENT)
                return refusal_set(rf, r, "no region '%s'", name ? name : "");
        if (r == -EBUSY)
                return refusal_set(rf, r, "region %s is in use: something is charged to it", name);
        if (r < 0)
                return refusal_set(rf, r, "region %s: %s", name, refusal_errno_text(r));
        service_committed(svc, p, NULL);
        service_audit(p, MESSAGE_REGION_CHANGED, "/", "Region %s removed", name);
        return 0;
}

int service_list_regions(Service *svc, Peer *p, MemRegionDesc *ret, unsigned max, Refusal *rf) {
        if (service_read_access(svc) == READ_ACCESS_ROOT && !authz_is_root(&p->who))
                return refusal_set(rf, -EPERM, "only root reads the daemon's state ([access] read = root)");
        return (int) core_region_list(svc->core, ret, max);
}

int service_set_region_limits(Service *svc, Peer *p, const char *path, const char *region,
                              const MemLimits *limits, unsigned flags, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int key = MEM_REGION_MEMORY, r;

        r = service_region_key(svc, region, &key, rf);
        if (r < 0)
                return r;
        if (key == MEM_REGION_MEMORY)
                return service_set_limits(svc, p, path, limits, flags, rf);
        /* Served again after the reclaim its max asked for: taken already. */
        if (!service_limits_reclaim_resume(svc, p, &flags))
                return 0;
        r = service_lookup_for(svc, p, path, authz_may_modify, &g, rf);
        if (r < 0)
                return r;
        if (!limits || !limits->set)
                return 0;
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        events_requester_set(p->creds.pid, p->creds.uid);
        r = region_set_limits(svc->core, g, key, limits, true);
        events_requester_set(0, 0);
        if (r == -EINVAL)
                return refusal_set(rf, r, "the root's max in region %s is its capacity (memacctctl region add)",
                                   region);
        if (r < 0)
                return refusal_set(rf, r, "%s: %s", g->path, refusal_errno_text(r));
        service_committed(svc, p, g->path);
        service_audit_limits(p, g->path, region, limits, r > 0);
        events_emit_region(svc->events, EVENT_LIMITS_CHANGED, g->path, region, limits->set);
        /* Taken at once, as memory's forced max, then the difference asked for. */
        if (limits->set & MEM_LIMIT_MAX)
                return service_limits_reclaim(svc, p, g, key, limits->max, flags | SERVICE_LIMITS_FORCE);
        return 0;
}

/* A read narrowed to one region: the consumer it wraps, and the region. */
typedef struct RegionRead {
        ServiceGroupFn fn;
        void *userdata;
        bool memory;            /* "" or "memory": no entry */
        MemRegionInfo template; /* the entry of a group with no counters there */
} RegionRead;

/* ServiceGroupFn: @info with regions[] narrowed to the one asked for. */
static int region_narrow(void *userdata, const char *path, const MemGroupInfo *info) {
        RegionRead *rr = userdata;
        MemGroupInfo one;

        if (!info)
                return rr->fn(rr->userdata, path, NULL);
        /* The whole record: a copy is what lets the consumer keep its
         * signature; a page of groups copies one at a time. */
        one = *info;
        one.nr_regions = 0;
        if (!rr->memory) {
                one.regions[0] = rr->template;
                for (unsigned i = 0; i < info->nr_regions; i++)
                        if (strcmp(info->regions[i].name, rr->template.name) == 0)
                                one.regions[0] = info->regions[i];
                one.nr_regions = 1;
        }
        return rr->fn(rr->userdata, path, &one);
}

/* Set @rr up for @region; Return: 0, -ENOENT with @rf. */
static int region_read_begin(Service *svc, const char *region, ServiceGroupFn fn, void *userdata, RegionRead *rr,
                             Refusal *rf) {
        MemRegionInfo root;
        int key = MEM_REGION_MEMORY, r;

        *rr = (RegionRead) { .fn = fn, .userdata = userdata };
        r = service_region_key(svc, region, &key, rf);
        if (r < 0)
                return r;
        rr->memory = key == MEM_REGION_MEMORY;
        if (rr->memory)
                return 0;
        /* The root's entry names the region and its capacity; a group
         * without counters there reads as nothing charged, no limit. */
        if (region_read_one(svc->core, svc->core->root, key, NULL, &root) < 0)
                return refusal_set(rf, -ENOENT, "no region '%s'", region);
        rr->template = (MemRegionInfo) { .capacity = root.capacity, .max = UINT64_MAX, .high = UINT64_MAX };
        memcpy(rr->template.name, root.name, sizeof(root.name));
        return 0;
}

int service_get_group_region(Service *svc, Peer *p, const char *path, const char *reclaim_root,
                             const char *region, unsigned flags, ServiceGroupFn fn, void *userdata,
                             Refusal *rf) {
        RegionRead rr;
        int r;

        if (!region)
                return service_get_group(svc, p, path, reclaim_root, flags, fn, userdata, rf);
        r = region_read_begin(svc, region, fn, userdata, &rr, rf);
        if (r < 0)
                return r;
        return service_get_group(svc, p, path, reclaim_root, flags, region_narrow, &rr, rf);
}

int service_list_groups_page_region(Service *svc, Peer *p, const char *path, const char *region, unsigned flags,
                                    ServiceListPage *page, ServiceGroupFn fn, void *userdata, Refusal *rf) {
        RegionRead rr;
        int r;

        if (!region)
                return service_list_groups_page(svc, p, path, flags, page, fn, userdata, rf);
        r = region_read_begin(svc, region, fn, userdata, &rr, rf);
        if (r < 0)
                return r;
        return service_list_groups_page(svc, p, path, flags, page, region_narrow, &rr, rf);
}

int service_reset_region_peak(Service *svc, Peer *p, const char *path, const char *region, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int key = MEM_REGION_MEMORY, r;

        r = service_region_key(svc, region, &key, rf);
        if (r < 0)
                return r;
        if (key == MEM_REGION_MEMORY)
                return service_reset_peak(svc, p, path, rf);
        r = service_lookup_for(svc, p, path, authz_may_reset_peak, &g, rf);
        if (r < 0)
                return r;
        r = region_reset_peak(svc->core, g, key);
        return r < 0 ? refusal_set(rf, r, "no region '%s'", region) : 0;
}

/* A kept charge or uncharge of @bytes in @key (memory: of @item) on @g. */
static int kept_charge(Service *svc, MemGroup *g, int key, MemStatItem item, uint64_t bytes, unsigned flags,
                       MemChargeResult *res) {
        return core_charge_kept_in(svc->core, g, key, bytes, item, flags | MEM_CHARGE_DRAIN, res);
}

static int kept_uncharge(Service *svc, MemGroup *g, int key, MemStatItem item, uint64_t bytes, bool delegate) {
        if (key == MEM_REGION_MEMORY)
                return group_uncharge_kept_as(svc->core, g, bytes, item, delegate);
        return region_uncharge_kept_as(svc->core, g, key, bytes, delegate);
}

int service_transfer(Service *svc, Peer *p, const char *from, const char *to, uint64_t bytes,
                     const char *region, const char *stat, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *src = NULL, *dst = NULL;
        MemChargeResult res = {};
        MemStatItem item = MEM_STAT_ANON;
        unsigned flags = 0;
        int key = MEM_REGION_MEMORY, r;

        r = service_region_key(svc, region, &key, rf);
        if (r < 0)
                return r;
        if (stat && *stat) {
                if (key != MEM_REGION_MEMORY)
                        return refusal_set(rf, -EINVAL, "stat items are memory's; region %s has none", region);
                item = mem_stat_item_from_string(stat);
                if (item < 0)
                        return refusal_set(rf, -EINVAL, "unknown stat item '%s'", stat);
        }
        r = service_lookup_for(svc, p, from, authz_may_use, &src, rf);
        if (r < 0)
                return r;
        r = service_lookup_for(svc, p, to, authz_may_use, &dst, rf);
        if (r < 0)
                return r;
        if (src == dst)
                return 0;
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        if (service_kept_by_delegator(&p->who, dst))
                flags |= MEM_CHARGE_DELEGATOR;
        events_requester_set(p->creds.pid, p->creds.uid);
        r = kept_charge(svc, dst, key, item, bytes, flags, &res);
        if (r == 0) {
                r = kept_uncharge(svc, src, key, item, bytes, service_kept_by_delegate(&p->who, src));
                if (r < 0)
                        /* The source keeps fewer (or its delegator's):
                         * undo the destination's, which nobody else can
                         * have released in between but by removing it. */
                        (void) kept_uncharge(svc, dst, key, item, bytes, false);
        }
        events_requester_set(0, 0);
        if (r == -EDQUOT && key != MEM_REGION_MEMORY)
                r = refusal_region_limit(rf, dst->path, res.refused ? res.refused->path : NULL, region,
                                         res.refused && !res.refused->parent);
        else if (r == -EDQUOT)
                r = refusal_limit(rf, dst->path, res.refused ? res.refused->path : NULL);
        else if (r == -ERANGE)
                r = refusal_set(rf, r, "%s keeps fewer than %llu bytes%s%s that the caller may release", src->path,
                                (unsigned long long) bytes, key ? " in region " : "", key ? region : "");
        else if (r < 0)
                r = refusal_set(rf, r, "transfer from %s to %s: %s", src->path, dst->path, refusal_errno_text(r));
        charge_result_done(&res);
        if (r < 0)
                return r;
        service_committed(svc, p, src->path);
        service_committed(svc, p, dst->path);
        service_audit(p, MESSAGE_KEPT_TRANSFERRED, dst->path, "Kept charge of %llu bytes%s%s moved from %s to %s",
                      (unsigned long long) bytes, key ? " in region " : "", key ? region : "", src->path,
                      dst->path);
        return 0;
}

int service_evict_valuable(Service *svc, Peer *p, const char *limit, const char *candidate,
                           const char *region, bool ignore_low, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *lg = NULL, *cg = NULL;
        int key = MEM_REGION_MEMORY, r;

        r = service_region_key(svc, region, &key, rf);
        if (r < 0)
                return r;
        r = service_lookup(svc, limit && *limit ? limit : "/", &lg, rf);
        if (r < 0)
                return r;
        r = service_lookup(svc, candidate, &cg, rf);
        if (r < 0)
                return r;
        if (!service_may_read(svc, p, lg))
                return refusal_denied(rf, lg->path);
        if (!service_may_read(svc, p, cg))
                return refusal_denied(rf, cg->path);
        r = region_evict_valuable(svc->core, limit && *limit ? lg : NULL, cg, key, ignore_low);
        if (r < 0)
                return refusal_set(rf, r, "no region '%s'", region);
        switch (r) {
        case MEM_EVICT_YES:
                return SERVICE_EVICT_YES;
        case MEM_EVICT_HIT_LOW:
                return SERVICE_EVICT_HIT_LOW;
        default:
                return SERVICE_EVICT_NO;
        }
}
