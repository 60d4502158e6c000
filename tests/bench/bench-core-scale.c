/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-core's measurements of size: memory per group, the cost of a
 * flush with few or all groups updated, and a million groups.
 *
 * The trees are flat and wide: T top-level groups below "/" with the rest
 * spread evenly below them (100 x 1000 for 100,000 groups). The threads
 * that hold per-thread slots are a crew (bench-core-lib.h): the main
 * thread plus idle registered threads, which also do the updates a flush
 * then folds, each its share. Only the core's public API is used
 * (group_create(), group_charge_kept(), core_stats_flush()), so that
 * whatever flush the core is built with is what is measured.
 */

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench-core-lib.h"
#include "charge.h"
#include "region.h"

/* Repeats of a timed flush; the median is printed. */
#define FLUSH_SPARSE_REPEATS 9
#define FLUSH_FULL_REPEATS 3
/* How many groups a sparse flush finds updated. */
#define FLUSH_SPARSE_GROUPS 100

typedef struct Tree {
        MemGroup **groups; /* references, in creation order; NULL: not kept */
        unsigned n;
        uint64_t create_ns;
        bool cut; /* the deadline stopped the creation early */
} Tree;

/*
 * Create up to @n groups, @top of them below "/" and the rest spread
 * evenly below those, stopping at @deadline_ns (CLOCK_MONOTONIC; 0: none).
 * With @keep, a reference to each is kept in tree->groups.
 */
static void tree_build(MemCore *core, unsigned n, unsigned top, bool keep, uint64_t deadline_ns,
                       Tree *tree) {
        unsigned per = n / top - 1;
        uint64_t t0 = now_ns();
        char path[64];

        *tree = (Tree) {};
        if (keep) {
                tree->groups = calloc(n, sizeof(MemGroup *));
                if (!tree->groups)
                        die("calloc", -ENOMEM);
        }
        for (unsigned i = 0; i < top; i++) {
                if (deadline_ns && now_ns() > deadline_ns) {
                        tree->cut = true;
                        break;
                }
                for (unsigned j = 0; j <= per; j++) {
                        if (j == 0)
                                snprintf(path, sizeof(path), "/g%u", i);
                        else
                                snprintf(path, sizeof(path), "/g%u/c%u", i, j - 1);
                        if (keep)
                                tree->groups[tree->n] = group_make(core, path);
                        else
                                check(path, group_create(core, path, 0));
                        tree->n++;
                }
        }
        tree->create_ns = now_ns() - t0;
}

static void tree_done(Tree *tree) {
        for (unsigned i = 0; tree->groups && i < tree->n; i++)
                group_unref(tree->groups[i]);
        free(tree->groups);
        *tree = (Tree) {};
}

/* ---- memory per group ------------------------------------------------- */

/* A kept page charged (or, without @charge, uncharged) in each of the
 * @nkeys regions on every group tree_build() made with @n and @top. */
static void regions_charge_all(MemCore *core, unsigned n, unsigned top, const int *keys, size_t nkeys,
                               bool charge) {
        char path[64];

        for (unsigned i = 0; i < top; i++)
                for (unsigned j = 0; j <= n / top - 1; j++) {
                        MemGroup *g;

                        if (j == 0)
                                snprintf(path, sizeof(path), "/g%u", i);
                        else
                                snprintf(path, sizeof(path), "/g%u/c%u", i, j - 1);
                        g = group_make(core, path);
                        for (size_t k = 0; k < nkeys; k++)
                                check(path, charge ? region_charge_kept(core, g, keys[k], PAGE, 0, NULL)
                                                   : region_uncharge_kept_as(core, g, keys[k], PAGE, false));
                        group_unref(g);
                }
}

static void bench_mem(unsigned nthreads) {
        MemCore *core = core_make(arg_mem_groups + 16);
        uint64_t t0, flush[5];
        size_t before, after;
        Crew crew;
        Tree tree;

        crew_start(&crew, core, nthreads);
        malloc_trim(0);
        before = heap_in_use();
        tree_build(core, arg_mem_groups, 100, false, 0, &tree);
        after = heap_in_use();

        printf("mem_per_group %u %.1f\n", nthreads, (double) (after - before) / tree.n);
        printf("create_per_group %u %.2f\n", nthreads, (double) tree.create_ns / tree.n);
        {
                /* Every group using 4 device regions: a kept page in each
                 * creates its counter sets (and its ancestors'). */
                int keys[4];
                size_t with;

                for (unsigned k = 0; k < ELEMENTSOF(keys); k++) {
                        char name[16];

                        snprintf(name, sizeof(name), "gpu%u", k);
                        keys[k] = core_region_add(core, name, UINT64_MAX);
                        check("core_region_add", keys[k] < 0 ? keys[k] : 0);
                }
                regions_charge_all(core, arg_mem_groups, 100, keys, ELEMENTSOF(keys), true);
                with = heap_in_use();
                printf("mem_per_group_4regions %u %.1f\n", nthreads, (double) (with - before) / tree.n);
                regions_charge_all(core, arg_mem_groups, 100, keys, ELEMENTSOF(keys), false);
                for (unsigned k = 0; k < ELEMENTSOF(keys); k++) {
                        char name[16];

                        snprintf(name, sizeof(name), "gpu%u", k);
                        check("core_region_remove", core_region_remove(core, name));
                }
        }
        {
                /* One group with something to fold each time; a flush
                 * visits every group and every thread's slots anyway. */
                MemGroup *g = group_make(core, "/g0/c0");

                check("group_charge_kept", group_charge_kept(core, g, PAGE, item_plain, 0, NULL));
                for (unsigned k = 0; k < ELEMENTSOF(flush); k++) {
                        check("group_uncharge_kept",
                              group_uncharge_kept(core, g, PAGE, item_plain));
                        check("group_charge_kept",
                              group_charge_kept(core, g, PAGE, item_plain, 0, NULL));
                        t0 = now_ns();
                        core_stats_flush(core, true);
                        flush[k] = now_ns() - t0;
                }
                check("group_uncharge_kept", group_uncharge_kept(core, g, PAGE, item_plain));
                group_unref(g);
                printf("flush_100k %u %.0f\n", nthreads, median_u64(flush, ELEMENTSOF(flush)));
        }
        fflush(stdout);

        crew_stop(&crew);
        core_done(core);
}

void bench_mem_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_mem(t);
}

/* ---- flush: a few groups updated, and all of them --------------------- */

typedef struct Update {
        Tree *tree;
        unsigned count;  /* groups updated */
        unsigned stride; /* the k-th is tree->groups[k * stride] */
        bool charge;     /* a charge of a page, or its uncharge */
} Update;

/* Each member of the crew updates every n-th of the groups, from its own
 * per-thread slots: the flush finds pending deltas in every thread. */
static void update_job(MemCore *core, unsigned idx, unsigned n, void *userdata) {
        const Update *u = userdata;

        for (unsigned k = idx; k < u->count; k += n) {
                MemGroup *g = u->tree->groups[(size_t) k * u->stride];

                if (u->charge)
                        check("group_charge_kept",
                              group_charge_kept(core, g, PAGE, item_plain, 0, NULL));
                else
                        check("group_uncharge_kept",
                              group_uncharge_kept(core, g, PAGE, item_plain));
        }
}

/*
 * @repeats rounds of: the crew updates @count groups (charges in one
 * round, uncharges in the next, so every round leaves a delta to fold),
 * then one forced flush on this thread, timed. Prints the medians; the
 * usage is back to 0 at the end.
 */
static void flush_measure(Crew *crew, Tree *tree, const char *name, unsigned count,
                          unsigned repeats) {
        uint64_t wall[FLUSH_SPARSE_REPEATS], cpu[FLUSH_SPARSE_REPEATS];
        Update u = { .tree = tree, .count = count, .stride = tree->n / count };
        double w, c;

        assert(repeats <= ELEMENTSOF(wall));
        for (unsigned r = 0; r < repeats; r++) {
                uint64_t t0, c0;

                u.charge = r % 2 == 0;
                crew_run(crew, update_job, &u);
                c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                t0 = now_ns();
                core_stats_flush(crew->core, true);
                wall[r] = now_ns() - t0;
                cpu[r] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        }
        if (repeats % 2) {
                u.charge = false;
                crew_run(crew, update_job, &u);
                core_stats_flush(crew->core, true);
        }
        w = median_u64(wall, repeats);
        c = median_u64(cpu, repeats);
        printf("%s %u %.0f wall=%.0f cpu=%.0f\n", name, crew->n, arg_wall ? w : c, w, c);
        fflush(stdout);
}

static void bench_flush(unsigned nthreads) {
        MemCore *core = core_make(arg_mem_groups + 16);
        Crew crew;
        Tree tree;

        crew_start(&crew, core, nthreads);
        tree_build(core, arg_mem_groups, 100, true, 0, &tree);
        /* Whatever the creation left pending is folded before the clock. */
        core_stats_flush(core, true);

        flush_measure(&crew, &tree, "flush_sparse", FLUSH_SPARSE_GROUPS,
                      arg_quick ? 5 : FLUSH_SPARSE_REPEATS);
        flush_measure(&crew, &tree, "flush_full", tree.n, FLUSH_FULL_REPEATS);

        tree_done(&tree);
        crew_stop(&crew);
        core_done(core);
}

void bench_flush_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_flush(t);
}

/* ---- a million groups ------------------------------------------------- */

/*
 * --only million: arg_million_groups groups (1000 x 1000) with 2
 * registered threads, as mem_per_group with ten times as many; the
 * creation stops at arg_million_sec seconds, and million_groups then
 * says how many there are. One forced flush of them all is timed too.
 */
void bench_million(void) {
        uint64_t deadline = now_ns() + (uint64_t) arg_million_sec * 1000000000ull, t0;
        MemCore *core = core_make(arg_million_groups + 16);
        size_t before, after;
        Crew crew;
        Tree tree;

        crew_start(&crew, core, 2);
        malloc_trim(0);
        before = heap_in_use();
        tree_build(core, arg_million_groups, 1000, false, deadline, &tree);
        after = heap_in_use();
        if (tree.cut)
                fprintf(stderr, "bench-core: million: stopped after %u s at %u groups\n",
                        arg_million_sec, tree.n);
        printf("million_groups %u %u\n", crew.n, tree.n);
        printf("million_mem_per_group %u %.1f\n", crew.n, (double) (after - before) / tree.n);
        printf("million_create %u %.2f\n", crew.n, (double) tree.create_ns / tree.n);
        t0 = now_ns();
        core_stats_flush(core, true);
        printf("million_flush %u %.0f\n", crew.n, (double) (now_ns() - t0));
        fflush(stdout);

        crew_stop(&crew);
        core_done(core);
}
