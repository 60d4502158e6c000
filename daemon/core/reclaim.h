/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reclaim planning: how much each group of a subtree should give back
 * when its root must shed bytes, by the kernel's rules (mm/vmscan.c,
 * try_to_free_mem_cgroup_pages() down to get_scan_count(); docs/kernel.md,
 * "reclaim.c"). Pure arithmetic on a snapshot of the subtree: whoever
 * holds the memory (reclaimable clients) is asked for the plan's figures
 * by the layers above.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MemCore MemCore;
typedef struct MemGroup MemGroup;

/* The kernel's units, in bytes: SWAP_CLUSTER_MAX pages, and the
 * MEMCG_CHARGE_BATCH pages one direct reclaim step asks for. */
#define RECLAIM_PAGE 4096
#define RECLAIM_CLUSTER (32 * RECLAIM_PAGE)
#define RECLAIM_STEP (64 * RECLAIM_PAGE)
/* DEF_PRIORITY: a walk at priority p scans 1/2^p of each group. */
#define RECLAIM_PRIORITIES 12

/* One group of the subtree, its parent before it (index 0 is the root, the reclaim target). */
typedef struct ReclaimNode {
        int parent;           /* index of the parent; -1 for the root */
        int64_t usage;        /* hierarchical usage, bytes */
        int64_t min, low;     /* its settings */
        int64_t reclaimable;  /* bytes its own reclaimable holders could give back */
        /* The protected usage (min(usage, min), and low's) of its children
         * left out of the snapshot, which nothing here reclaims: a caller
         * may leave out every subtree without reclaimable bytes, and
         * fold it in here. */
        int64_t other_children_min, other_children_low;

        /* Out. */
        int64_t take;         /* bytes to ask of its holders */
        bool low_event;       /* reclaimed while its usage was within its effective low */
} ReclaimNode;

typedef struct ReclaimOutcome {
        int64_t planned;  /* the sum of the takes */
        bool low_pass;    /* only reclaiming below low (memcg_low_reclaim) reached the goal */
} ReclaimOutcome;

/**
 * reclaim_plan() - plan the reclaim of @need bytes from the subtree @v
 * (@n nodes, pre-order), as the kernel's direct reclaim does it: in steps
 * of RECLAIM_STEP, each a do_try_to_free_pages() from priority
 * RECLAIM_PRIORITIES down to 0, each priority a walk of the subtree in
 * which a group gives its share by get_scan_count()'s proportion of its
 * unprotected usage, with effective protection recomputed from the usage
 * left at every walk; groups within their effective min give nothing,
 * groups within their effective low only in a second pass, when the first
 * reclaimed nothing (their low event is set). The root's own protection
 * never counts. Each step is planned as if its takes were given back, so
 * the small steps and the recomputation reach the kernel's split, not a
 * single proportional one. @recursive is memory_recursiveprot.
 *
 * Fills every node's take and low_event, and @ret. Nodes' usage and
 * reclaimable are left as given. Return: 0; -EINVAL (a bad tree).
 */
int reclaim_plan(ReclaimNode *v, size_t n, int64_t need, bool recursive, ReclaimOutcome *ret);

/* A holder of reclaimable bytes: a session, as the layer above knows it. */
typedef struct ReclaimHolder {
        MemGroup *group; /* its group, at or below the target; the caller holds it */
        int64_t bytes;   /* what it could give back in the region */
        int node;        /* out: its group's node in the snapshot */
} ReclaimHolder;

/**
 * reclaim_snapshot() - the nodes reclaim_plan() needs to reclaim in
 * region @key (MEM_REGION_MEMORY: memory) below @target: @target first,
 * then every group of @holders and its ancestors up to @target, parents
 * before children, with their usage, min and low as the counters read
 * now and each group's holders' bytes summed as its reclaimable bytes
 * (at most its usage). The subtrees left out hold nothing reclaimable:
 * their protected usage is folded into their parents'
 * other_children_min/low. Sets each holder's node (-1: not below
 * @target, left out). Any thread. Return: 0 and the nodes in *@ret
 * (free() them), their count in *@ret_n and whether protection is
 * recursive in *@ret_recursive; -ENOMEM; -ENOENT (no such region).
 */
int reclaim_snapshot(MemCore *core, MemGroup *target, int key, ReclaimHolder *holders, size_t n,
                     ReclaimNode **ret, size_t *ret_n, bool *ret_recursive);

/**
 * reclaim_over_high() - the groups from @g up whose usage in @key is above
 * their high, each with a reference and its overage, at most @max of them
 * (mem_cgroup_handle_over_high()'s walk). Return: how many.
 */
size_t reclaim_over_high(MemGroup *g, int key, MemGroup **ret_groups, int64_t *ret_over, size_t max);

/** reclaim_above() - how far @g's usage in @key is above @max (the max it is about to get): at least 0. */
int64_t reclaim_above(MemGroup *g, int key, uint64_t max);

/**
 * reclaim_need() - what @target must give back in @key for @bytes more
 * to fit under its max: usage + @bytes - max, at least 0. Any thread.
 */
int64_t reclaim_need(MemGroup *target, int key, uint64_t bytes);
