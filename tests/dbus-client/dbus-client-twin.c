/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Twin trees: a step runs on the socket handle against one tree
 * (trees[0]) and on the bus handle against another of the same shape
 * (trees[1]); T("/x") is the path /x in the tree of the side running. The
 * two results must be equal: the return value (and @want unless it is
 * ANY), the message and the refused path with the tree's name written /T,
 * and whatever the step read. So successes are compared too, without one
 * side's change being what the other side sees.
 *
 * In a child that dropped to another uid (as_nobody() in
 * dbus-client-operations.c), a difference is counted rather than failed:
 * cmocka's fail() must not run there.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#include "bus-test-util.h"
#include "dbus-client-twin.h"

const char *trees[2];
int side;
bool in_child;
unsigned soft_failures;
unsigned compared;

const char *T(const char *suffix) {
        static char buf[16][512];
        static unsigned next;
        char *p = buf[next++ % 16];

        snprintf(p, sizeof(buf[0]), "%s%s", trees[side], suffix);
        return p;
}

/* @s with every occurrence of @tree replaced by "/T", in place. */
static void untree(char *s, const char *tree) {
        size_t n = strlen(tree);
        char *p;

        while ((p = strstr(s, tree)) && (p[n] == 0 || p[n] == '/' || p[n] == ':' || p[n] == ' ' || p[n] == ')' ||
                                         p[n] == ';' || p[n] == '\'')) {
                p[1] = 'T';
                memmove(p + 2, p + n, strlen(p + n) + 1);
        }
}

void differs(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (in_child)
                soft_failures++;
        else
                fail();
}

void result_of(memacct *m, int r, Result *ret) {
        last_error(m, r, ret->error, sizeof(ret->error), ret->refused, sizeof(ret->refused));
        ret->r = r;
        untree(ret->error, trees[side]);
        untree(ret->refused, trees[side]);
}

void same_results(const char *what, const Result *rs, const Result *rb, int want) {
        compared++;
        if (rs->r == rb->r && (want == ANY || rs->r == want) &&
            (rs->r >= 0 || (strcmp(rs->error, rb->error) == 0 && strcmp(rs->refused, rb->refused) == 0)))
                return;
        differs("%s (uid %u):\n  socket %d (%s) refused by %s\n  bus    %d (%s) refused by %s\n  want %d",
                what, (unsigned) geteuid(), rs->r, rs->error, rs->refused, rb->r, rb->error, rb->refused,
                want);
}

static bool counters_same(const memacct_counter *a, size_t na, const memacct_counter *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (strcmp(a[i].name, b[i].name) != 0 || a[i].value != b[i].value)
                        return false;
        return true;
}

/* Group infos of the two trees alike: every member a bus read fills, the
 * stat items only when @stats (over the bus they lag by a flush). */
static bool infos_same(const memacct_group_info *gs, const memacct_group_info *gb, bool stats) {
        char ps[512], pb[512];

        snprintf(ps, sizeof(ps), "%s", gs->path);
        snprintf(pb, sizeof(pb), "%s", gb->path);
        untree(ps, trees[0]);
        untree(pb, trees[1]);
        return strcmp(ps, pb) == 0 && gs->current == gb->current && gs->peak == gb->peak &&
               gs->max == gb->max && gs->high == gb->high && gs->low == gb->low && gs->min == gb->min &&
               gs->effective_min == gb->effective_min && gs->effective_low == gb->effective_low &&
               gs->failcnt == gb->failcnt &&
               /* A mirror's kernel usage is a live sample of the kernel
                * cgroup: the two reads are moments apart. Whether it is a
                * mirror must agree. */
               (gs->kernel_current == MEMACCT_NO_KERNEL_CURRENT) == (gb->kernel_current == MEMACCT_NO_KERNEL_CURRENT) &&
               counters_same(gs->events, gs->n_events, gb->events, gb->n_events) &&
               counters_same(gs->events_local, gs->n_events_local, gb->events_local, gb->n_events_local) &&
               (!stats || counters_same(gs->stat, gs->n_stat, gb->stat, gb->n_stat));
}

static void print_info(const char *who, const memacct_group_info *g) {
        fprintf(stderr, "  %s: %s current %llu peak %llu max %llu high %llu low %llu min %llu emin %llu "
                        "elow %llu failcnt %llu events.max %llu\n",
                who, g->path, (unsigned long long) g->current, (unsigned long long) g->peak,
                (unsigned long long) g->max, (unsigned long long) g->high, (unsigned long long) g->low,
                (unsigned long long) g->min, (unsigned long long) g->effective_min,
                (unsigned long long) g->effective_low, (unsigned long long) g->failcnt,
                (unsigned long long) (g->n_events > 2 ? g->events[2].value : 0));
}

void same_infos(const char *what, memacct_group_info *g[2], bool stats) {
        compared++;
        if (g[0] && g[1] && infos_same(g[0], g[1], stats))
                return;
        if (g[0])
                print_info("socket", g[0]);
        if (g[1])
                print_info("bus", g[1]);
        differs("%s: the group reads differently", what);
}

void same_lists(const char *what, memacct_group_list *l[2], bool stats) {
        size_t n = memacct_group_list_size(l[0]);

        compared++;
        if (!l[0] || !l[1] || memacct_group_list_size(l[1]) != n) {
                differs("%s: %zu groups over the socket, %zu over the bus", what, n,
                        memacct_group_list_size(l[1]));
                return;
        }
        for (size_t i = 0; i < n; i++)
                if (!infos_same(memacct_group_list_get(l[0], i), memacct_group_list_get(l[1], i), stats)) {
                        print_info("socket", memacct_group_list_get(l[0], i));
                        print_info("bus", memacct_group_list_get(l[1], i));
                        differs("%s: group %zu differs", what, i);
                }
}

/* Read @path of both trees (socket exact), waiting for the bus's stat items. */
void same_reads_settled(memacct *s, memacct *b, const char *suffix) {
        uint64_t deadline = now_msec() + WAIT_MSEC;
        memacct_group_info *g[2] = {};

        for (;;) {
                side = 0;
                (void) memacct_get_group(s, T(suffix), NULL, MEMACCT_EXACT, &g[0]);
                side = 1;
                (void) memacct_get_group(b, T(suffix), NULL, 0, &g[1]);
                side = 0;
                if ((g[0] && g[1] && infos_same(g[0], g[1], true)) || now_msec() > deadline)
                        break;
                g[0] = memacct_group_info_free(g[0]);
                g[1] = memacct_group_info_free(g[1]);
                sleep_msec(50);
        }
        same_infos(suffix, g, true);
        memacct_group_info_free(g[0]);
        memacct_group_info_free(g[1]);
}

void same_clients(const char *what, const memacct_client_info c[2]) {
        compared++;
        if (c[0].pid == c[1].pid && c[0].file == c[1].file && c[0].anon == c[1].anon && c[0].swap == c[1].swap &&
            c[0].shmem == c[1].shmem)
                return;
        differs("%s: socket pid %u anon %llu file %llu, bus pid %u anon %llu file %llu", what, c[0].pid,
                (unsigned long long) c[0].anon, (unsigned long long) c[0].file, c[1].pid,
                (unsigned long long) c[1].anon, (unsigned long long) c[1].file);
}
