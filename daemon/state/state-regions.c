/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * State persistence: the device memory regions in the text
 *
 * A state names its regions once, on "region NAME capacity=BYTES|max"
 * lines between the header and the groups, and a group's part in a region
 * is a set of fields on its own line, so that a line still holds a
 * group's whole state and the journal still replays group by group:
 *
 *         dmem:NAME.max=  .high=  .low=  .min=   limits, only where not at
 *                                                their default
 *         dmem:NAME.kept=  .kept-delegator=      kept charges, when not 0
 *
 * A key is split at its last '.': a region name may hold dots (and ':'
 * and '/'), never '=' or a space, and no attribute holds a dot. Every
 * NAME must be on a region line of the same state (of the same batch, in
 * the journal); the root's max in a region is its capacity, never a field.
 *
 * What a save writes is one view of the regions (state_region_snapshot()),
 * read before its groups: a group's fields in a region registered after
 * that are left out, as are their changes, which the save does not cover
 * (they came after it read its sequence number); saver.c and journal.c
 * say why that loses nothing acknowledged.
 */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/counter.h"
#include "core/region.h"
#include "macro.h"
#include "state/persist-internal.h"

/* How long a snapshot waits for a removal in progress to end. */
#define SNAPSHOT_WAIT_MSEC 200

/* The attributes of a dmem:NAME.ATTR key; the first four by MemLimitMask bit. */
enum { RF_MAX, RF_HIGH, RF_LOW, RF_MIN, RF_KEPT, RF_DELEGATOR, _RF_MAX };
static const char *const region_field_names[_RF_MAX] = {
        "max", "high", "low", "min", "kept", "kept-delegator",
};

/* ---- the arrays of the groups' uses ---- */

#define USE_BLOCK 1024

struct StateUseBlock {
        StateUseBlock *next;
        unsigned used;
        StateRegionUse v[USE_BLOCK];
};

StateRegionUse *state_uses_alloc(StateUses *u, unsigned n) {
        StateUseBlock *b = u->blocks;

        assert(n <= USE_BLOCK);
        if (!b || b->used + n > USE_BLOCK) {
                b = malloc(sizeof(*b));
                if (!b)
                        return NULL;
                b->next = u->blocks;
                b->used = 0;
                u->blocks = b;
        }
        b->used += n;
        return b->v + b->used - n;
}

void state_uses_done(StateUses *u) {
        while (u->blocks) {
                StateUseBlock *next = u->blocks->next;

                free(u->blocks);
                u->blocks = next;
        }
}

int state_regions_find(const StateRegions *regions, const char *name) {
        for (unsigned i = 0; i < regions->n; i++)
                if (strcmp(regions->v[i].name, name) == 0)
                        return (int) i;
        return -1;
}

/* ---- writing ---- */

static void text_bytes(TextBuf *b, uint64_t v) {
        if (v == UINT64_MAX)
                text_printf(b, "max");
        else
                text_printf(b, "%" PRIu64, v);
}

void text_region_lines(TextBuf *b, const char *prefix, const StateRegions *regions) {
        for (unsigned i = 0; i < regions->n; i++) {
                text_printf(b, "%s%s capacity=", prefix, regions->v[i].name);
                text_bytes(b, regions->v[i].capacity);
                text_printf(b, "\n");
        }
}

void text_region_fields(TextBuf *b, const StateGroup *sg) {
        for (unsigned i = 0; i < sg->nr_regions; i++) {
                const StateRegionUse *u = &sg->regions[i];
                const uint64_t limits[] = { u->limits.max, u->limits.high, u->limits.low, u->limits.min };

                for (unsigned k = 0; k < ELEMENTSOF(limits); k++)
                        if (u->limits.set & (1u << k)) {
                                text_printf(b, " dmem:%s.%s=", u->region, region_field_names[k]);
                                text_bytes(b, limits[k]);
                        }
                if (u->kept > 0)
                        text_printf(b, " dmem:%s.kept=%" PRIu64, u->region, u->kept);
                if (u->kept_delegator > 0)
                        text_printf(b, " dmem:%s.kept-delegator=%" PRIu64, u->region, u->kept_delegator);
        }
}

/* ---- reading the core ---- */

void state_region_snapshot(MemCore *core, StateRegionSnapshot *ret) {
        MemGroupInfo info;

        for (unsigned waited = 0;; waited++) {
                bool removing = false;

                /* The root has a counter in every region from its
                 * registration to its removal: its list is every region,
                 * one being removed too (which core_region_list() leaves
                 * out, though the removal may yet be refused). */
                region_read(core, core->root, NULL, &info);
                ret->set.n = 0;
                for (unsigned i = 0; i < info.nr_regions && i < ELEMENTSOF(ret->names); i++) {
                        int key = core_region_lookup(core, info.regions[i].name);

                        /* No key while a removal is under way: it ends in
                         * a grace period, one way or the other. */
                        if (key <= 0)
                                removing = true;
                        memcpy(ret->names[i], info.regions[i].name, sizeof(ret->names[i]));
                        ret->set.v[i] = (StateRegion) { ret->names[i], info.regions[i].capacity };
                        ret->keys[i] = key;
                        ret->set.n++;
                }
                /* After the wait, the delegator's part of a region whose
                 * removal hangs reads as 0: its kept charges are saved,
                 * all as the delegate's. */
                if (!removing || waited >= SNAPSHOT_WAIT_MSEC)
                        return;
                usleep(1000);
        }
}

bool state_region_snapshot_same(const StateRegionSnapshot *a, const StateRegionSnapshot *b) {
        if (a->set.n != b->set.n)
                return false;
        for (unsigned i = 0; i < a->set.n; i++)
                if (a->set.v[i].capacity != b->set.v[i].capacity || strcmp(a->names[i], b->names[i]) != 0 ||
                    a->keys[i] != b->keys[i])
                        return false;
        return true;
}

/* The region part of state_group_of(): @info's regions that @snap names, and where something is set. */
static unsigned group_regions_of(MemGroup *g, const MemGroupInfo *info,
                                 const StateRegionSnapshot *snap, StateRegionUse *uses) {
        unsigned n = 0;

        for (unsigned i = 0; i < info->nr_regions; i++) {
                const MemRegionInfo *ri = &info->regions[i];
                int k = state_regions_find(&snap->set, ri->name);
                StateRegionUse u;

                if (k < 0)
                        continue;
                u = (StateRegionUse) {
                        .region = snap->set.v[k].name,
                        .limits = { .max = ri->max, .high = ri->high, .low = ri->low, .min = ri->min },
                        .kept = ri->kept,
                };
                /* The root's max is the capacity, set by the registration. */
                if (g->parent && ri->max != UINT64_MAX)
                        u.limits.set |= MEM_LIMIT_MAX;
                if (ri->high != UINT64_MAX)
                        u.limits.set |= MEM_LIMIT_HIGH;
                if (ri->low != 0)
                        u.limits.set |= MEM_LIMIT_LOW;
                if (ri->min != 0)
                        u.limits.set |= MEM_LIMIT_MIN;
                u.kept_delegator = ri->kept_delegator; /* at most kept: region.c reads it so */
                if (u.limits.set || u.kept > 0)
                        uses[n++] = u;
        }
        return n;
}

void state_group_of(MemCore *core, MemGroup *g, const StateRegionSnapshot *snap, StateRegionUse *uses,
                    StateGroup *ret) {
        MemGroupInfo info;

        group_read(core, g, NULL, false, &info);
        *ret = (StateGroup) {
                .path = g->path,
                .owner = info.owner,
                .limits = { .max = info.max, .high = info.high, .low = info.low, .min = info.min },
                .transient = atomic_load(&g->transient),
                .user_limits = group_user_limits(g),
                .regions = uses,
        };
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                ret->kept[i] = info.kept[i];
                /* Read after the kept bytes: at most them. */
                ret->kept_delegator[i] = MIN(group_kept_delegator(g, i), info.kept[i]);
        }
        ret->nr_regions = group_regions_of(g, &info, snap, uses);
}

/* ---- reading and checking the text ---- */

int parse_region_line(CheckContext *ctx, unsigned line, char *rest, StateRegions *regions) {
        char *name = rest, *p = strchr(rest, ' ');
        bool capacity_seen = false;
        uint64_t capacity = 0;

        if (!p)
                return check_fail(ctx, -EBADMSG, line, "region without capacity=");
        *p++ = 0;
        if (mem_region_name_check(name) < 0 || strcmp(name, MEM_REGION_MEMORY_NAME) == 0)
                return check_fail(ctx, -EBADMSG, line,
                                  "bad region name '%.64s': [A-Za-z0-9._:/@+-], at most %d bytes, not memory", name,
                                  MEM_REGION_NAME_MAX);
        if (state_regions_find(regions, name) >= 0)
                return check_fail(ctx, -EBADMSG, line, "region %s given twice", name);
        if (regions->n >= ELEMENTSOF(regions->v))
                return check_fail(ctx, -EBADMSG, line, "more than %d regions", MEM_REGION_MAX - 1);
        for (;;) {
                char *tok;

                while (*p == ' ')
                        p++;
                if (!*p)
                        break;
                tok = p;
                p += strcspn(p, " ");
                if (*p)
                        *p++ = 0;
                if (strncmp(tok, "capacity=", 9) != 0)
                        return check_fail(ctx, -EBADMSG, line, "unknown field '%.32s' of region %s", tok, name);
                if (capacity_seen)
                        return check_fail(ctx, -EBADMSG, line, "capacity given twice");
                capacity_seen = true;
                if (strcmp(tok + 9, "max") == 0)
                        capacity = UINT64_MAX;
                else if (parse_decimal(tok + 9, UINT64_MAX, &capacity) < 0)
                        return check_fail(ctx, -EBADMSG, line, "bad capacity for region %s", name);
        }
        if (!capacity_seen)
                return check_fail(ctx, -EBADMSG, line, "region without capacity=");
        regions->v[regions->n++] = (StateRegion) { name, capacity };
        return 0;
}

int parse_region_field(CheckContext *ctx, unsigned line, const char *key, size_t klen, const char *value,
                       const StateRegions *known, RegionFields *acc) {
        const char *name = key + 5, *dot = memrchr(name, '.', klen - 5);
        size_t n = dot ? (size_t) (dot - name) : 0;
        const char *region = NULL;
        StateRegionUse *u = NULL;
        unsigned a, k;
        uint64_t v;

        for (a = 0; dot && a < _RF_MAX; a++)
                if (strcmp(dot + 1, region_field_names[a]) == 0)
                        break;
        if (!dot || n == 0 || a == _RF_MAX)
                return check_fail(ctx, -EBADMSG, line, "unknown field '%.80s'", key);
        for (unsigned i = 0; i < known->n && !region; i++)
                if (strncmp(known->v[i].name, name, n) == 0 && known->v[i].name[n] == 0)
                        region = known->v[i].name;
        if (!region)
                return check_fail(ctx, -EBADMSG, line, "%.80s: no region line names region %.*s", key,
                                  (int) MIN(n, (size_t) 64), name);
        for (k = 0; k < acc->n && !u; k++)
                if (acc->v[k].region == region)
                        u = &acc->v[k];
        if (!u) {
                k = acc->n++;
                u = &acc->v[k];
                *u = (StateRegionUse) { .region = region, .limits = { .max = UINT64_MAX, .high = UINT64_MAX } };
                acc->seen[k] = 0;
        } else
                k--;
        if (acc->seen[k] & (1u << a))
                return check_fail(ctx, -EBADMSG, line, "%.80s given twice", key);
        acc->seen[k] |= (uint8_t) (1u << a);
        if (a >= RF_KEPT) {
                if (parse_decimal(value, (uint64_t) MEM_COUNTER_MAX, &v) < 0)
                        return check_fail(ctx, -EBADMSG, line, "bad byte count for %.80s", key);
                *(a == RF_KEPT ? &u->kept : &u->kept_delegator) = v;
                return 0;
        }
        if (strcmp(value, "max") == 0)
                v = UINT64_MAX;
        else if (parse_decimal(value, UINT64_MAX, &v) < 0)
                return check_fail(ctx, -EBADMSG, line, "bad value for %.80s", key);
        u->limits.set |= 1u << a;
        *(a == RF_MAX ? &u->limits.max : a == RF_HIGH ? &u->limits.high : a == RF_LOW ? &u->limits.low
                                                                                          : &u->limits.min) = v;
        return 0;
}

int region_fields_finish(CheckContext *ctx, unsigned line, const RegionFields *acc, StateUses *uses,
                         StateGroup *g) {
        StateRegionUse *v;

        if (acc->n == 0)
                return 0;
        for (unsigned i = 0; i < acc->n; i++)
                if (acc->v[i].kept_delegator > acc->v[i].kept)
                        return check_fail(ctx, -EBADMSG, line, "dmem:%s.kept-delegator is more than dmem:%s.kept",
                                          acc->v[i].region, acc->v[i].region);
        v = state_uses_alloc(uses, acc->n);
        if (!v) {
                ctx->oom = true;
                return -ENOMEM;
        }
        memcpy(v, acc->v, acc->n * sizeof(*v));
        g->regions = v;
        g->nr_regions = acc->n;
        return 0;
}

int state_check_group_regions(const StateRegions *regions, const StateGroup *g, bool root, bool delegation_root,
                              unsigned line, uint64_t *kept_totals, CheckContext *ctx) {
        for (unsigned i = 0; i < g->nr_regions; i++) {
                const StateRegionUse *u = &g->regions[i];
                unsigned k;

                if (root && (u->limits.set & MEM_LIMIT_MAX))
                        return check_fail(ctx, -EBADMSG, line,
                                          "dmem:%s.max on /: the root's max in a region is its capacity", u->region);
                if (!delegation_root && u->kept_delegator > 0)
                        return check_fail(ctx, -EBADMSG, line,
                                          "dmem:%s.kept-delegator on a group that is not a delegation root",
                                          u->region);
                for (k = 0; k < regions->n && regions->v[k].name != u->region; k++)
                        ;
                assert(k < regions->n);
                /* Every ancestor's counter holds the sum below it: the
                 * root's holds all, and must not pass what one can. */
                kept_totals[k] += u->kept;
                if (kept_totals[k] > (uint64_t) MEM_COUNTER_MAX)
                        return check_fail(ctx, -EBADMSG, line,
                                          "the kept charges in region %s add up to more than %" PRIu64 " bytes",
                                          u->region, (uint64_t) MEM_COUNTER_MAX);
        }
        return 0;
}
