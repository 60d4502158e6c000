/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Twin trees (dbus-client-twin.c): a step runs on the socket handle
 * against trees[0] and on the bus handle against trees[1], a tree of the
 * same shape, and the two results must be equal, successes included.
 * TWIN() makes a step, CHECK() a check that in a child that dropped to
 * another uid (in_child) counts a difference in soft_failures instead of
 * failing. The state is global and the helpers are for one thread: the
 * test's own, or a forked child's.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <unistd.h>

#include <memacct.h>

/* For @want: any result, as long as both sides have the same. */
#define ANY INT_MIN
/* The uid and gid a child drops to. */
#define NOBODY 65534u

extern const char *trees[2];
extern int side;                 /* 0: the socket, 1: the bus */
extern bool in_child;
extern unsigned soft_failures;
extern unsigned compared;        /* the steps compared both ways */

/* One side's result: return value, message and refused path, the tree's name written /T. */
typedef struct Result {
        int r;
        char error[512], refused[512];
} Result;

/** T() - @suffix in the tree of the side running. Return: a buffer, one of 16 reused in turn. */
const char *T(const char *suffix);

/** differs() - report a difference: fail the test, or in a child count it in soft_failures. */
void differs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** result_of() - @m's result @r, with its message and refused path, into @ret. */
void result_of(memacct *m, int r, Result *ret);

/** same_results() - the two sides' results @rs and @rb alike, and @want unless ANY; differs()
 * otherwise, saying @what. */
void same_results(const char *what, const Result *rs, const Result *rb, int want);

/** same_infos() - the two sides' group infos @g alike, the stat items only when @stats (over the
 * bus they lag by a flush); differs() otherwise. */
void same_infos(const char *what, memacct_group_info *g[2], bool stats);

/** same_lists() - the two sides' group lists @l alike, group by group, as same_infos(). */
void same_lists(const char *what, memacct_group_list *l[2], bool stats);

/** same_reads_settled() - read @suffix of both trees (socket exact), waiting up to WAIT_MSEC for
 * the bus's stat items, and compare them as same_infos() with the stat items. */
void same_reads_settled(memacct *s, memacct *b, const char *suffix);

/** same_clients() - the two sides' client infos @c alike; differs() otherwise. */
void same_clients(const char *what, const memacct_client_info c[2]);

/* @call (on a handle named m, with SIDE its side) on both: see above. */
#define TWIN(call, want)                                                  \
        do {                                                              \
                Result res_[2];                                           \
                for (side = 0; side < 2; side++) {                        \
                        memacct *m = side ? b : s;                        \
                        const int SIDE = side;                            \
                        (void) SIDE;                                      \
                        result_of(m, (call), &res_[side]);                \
                }                                                         \
                side = 0;                                                 \
                same_results(#call, &res_[0], &res_[1], (want));          \
        } while (0)

#define CHECK(cond)                                                                      \
        do {                                                                             \
                if (!(cond))                                                             \
                        differs("%s:%d: %s is false (uid %u)", __FILE__, __LINE__, #cond, \
                                (unsigned) geteuid());                                   \
        } while (0)
