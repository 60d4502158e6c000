/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The parts of memacctctl top (top.c: the verb, its loops and the
 * terminal; top-view.c: a snapshot of a subtree, its order and its
 * table). The view is plain stdio with no terminal control, so that batch
 * mode and the live view print the same lines.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <memacct.h>

typedef enum TopOrder {
        TOP_ORDER_CURRENT,
        TOP_ORDER_PEAK,
        TOP_ORDER_PATH,
        TOP_ORDER_EVENTS,
        _TOP_ORDER_MAX,
        _TOP_ORDER_INVALID = -EINVAL,
} TopOrder;

/** top_order_from_string() - "current" ... Return: the order, or -EINVAL. */
TopOrder top_order_from_string(const char *s);

/** top_order_to_string() - the name of @o. Return: it, NULL if out of range. */
const char *top_order_to_string(TopOrder o);

typedef struct TopRow {
        const memacct_group_info *g;
        int depth;      /* below the snapshot's root, which is 0 */
        ssize_t parent; /* index in TopSnapshot.rows; -1 for the root */
        uint64_t ev_max, ev_oom, ev_high; /* memory.events, hierarchical */
} TopRow;

/* One query's answer: the root and its subtree, and the order shown. */
typedef struct TopSnapshot {
        memacct_group_info *top;
        memacct_group_list *list;
        TopRow *rows;  /* the root, then the list's groups in pre-order */
        size_t *shown; /* indices into rows, in the order printed */
        size_t n_rows;
        bool mirrors;  /* some group mirrors a kernel cgroup: a KERNEL column */
        /* --region: each group seen in the region (region_view()), which
         * the rows point to, and the counters of those that have none. */
        memacct_group_info *views;
        memacct_counter *scratch;
} TopSnapshot;

/* How a snapshot is printed. */
typedef struct TopView {
        TopOrder order;
        int max_depth;   /* levels below the root; -1: all */
        bool raw;        /* bytes, not K/M/G */
        size_t width;    /* columns of the terminal; 0: no limit (batch) */
        size_t height;   /* group rows to print; 0: all */
        const char *eol; /* "\n", or with a clear-to-end-of-line before it */
} TopView;

/**
 * top_snapshot_fetch() - query the group at @path and its subtree into
 * @ret (zeroed first; freed with top_snapshot_done() also on failure),
 * seen in @region (NULL: memory).
 * Return: 0, or the library's negative errno.
 */
int top_snapshot_fetch(memacct *m, const char *path, const char *region, TopSnapshot *ret);

/** top_snapshot_done() - free what @s holds and zero it. */
void top_snapshot_done(TopSnapshot *s);

/**
 * top_snapshot_sort() - order @s's rows as a tree whose siblings follow
 * @order: by current, peak or events (the sum of max, oom and high)
 * descending, or by path ascending; ties by path.
 */
void top_snapshot_sort(TopSnapshot *s, TopOrder order);

/** top_snapshot_count() - the rows of @s at most @max_depth (-1: all) deep. */
size_t top_snapshot_count(const TopSnapshot *s, int max_depth);

/** top_print_table() - the column header, then @s's rows as @v says, to @f. */
void top_print_table(FILE *f, const TopSnapshot *s, const TopView *v);

/**
 * top_ellipsize() - @s in at most @width bytes in @buf (of @size bytes):
 * as it is when it fits, else its start, "...", and its end, as
 * systemd-cgtop shortens a long path. Return: @buf.
 */
char *top_ellipsize(char *buf, size_t size, const char *s, size_t width);
