/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Core benchmark: the four fast paths against their pre-patch code, and
 * the core at scale.
 *
 * This program is linked twice, against the core as it is (bench-core)
 * and against the core built with -DMEMACCT_BEFORE_PATCH
 * (bench-core-before); run-core.sh runs both alternately and compares
 * medians. Every measurement prints one line,
 *
 *     <name> <threads> <value> [wall=<ns> cpu=<ns>]
 *
 * where the value is nanoseconds per operation unless the name says
 * otherwise (see bench-core-scale.c for the measurements of size). An
 * operation is one charge plus one uncharge, counted as the calls a
 * thread made divided by two; with several threads the value is the time
 * one thread takes per operation (the mean over the threads of time /
 * operations), as the per-operation figures of docs/performance.md are.
 * The value is the threads' CPU time (--wall: the elapsed time); wall=
 * and cpu= give both (bench-core-lib.c says how they are taken).
 *
 * The before binary has all four fast paths reverted at once, so each
 * workload is built to put weight on its own path and little on the
 * others, and the lines form a ladder to read differences off:
 *
 *   fp2_stats      kept charges of 4 KiB (group_charge_kept), one group
 *                  per thread, nobody flushing: the stats batch and none
 *                  of the session code (fast paths 3 and 4).
 *   fp2_batch      the same with 65 units a charge, so that every update
 *                  passes MEM_STAT_BATCH and reports to the flush pressure
 *                  (the old code's atomic add on every update).
 *   fp3_moving     session charges of an item with no RSS member into one
 *                  group per thread: fast path 3 (plus fast path 2 at one
 *                  report per 32 operations).
 *   fp1_propagate  as fp3_moving, under a parent with min and low set
 *                  whose usage stays above them: fast path 1 on top.
 *   fp4_rss        as fp3_moving, with anon charges of one shared client
 *                  (same pid): fast path 4 on top. The RSS delta makes a
 *                  wave of 7 calls (4 pages charged one by one, then 1, 1
 *                  and 2 released): with a period that divides the old
 *                  code's sync interval (66 calls; 2-call pairs and 3-call
 *                  waves both do) every sync would find the delta at the
 *                  same phase, 0, and fold nothing. 7 divides none of 63
 *                  to 69, so the phase walks and the old code folds at
 *                  every sync, as a real workload would.
 *   fp4_pids       fp4_rss with one client per thread (different pids).
 *   charge_depthN  fp3_moving's loop on one thread, N levels below "/".
 *   stock_*        charge_depth3 and siblings with the core's charge stock on
 *                  (stock.h): each thread's charges from its own stock.
 *   region_*       charge_depth3 by session_charge() (memory) and by
 *                  session_charge_region() (a device region), and their ratio.
 *   siblings       fp3_moving's loop on 3-level groups that share their
 *                  two ancestors below "/" (/sp/sq/sN): 1 thread, then 2
 *                  threads each on its own sibling, and siblings_ratio,
 *                  the 2-thread cost per thread over the 1-thread cost,
 *                  both measured back to back. Every level of the walk
 *                  but the leaf is shared, so the 2-thread line says what
 *                  sharing the parents' counters costs.
 *   protected_siblings  the same under a parent with min and low set and
 *                  held above them (fast path 1's case, as fp1_propagate).
 *   mem_per_group, flush_sparse, million: bench-core-scale.c.
 *
 * Every charge walks up to "/", so with 2 threads the root's usage line
 * is contended in every workload: the 2-thread figures are dominated by
 * it, and compare variants, not workloads.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-core-floor.h"
#include "bench-core-lib.h"
#include "charge.h"
#include "region.h"
#include "session.h"

static const char *arg_only;

static bool selected(const char *name) {
        return !arg_only || strncmp(name, arg_only, strlen(arg_only)) == 0;
}

/* ---- the measurements ------------------------------------------------- */

static void bench_fp1(unsigned nthreads) {
        MemCore *core = core_make(1024);
        Run run = { .name = "fp1_propagate", .nthreads = nthreads, .core = core,
                    .kind = LOOP_SESSION, .item = item_plain, .bytes = PAGE };
        MemGroup *p, *c0;

        /* /p protects 1 MiB and holds 64 MiB: its protected usage never
         * changes, which is the case fast path 1 makes a plain load. */
        p = group_make(core, "/p");
        group_set_min(p, 1 << 20);
        group_set_low(p, 1 << 20);
        c0 = group_make(core, "/p/c0");
        check("group_charge_kept", group_charge_kept(core, c0, 64 << 20, item_plain, 0, NULL));
        for (unsigned i = 0; i < nthreads; i++) {
                snprintf(run.paths[i], sizeof(run.paths[i]), "/p/c%u", i);
                run.pids[i] = 10000 + (pid_t) i;
        }
        (void) run_execute(&run);
        check("group_uncharge_kept", group_uncharge_kept(core, c0, 64 << 20, item_plain));
        group_unref(c0);
        group_unref(p);
        core_done(core);
}

static void bench_fp2(const char *name, unsigned nthreads, uint64_t bytes) {
        MemCore *core = core_make(1024);
        Run run = { .name = name, .nthreads = nthreads, .core = core, .kind = LOOP_KEPT,
                    .item = item_plain, .bytes = bytes };

        /* Nothing reads or flushes: the pressure passes the threshold in
         * the first milliseconds and stays there. */
        for (unsigned i = 0; i < nthreads; i++)
                snprintf(run.paths[i], sizeof(run.paths[i]), "/s%u", i);
        (void) run_execute(&run);
        core_done(core);
}

static void bench_fp3(unsigned nthreads) {
        MemCore *core = core_make(1024);
        Run run = { .name = "fp3_moving", .nthreads = nthreads, .core = core,
                    .kind = LOOP_SESSION, .item = item_plain, .bytes = PAGE };

        for (unsigned i = 0; i < nthreads; i++) {
                snprintf(run.paths[i], sizeof(run.paths[i]), "/m%u", i);
                run.pids[i] = 10000 + (pid_t) i;
        }
        (void) run_execute(&run);
        core_done(core);
}

static void bench_fp4(const char *name, unsigned nthreads, bool same_pid) {
        MemCore *core = core_make(1024);
        Run run = { .name = name, .nthreads = nthreads, .core = core,
                    .kind = LOOP_SESSION_WAVE, .item = MEM_STAT_ANON, .bytes = PAGE };

        for (unsigned i = 0; i < nthreads; i++) {
                snprintf(run.paths[i], sizeof(run.paths[i]), "/r%u", i);
                run.pids[i] = 20000 + (same_pid ? 0 : (pid_t) i);
        }
        (void) run_execute(&run);
        core_done(core);
}

static void bench_depth(unsigned depth) {
        MemCore *core = core_make(1024);
        char name[32];
        Run run = { .name = name, .nthreads = 1, .core = core, .kind = LOOP_SESSION,
                    .item = item_plain, .bytes = PAGE, .pids = { 10000 } };
        size_t len = 0;

        snprintf(name, sizeof(name), bench_charge_stock ? "stock_depth%u" : "charge_depth%u", depth);
        for (unsigned d = 1; d <= depth; d++) {
                len += (size_t) snprintf(run.paths[0] + len, sizeof(run.paths[0]) - len, "/d%u",
                                         d);
                if (d < depth)
                        group_unref(group_make(core, run.paths[0]));
        }
        (void) run_execute(&run);
        core_done(core);
}


/*
 * 3-level siblings /sp/sq/sN, 1 thread then 2, back to back in one core
 * each; with @protect, /sp/sq has min and low of 1 MiB and holds 64 MiB
 * in /sp/sq/hold, so that its protected usage never changes.
 */
static RunResult bench_sib_one(const char *name, unsigned nthreads, bool protect) {
        MemCore *core = core_make(1024);
        Run run = { .name = name, .nthreads = nthreads, .core = core, .kind = LOOP_SESSION,
                    .item = item_plain, .bytes = PAGE };
        MemGroup *p, *hold = NULL;
        RunResult res;

        group_unref(group_make(core, "/sp"));
        p = group_make(core, "/sp/sq");
        if (protect) {
                group_set_min(p, 1 << 20);
                group_set_low(p, 1 << 20);
                hold = group_make(core, "/sp/sq/hold");
                check("group_charge_kept",
                      group_charge_kept(core, hold, 64 << 20, item_plain, 0, NULL));
        }
        for (unsigned i = 0; i < nthreads; i++) {
                snprintf(run.paths[i], sizeof(run.paths[i]), "/sp/sq/s%u", i);
                run.pids[i] = 10000 + (pid_t) i;
        }
        res = run_execute(&run);
        if (hold) {
                check("group_uncharge_kept",
                      group_uncharge_kept(core, hold, 64 << 20, item_plain));
                group_unref(hold);
        }
        group_unref(p);
        core_done(core);
        return res;
}

/*
 * A device region's charge against memory's, in one run: the same
 * 3-level session charge+uncharge, by session_charge() and by
 * session_charge_region(). The region path adds the group's slot table
 * and the region's key check; its target is memory's cost within 5 %.
 */
static void bench_region(void) {
        MemCore *core = core_make(1024);
        Run mem = { .name = "region_memory3", .nthreads = 1, .core = core, .kind = LOOP_SESSION,
                    .item = item_plain, .bytes = PAGE, .pids = { 10000 }, .paths = { "/d1/d2/d3" } };
        Run dev = { .name = "region_device3", .nthreads = 1, .core = core, .kind = LOOP_SESSION_REGION,
                    .bytes = PAGE, .pids = { 10001 }, .paths = { "/e1/e2/e3" } };
        RunResult m, d;

        group_unref(group_make(core, "/d1"));
        group_unref(group_make(core, "/d1/d2"));
        group_unref(group_make(core, "/e1"));
        group_unref(group_make(core, "/e1/e2"));
        dev.region = core_region_add(core, "gpu0", UINT64_MAX);
        check("core_region_add", dev.region < 0 ? dev.region : 0);
        m = run_execute(&mem);
        d = run_execute(&dev);
        printf("region_ratio 1 %.3f\n", d.value / m.value);
        core_done(core);
}

static void bench_sib(const char *name, bool protect);

/*
 * The core's charge stock (stock.h, the kernel's memcg_stock): the
 * 3-level session charge+uncharge of charge_depth3, and the siblings
 * under a shared parent on 1 and 2 threads, with a stock per thread. The
 * before variant has no stock: its lines are the same loops without.
 */
static void bench_stock(void) {
        bench_charge_stock = true;
        bench_depth(3);
        bench_sib("stock_siblings", false);
        bench_charge_stock = false;
}

static void bench_sib(const char *name, bool protect) {
        RunResult one = bench_sib_one(name, 1, protect);
        RunResult two = bench_sib_one(name, 2, protect);

        printf("%s_ratio 2 %.3f wall=%.3f cpu=%.3f\n", name, two.value / one.value,
               two.wall_ns / one.wall_ns, two.cpu_ns / one.cpu_ns);
        fflush(stdout);
}

static void bench_siblings_all(void) {
        bench_sib("siblings", false);
}

static void bench_protected_siblings_all(void) {
        bench_sib("protected_siblings", true);
}
/* ---- main ------------------------------------------------------------- */

static void bench_fp1_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_fp1(t);
}

static void bench_fp2_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_fp2("fp2_stats", t, PAGE);
}

/* 65 units: every update passes the batch and reports. */
static void bench_fp2_batch_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_fp2("fp2_batch", t, (MEM_STAT_BATCH + 1) * PAGE);
}

static void bench_fp3_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_fp3(t);
}

static void bench_fp4_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_fp4("fp4_rss", t, true);
}

static void bench_fp4_pids(void) {
        bench_fp4("fp4_pids", 2, false);
}

static void bench_depth_all(void) {
        static const unsigned depths[] = { 1, 3, 8 };

        for (unsigned i = 0; i < ELEMENTSOF(depths); i++)
                bench_depth(depths[i]);
}

/* Each entry prints lines whose names start with its name; the names are
 * no prefix of one another, so --only NAME runs exactly one entry. An
 * optional entry runs only when --only names it (--list leaves it out,
 * --list-all does not): a million groups take seconds and a gigabyte. */
static const struct {
        const char *name;
        void (*run)(void);
        bool optional;
} measurements[] = {
        { "fp1_propagate", bench_fp1_all },
        { "fp2_stats", bench_fp2_all },
        { "fp2_batch", bench_fp2_batch_all },
        { "fp3_moving", bench_fp3_all },
        { "fp4_rss", bench_fp4_all },
        { "fp4_pids", bench_fp4_pids },
        { "charge_depth", bench_depth_all },
        { "region", bench_region }, /* region_memory3, region_device3, region_ratio */
        { "stock", bench_stock },   /* stock_depth3, stock_siblings, stock_siblings_ratio */
        { "siblings", bench_siblings_all },                     /* also siblings_ratio */
        { "protected_siblings", bench_protected_siblings_all }, /* and its _ratio */
        { "mem_per_group", bench_mem_all }, /* also _4regions, create_per_group, flush_100k */
        { "flush_sparse", bench_flush_all }, /* also flush_full */
        { "million", bench_million, true },  /* million_groups, _mem_per_group, ... */
        { "floor", bench_floor_all },        /* floor_atomic (and _ratio), floor_clock */
};

static void help(void) {
        printf("Usage: bench-core [--quick] [--only NAME] [--duration MSEC] [--wall] [--fifo]\n"
               "                  [--million-groups N] [--million-sec S] [--verbose]\n"
               "       bench-core --list | --list-all\n\n"
               "Prints \"<name> <threads> <value> [wall=<ns> cpu=<ns>]\" per measurement.\n"
               "--only runs the measurements whose name starts with NAME (see --list;\n"
               "mem_per_group also prints mem_per_group_4regions, create_per_group and\n"
               "flush_100k, flush_sparse also flush_full). --list leaves out the optional ones (--list-all: million,\n"
               "run with --only million; --million-groups, default 1000000, and\n"
               "--million-sec, default 120, bound it). --wall: the value from elapsed time\n"
               "rather than the threads' CPU time. --fifo: measuring threads run under\n"
               "SCHED_FIFO (needs CAP_SYS_NICE), for a machine other work shares.\n"
               "--verbose prints every thread's figures to stderr.\n");
}

static unsigned parse_unsigned(const char *what, const char *s, unsigned min) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end || v < min || v > UINT32_MAX / 2)
                die(what, -EINVAL);
        return (unsigned) v;
}

static void list(bool all) {
        for (size_t i = 0; i < ELEMENTSOF(measurements); i++)
                if (all || !measurements[i].optional)
                        puts(measurements[i].name);
        exit(EXIT_SUCCESS);
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "quick", no_argument, NULL, 'q' },
                { "only", required_argument, NULL, 'o' },
                { "duration", required_argument, NULL, 'd' },
                { "verbose", no_argument, NULL, 'v' },
                { "wall", no_argument, NULL, 'w' },
                { "fifo", no_argument, NULL, 'f' },
                { "list", no_argument, NULL, 'l' },
                { "list-all", no_argument, NULL, 'L' },
                { "million-groups", required_argument, NULL, 'M' },
                { "million-sec", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "qo:d:vwflh", options, NULL)) >= 0)
                switch (c) {
                case 'q':
                        arg_quick = true;
                        arg_duration_ns = 80 * 1000 * 1000ull;
                        arg_warmup_ns = 20 * 1000 * 1000ull;
                        break;
                case 'o':
                        arg_only = optarg;
                        break;
                case 'd':
                        arg_duration_ns = parse_unsigned("--duration", optarg, 1) * 1000 * 1000ull;
                        break;
                case 'v':
                        arg_verbose = true;
                        break;
                case 'w':
                        arg_wall = true;
                        break;
                case 'f':
                        arg_fifo = true;
                        break;
                case 'l':
                case 'L':
                        list(c == 'L');
                        break;
                case 'M':
                        /* 1000 top-level groups, each at least one below it. */
                        arg_million_groups = parse_unsigned("--million-groups", optarg, 2000);
                        break;
                case 'S':
                        arg_million_sec = parse_unsigned("--million-sec", optarg, 1);
                        break;
                case 'h':
                        help();
                        exit(EXIT_SUCCESS);
                default:
                        exit(EXIT_FAILURE);
                }
        if (optind < argc)
                die(argv[optind], -EINVAL);
}

int main(int argc, char *argv[]) {
        parse_argv(argc, argv);
        bench_init();

        for (size_t i = 0; i < ELEMENTSOF(measurements); i++)
                if (selected(measurements[i].name) &&
                    (!measurements[i].optional || arg_only))
                        measurements[i].run();
        return EXIT_SUCCESS;
}
