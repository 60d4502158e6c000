/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl top's snapshot and table: one query of a subtree (the root
 * with memacct_get_group(), the rest with one recursive
 * memacct_list_groups()), kept as rows with their parent, ordered as a
 * tree whose siblings follow the sort key, and printed as a table.
 *
 * Invariants: a snapshot is a consistent answer of two calls and never
 * changes once fetched, so a redraw (a new order, a new terminal size)
 * needs no query; a child is always printed below its parent, whatever
 * the order, which is what makes the indentation by depth readable; sizes
 * print as "max" when unlimited, as in cgroup v2, and as bytes with --raw,
 * exactly the numbers `show --json` reports.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "output.h"
#include "regions.h"
#include "top-internal.h"

static const char *const order_names[_TOP_ORDER_MAX] = {
        [TOP_ORDER_CURRENT] = "current",
        [TOP_ORDER_PEAK] = "peak",
        [TOP_ORDER_PATH] = "path",
        [TOP_ORDER_EVENTS] = "events",
};

TopOrder top_order_from_string(const char *s) {
        for (size_t i = 0; s && i < ELEMENTSOF(order_names); i++)
                if (strcmp(s, order_names[i]) == 0)
                        return (TopOrder) i;
        return _TOP_ORDER_INVALID;
}

const char *top_order_to_string(TopOrder o) {
        return o >= 0 && o < _TOP_ORDER_MAX ? order_names[o] : NULL;
}

static int path_depth(const char *path) {
        int d = 0;

        for (const char *p = path; *p; p++)
                d += *p == '/' && p[1];
        return d;
}

static uint64_t event_count(const memacct_group_info *g, const char *name) {
        for (size_t i = 0; i < g->n_events; i++)
                if (strcmp(g->events[i].name, name) == 0)
                        return g->events[i].value;
        return 0;
}

static void row_init(TopRow *row, const memacct_group_info *g, int depth, ssize_t parent) {
        *row = (TopRow) {
                .g = g,
                .depth = depth,
                .parent = parent,
                .ev_max = event_count(g, "max"),
                .ev_oom = event_count(g, "oom"),
                .ev_high = event_count(g, "high"),
        };
}

void top_snapshot_done(TopSnapshot *s) {
        memacct_group_info_free(s->top);
        memacct_group_list_free(s->list);
        free(s->rows);
        free(s->shown);
        free(s->views);
        free(s->scratch);
        *s = (TopSnapshot) {};
}

/*
 * The rows from the pre-order list: a group's parent is the last row seen
 * one level up (stack[] by depth). A group the list names twice (the root,
 * which it may or may not repeat) is skipped.
 */
static int snapshot_build(TopSnapshot *s, const char *region) {
        size_t n = memacct_group_list_size(s->list);
        int base = path_depth(s->top->path);
        _cleanup_free_ ssize_t *stack = NULL;
        const memacct_group_info *top = s->top;
        size_t stack_size = 1;

        if (region) {
                s->views = calloc(n + 1, sizeof(*s->views));
                s->scratch = calloc(8 * (n + 1), sizeof(*s->scratch));
                if (!s->views || !s->scratch)
                        return -ENOMEM;
                region_view(s->top, region, &s->views[n], s->scratch + 8 * n);
                top = &s->views[n];
        }
        s->rows = calloc(n + 1, sizeof(*s->rows));
        s->shown = calloc(n + 1, sizeof(*s->shown));
        for (size_t i = 0; i < n; i++)
                stack_size = MAX(stack_size,
                                 (size_t) MAX(1, path_depth(memacct_group_list_get(s->list, i)->path) - base + 1));
        stack = calloc(stack_size, sizeof(*stack));
        if (!s->rows || !s->shown || !stack)
                return -ENOMEM;
        row_init(&s->rows[0], top, 0, -1);
        stack[0] = 0;
        s->n_rows = 1;
        for (size_t i = 0; i < n; i++) {
                const memacct_group_info *g = memacct_group_list_get(s->list, i);
                int depth = path_depth(g->path) - base;

                if (depth <= 0 || strcmp(g->path, s->top->path) == 0)
                        continue;
                if (region) {
                        region_view(g, region, &s->views[i], s->scratch + 8 * i);
                        g = &s->views[i];
                }
                row_init(&s->rows[s->n_rows], g, depth, stack[depth - 1]);
                stack[depth] = (ssize_t) s->n_rows++;
        }
        for (size_t i = 0; i < s->n_rows; i++) {
                s->shown[i] = i;
                s->mirrors |= s->rows[i].g->kernel_current != MEMACCT_NO_KERNEL_CURRENT;
        }
        return 0;
}

int top_snapshot_fetch(memacct *m, const char *path, const char *region, TopSnapshot *ret) {
        int r;

        *ret = (TopSnapshot) {};
        /* Exact: the stats flushed first, so that SESSION (current less
         * kept, from the stats) is what show says; the flush covers the
         * list read right after it. */
        r = memacct_get_group(m, path, NULL, MEMACCT_EXACT, &ret->top);
        if (r >= 0)
                r = memacct_list_groups(m, path, MEMACCT_RECURSIVE, &ret->list);
        if (r >= 0)
                r = snapshot_build(ret, region_is_memory(region) ? NULL : region);
        return r < 0 ? r : 0;
}

static int cmp_u64_desc(uint64_t a, uint64_t b) {
        return a < b ? 1 : a > b ? -1 : 0;
}

/* Two siblings by the key; ties by path, so that the order is total. */
static int siblings_cmp(const TopRow *a, const TopRow *b, TopOrder order) {
        int c = 0;

        switch (order) {
        case TOP_ORDER_CURRENT:
                c = cmp_u64_desc(a->g->current, b->g->current);
                break;
        case TOP_ORDER_PEAK:
                c = cmp_u64_desc(a->g->peak, b->g->peak);
                break;
        case TOP_ORDER_EVENTS:
                c = cmp_u64_desc(a->ev_max + a->ev_oom + a->ev_high,
                                 b->ev_max + b->ev_oom + b->ev_high);
                break;
        default:
                break;
        }
        return c != 0 ? c : strcmp(a->g->path, b->g->path);
}

typedef struct SortContext {
        const TopRow *rows;
        TopOrder order;
} SortContext;

/*
 * Tree order: lift the deeper row to the other's depth (an ancestor comes
 * first), then both to the children of their closest common ancestor,
 * and compare those siblings.
 */
static int rows_cmp(const void *pa, const void *pb, void *userdata) {
        const SortContext *ctx = userdata;
        const TopRow *rows = ctx->rows;
        ssize_t a = (ssize_t) *(const size_t *) pa, b = (ssize_t) *(const size_t *) pb;

        if (a == b)
                return 0;
        while (rows[a].depth > rows[b].depth) {
                if (rows[a].parent == b)
                        return 1;
                a = rows[a].parent;
        }
        while (rows[b].depth > rows[a].depth) {
                if (rows[b].parent == a)
                        return -1;
                b = rows[b].parent;
        }
        while (rows[a].parent != rows[b].parent) {
                a = rows[a].parent;
                b = rows[b].parent;
        }
        return siblings_cmp(&rows[a], &rows[b], ctx->order);
}

void top_snapshot_sort(TopSnapshot *s, TopOrder order) {
        SortContext ctx = { .rows = s->rows, .order = order };

        if (s->n_rows > 1)
                qsort_r(s->shown, s->n_rows, sizeof(*s->shown), rows_cmp, &ctx);
}

size_t top_snapshot_count(const TopSnapshot *s, int max_depth) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_rows; i++)
                n += max_depth < 0 || s->rows[i].depth <= max_depth;
        return n;
}

char *top_ellipsize(char *buf, size_t size, const char *s, size_t width) {
        size_t n = strlen(s), head, tail;

        width = MIN(width, size - 1);
        if (n <= width) {
                memcpy(buf, s, n + 1);
                return buf;
        }
        /* ASCII dots, not U+2026: widths here are counted in bytes, and
         * memacctctl sets no locale that would tell how a terminal draws it. */
        if (width < 5) {
                memcpy(buf, s, width);
                buf[width] = 0;
                return buf;
        }
        head = (width - 3 + 1) / 2;
        tail = width - 3 - head;
        memcpy(buf, s, head);
        memcpy(buf + head, "...", 3);
        memcpy(buf + head + 3, s + n - tail, tail + 1);
        return buf;
}

/* @v in units (output_format_size()), or bytes with --raw; "max" for an
 * unlimited @limit. Return: @buf. */
static const char *format_size(char buf[static 24], uint64_t v, bool limit, bool raw) {
        if (limit && v == MEMACCT_UNLIMITED)
                return "max";
        if (!raw)
                return output_format_size(buf, v);
        snprintf(buf, 24, "%" PRIu64, v);
        return buf;
}

static const char *format_percent(char buf[static 24], uint64_t current, uint64_t max) {
        if (max == MEMACCT_UNLIMITED || max == 0)
                return "-";
        snprintf(buf, 24, "%.1f", (double) current * 100.0 / (double) max);
        return buf;
}

/* The name column: indented by depth; the root by its whole path. */
static void row_name(char *buf, size_t size, const TopRow *row) {
        const char *base = strrchr(row->g->path, '/');

        snprintf(buf, size, "%*s%s", 2 * row->depth, "",
                 row->depth == 0 || !base ? row->g->path : base + 1);
}

/* Column widths: sizes, then the other columns, as the mode needs. */
typedef struct Widths {
        int name, size, pct, ev, sess;
} Widths;

static Widths table_widths(const TopSnapshot *s, const TopView *v) {
        Widths w = { .size = v->raw ? 14 : 8, .pct = 6, .ev = 7, .sess = 5 };
        int fixed = 6 * (w.size + 1) + (w.pct + 1) + 3 * (w.ev + 1) + (w.sess + 1) +
                    (s->mirrors ? w.size + 1 : 0);

        w.name = (int) strlen("GROUP");
        if (v->width == 0) {
                /* Batch output is for reading back: a name is never cut. */
                for (size_t i = 0; i < s->n_rows; i++) {
                        char name[1024];

                        if (v->max_depth >= 0 && s->rows[i].depth > v->max_depth)
                                continue;
                        row_name(name, sizeof(name), &s->rows[i]);
                        w.name = MAX(w.name, (int) strlen(name));
                }
        } else
                w.name = MAX(16, (int) v->width - fixed);
        return w;
}

/* One line, cut to the terminal's width (0: not cut), then @v->eol. */
static void put_line(FILE *f, const TopView *v, char *line) {
        if (v->width > 0 && strlen(line) > v->width)
                line[v->width] = 0;
        fputs(line, f);
        fputs(v->eol, f);
}

static void print_row(FILE *f, const TopRow *row, const TopView *v, const Widths *w,
                      bool mirrors) {
        char name[1024], shortened[1024], line[2048], cur[24], peak[24], max[24], high[24],
                pct[24], kept[24], session[24], kernel[24];
        const memacct_group_info *g = row->g;
        int n;

        row_name(name, sizeof(name), row);
        if (v->width > 0)
                top_ellipsize(shortened, sizeof(shortened), name, (size_t) w->name);
        else
                memcpy(shortened, name, strlen(name) + 1);
        n = snprintf(line, sizeof(line),
                     "%-*s %*s %*s %*s %*s %*s %*" PRIu64 " %*" PRIu64 " %*" PRIu64 " %*" PRIu32 " %*s %*s",
                     w->name, shortened, w->size, format_size(cur, g->current, false, v->raw),
                     w->size, format_size(peak, g->peak, false, v->raw), w->size,
                     format_size(max, g->max, true, v->raw), w->pct,
                     format_percent(pct, g->current, g->max), w->size,
                     format_size(high, g->high, true, v->raw), w->ev, row->ev_max, w->ev,
                     row->ev_oom, w->ev, row->ev_high, w->sess, g->nr_sessions, w->size,
                     format_size(kept, g->kept, false, v->raw), w->size,
                     format_size(session, g->session, false, v->raw));
        if (mirrors && n > 0 && (size_t) n < sizeof(line))
                snprintf(line + n, sizeof(line) - (size_t) n, " %*s", w->size,
                         g->kernel_current == MEMACCT_NO_KERNEL_CURRENT
                                 ? "-"
                                 : format_size(kernel, g->kernel_current, false, v->raw));
        put_line(f, v, line);
}

void top_print_table(FILE *f, const TopSnapshot *s, const TopView *v) {
        Widths w = table_widths(s, v);
        char line[2048];
        size_t printed = 0;
        int n;

        n = snprintf(line, sizeof(line), "%-*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s", w.name,
                     "GROUP", w.size, "CURRENT", w.size, "PEAK", w.size, "MAX", w.pct, "%MAX",
                     w.size, "HIGH", w.ev, "E:MAX", w.ev, "E:OOM", w.ev, "E:HIGH", w.sess, "SESS",
                     w.size, "KEPT", w.size, "SESSION");
        if (s->mirrors && n > 0 && (size_t) n < sizeof(line))
                snprintf(line + n, sizeof(line) - (size_t) n, " %*s", w.size, "KERNEL");
        put_line(f, v, line);
        for (size_t i = 0; i < s->n_rows && (v->height == 0 || printed < v->height); i++) {
                const TopRow *row = &s->rows[s->shown[i]];

                if (v->max_depth >= 0 && row->depth > v->max_depth)
                        continue;
                print_row(f, row, v, &w, s->mirrors);
                printed++;
        }
}
