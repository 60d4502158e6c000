/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Core benchmark: the four fast paths against their pre-patch code.
 *
 * This one source is linked twice, against the core as it is
 * (bench-core) and against the core built with -DMEMACCT_BEFORE_PATCH
 * (bench-core-before); run-core.sh runs both alternately and compares
 * medians. Every measurement prints one line,
 *
 *     <name> <threads> <value>
 *
 * where the value is nanoseconds per operation unless the name says
 * otherwise (mem_per_group: bytes per group; create_per_group: ns per
 * group_create(); flush_100k: ns per forced flush). An operation is one
 * charge plus one uncharge, counted as the calls a thread made divided by
 * two; with several threads the value is the time one thread takes per
 * operation (the mean over the threads of time / operations), as the
 * per-operation figures of docs/performance.md are.
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
 *   mem_per_group  heap bytes per group over 100,000 groups (100 x 1000
 *                  below "/") with 1 or 2 registered threads, from
 *                  mallinfo2(); with it create_per_group and flush_100k.
 *
 * Every charge walks up to "/", so with 2 threads the root's usage line
 * is contended in every workload: the 2-thread figures are dominated by
 * it, and compare variants, not workloads.
 *
 * Thread i is pinned to the i-th CPU of the affinity mask (modulo its
 * size) and registers with the core; every measurement gets a fresh core
 * (registrations take per-thread slots that are never given back). Each
 * measurement warms up, then runs for a fixed time by CLOCK_MONOTONIC;
 * the time per operation is the thread's CPU time over that span
 * (CLOCK_THREAD_CPUTIME_ID), which equals the elapsed time on an idle
 * machine and leaves out the time another process had the CPU on a busy
 * one (--wall: the elapsed time instead).
 */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "charge.h"
#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

#define MAX_WORKERS 8
#define PAGE 4096u
/* Calls a worker makes between two looks at the clock. */
#define CALLS_PER_CHECK 384u
/* Attempts at a measurement whose workers had to share their CPUs, and
 * the share of wall time on the CPU below which an attempt is retried. */
#define RUN_ATTEMPTS 2
#define RUN_ON_CPU_MIN 0.9

static uint64_t arg_duration_ns = 300 * 1000 * 1000ull;
static uint64_t arg_warmup_ns = 60 * 1000 * 1000ull;
static unsigned arg_mem_groups = 100000;
static const char *arg_only;
static bool arg_verbose;
static bool arg_wall;
static bool arg_fifo;

static cpu_set_t cpus_allowed;
static unsigned ncpus;
/* An item that feeds no RSS member: fast path 4 stays out of the way. */
static MemStatItem item_plain;

static void die(const char *what, int r) {
        fprintf(stderr, "bench-core: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(EXIT_FAILURE);
}

static void check(const char *what, int r) {
        if (r < 0)
                die(what, r);
}

static uint64_t clock_ns(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static uint64_t now_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}

static long nivcsw_self(void) {
        struct rusage ru;

        return getrusage(RUSAGE_THREAD, &ru) < 0 ? 0 : ru.ru_nivcsw;
}

static bool selected(const char *name) {
        return !arg_only || strncmp(name, arg_only, strlen(arg_only)) == 0;
}

static void pin_to(unsigned i) {
        cpu_set_t set;
        unsigned k = i % ncpus, seen = 0;

        CPU_ZERO(&set);
        for (unsigned c = 0; c < CPU_SETSIZE; c++) {
                if (!CPU_ISSET(c, &cpus_allowed))
                        continue;
                if (seen++ == k) {
                        CPU_SET(c, &set);
                        break;
                }
        }
        check("pthread_setaffinity_np",
              -pthread_setaffinity_np(pthread_self(), sizeof(set), &set));
}

/*
 * --fifo: run a worker under SCHED_FIFO, so that other processes on a
 * shared machine do not take its CPU while it measures. A measurement
 * lasts well under the kernel's real-time throttle (95 % of each second by
 * default), so nothing else starves for long. Without the privilege the
 * worker goes on as it is, and says so once.
 */
static void fifo_enter(void) {
        static atomic_bool warned;
        struct sched_param p = { .sched_priority = 1 };
        int r;

        if (!arg_fifo)
                return;
        r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
        if (r != 0 && !atomic_exchange(&warned, true))
                fprintf(stderr, "bench-core: --fifo: %s, going on without it\n", strerror(r));
}

static MemCore *core_make(unsigned max_groups) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core;

        cfg.max_groups = max_groups;
        /* Registrations are never given back: the main thread and every
         * worker of every attempt. */
        cfg.max_threads = 1 + MAX_WORKERS * RUN_ATTEMPTS;
        check("core_new", core_new(&cfg, &core));
        check("core_thread_register", core_thread_register(core));
        return core;
}

/*
 * core_free() runs its last lookups in an RCU read-side section, which
 * protects nothing in a thread that is not registered: liburcu's hash
 * table worker, still shrinking the table after the deletions, frees
 * bucket arrays under it. So the caller stays registered until the core
 * is gone; core_thread_unregister() only compares the pointer.
 */
static void core_done(MemCore *core) {
        core_free(core);
        core_thread_unregister(core);
}

static MemGroup *group_make(MemCore *core, const char *path) {
        MemGroup *g;
        int r = group_create(core, path, 0);

        if (r < 0 && r != -EEXIST)
                die(path, r);
        check(path, group_get(core, path, &g));
        return g;
}

/* ---- timed loops ------------------------------------------------------ */

typedef enum LoopKind {
        LOOP_SESSION,   /* session_charge + session_uncharge of bytes */
        LOOP_KEPT,      /* group_charge_kept + group_uncharge_kept of bytes */
        LOOP_SESSION_WAVE, /* charge 4 pages one by one, uncharge 1, 1, 2 */
} LoopKind;

typedef struct Run Run;

typedef struct Worker {
        Run *run;
        unsigned idx;
        pthread_t tid;
        MemGroup *g;
        MemSession *s;
        uint64_t calls;
        uint64_t ns;
        uint64_t cpu_ns;  /* CPU time of the thread over the same span */
        long nivcsw;      /* and its involuntary context switches */
} Worker;

struct Run {
        const char *name;
        unsigned nthreads;
        MemCore *core;
        LoopKind kind;
        MemStatItem item;
        uint64_t bytes;
        pid_t pids[MAX_WORKERS];
        char paths[MAX_WORKERS][64];
        pthread_barrier_t barrier;
        Worker workers[MAX_WORKERS];
};

/* One batch of calls; returns the number made. Errors are fatal: a refused
 * charge would turn the benchmark into one of the error path. */
static uint64_t loop_batch(Run *run, Worker *w) {
        MemCore *core = run->core;
        uint64_t b = run->bytes;
        MemStatItem item = run->item;
        unsigned i;

        switch (run->kind) {
        case LOOP_SESSION:
                for (i = 0; i < CALLS_PER_CHECK / 2; i++) {
                        check("session_charge", session_charge(w->s, b, item, 0, NULL));
                        check("session_uncharge", session_uncharge(w->s, b, item));
                }
                return CALLS_PER_CHECK;
        case LOOP_KEPT:
                for (i = 0; i < CALLS_PER_CHECK / 2; i++) {
                        check("group_charge_kept",
                              group_charge_kept(core, w->g, b, item, 0, NULL));
                        check("group_uncharge_kept", group_uncharge_kept(core, w->g, b, item));
                }
                return CALLS_PER_CHECK;
        case LOOP_SESSION_WAVE:
                for (i = 0; i < CALLS_PER_CHECK / 7; i++) {
                        for (unsigned k = 0; k < 4; k++)
                                check("session_charge", session_charge(w->s, b, item, 0, NULL));
                        check("session_uncharge", session_uncharge(w->s, b, item));
                        check("session_uncharge", session_uncharge(w->s, b, item));
                        check("session_uncharge", session_uncharge(w->s, 2 * b, item));
                }
                return 7 * (CALLS_PER_CHECK / 7);
        }
        abort();
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        Run *run = w->run;
        uint64_t t0, t, end, cpu0, calls = 0;
        long csw0;

        pin_to(w->idx);
        fifo_enter();
        check("core_thread_register", core_thread_register(run->core));
        if (run->kind != LOOP_KEPT) {
                check("session_new", session_new(run->core, run->pids[w->idx], getuid(),
                                                 getgid(), &w->s));
                check("session_attach", session_attach(w->s, w->g));
        }

        pthread_barrier_wait(&run->barrier);
        end = now_ns() + arg_warmup_ns;
        do
                (void) loop_batch(run, w);
        while (now_ns() < end);

        /* Every thread warm before any starts the clock. */
        pthread_barrier_wait(&run->barrier);
        csw0 = nivcsw_self();
        cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        t0 = now_ns();
        end = t0 + arg_duration_ns;
        do {
                calls += loop_batch(run, w);
                t = now_ns();
        } while (t < end);
        w->calls = calls;
        w->ns = t - t0;
        w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        w->nivcsw = nivcsw_self() - csw0;

        /* Nobody tears down while another thread still measures. */
        pthread_barrier_wait(&run->barrier);
        w->s = session_free(w->s);
        core_thread_unregister(run->core);
        return NULL;
}

/* The smallest share of the wall time any worker spent on its CPU. */
static double run_on_cpu(const Run *run) {
        double min = 1;

        for (unsigned i = 0; i < run->nthreads; i++) {
                const Worker *w = &run->workers[i];

                min = MIN(min, (double) w->cpu_ns / (double) w->ns);
        }
        return min;
}

static double run_ns_per_op(const Run *run) {
        double sum = 0;

        for (unsigned i = 0; i < run->nthreads; i++) {
                const Worker *w = &run->workers[i];
                double ns_op = (double) (arg_wall ? w->ns : w->cpu_ns) / ((double) w->calls / 2);

                sum += ns_op;
                if (arg_verbose)
                        fprintf(stderr,
                                "bench-core: %s %u: thread %u: %.2f ns/op, on CPU %.1f%% of "
                                "the time, %ld involuntary switches\n",
                                run->name, run->nthreads, i, ns_op,
                                100.0 * (double) w->cpu_ns / (double) w->ns, w->nivcsw);
        }
        return sum / run->nthreads;
}

/* Start the workers on run->paths and wait for them. */
static void run_once(Run *run) {
        check("pthread_barrier_init", -pthread_barrier_init(&run->barrier, NULL, run->nthreads));
        for (unsigned i = 0; i < run->nthreads; i++) {
                Worker *w = &run->workers[i];

                *w = (Worker) { .run = run, .idx = i };
                w->g = group_make(run->core, run->paths[i]);
                check("pthread_create", -pthread_create(&w->tid, NULL, worker_main, w));
        }
        for (unsigned i = 0; i < run->nthreads; i++) {
                pthread_join(run->workers[i].tid, NULL);
                run->workers[i].g = group_unref(run->workers[i].g);
        }
        pthread_barrier_destroy(&run->barrier);
}

/*
 * Measure and print. A worker that shares its CPU with another process
 * measures less well: its thread CPU time leaves the other process out,
 * but with two workers the one still running meanwhile meets less
 * contention (and with --wall the waiting one counts the other process
 * in). Such an attempt is repeated (up to RUN_ATTEMPTS in all), the one
 * whose workers were on their CPUs the most is kept, and a warning goes to
 * stderr if even that one was disturbed. Stdout stays one line per
 * measurement.
 */
static void run_execute(Run *run) {
        double best_ns = 0, best_on_cpu = -1;

        for (unsigned a = 0; a < RUN_ATTEMPTS && best_on_cpu < RUN_ON_CPU_MIN; a++) {
                double ns, on_cpu;

                /* Real-time threads get 95 % of each second: leave the
                 * rest to others between runs, or the kernel's throttle
                 * takes it in the middle of one. */
                if (arg_fifo)
                        nanosleep(&(struct timespec) { .tv_nsec = 80 * 1000 * 1000 }, NULL);
                run_once(run);
                ns = run_ns_per_op(run);
                on_cpu = run_on_cpu(run);
                if (on_cpu > best_on_cpu) {
                        best_on_cpu = on_cpu;
                        best_ns = ns;
                }
        }
        if (best_on_cpu < RUN_ON_CPU_MIN)
                fprintf(stderr,
                        "bench-core: %s %u: disturbed: a worker on its CPU %.0f%% of the time\n",
                        run->name, run->nthreads, 100 * best_on_cpu);
        printf("%s %u %.2f\n", run->name, run->nthreads, best_ns);
        fflush(stdout);
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
        run_execute(&run);
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
        run_execute(&run);
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
        run_execute(&run);
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
        run_execute(&run);
        core_done(core);
}

static void bench_depth(unsigned depth) {
        MemCore *core = core_make(1024);
        char name[32];
        Run run = { .name = name, .nthreads = 1, .core = core, .kind = LOOP_SESSION,
                    .item = item_plain, .bytes = PAGE, .pids = { 10000 } };
        size_t len = 0;

        snprintf(name, sizeof(name), "charge_depth%u", depth);
        for (unsigned d = 1; d <= depth; d++) {
                len += (size_t) snprintf(run.paths[0] + len, sizeof(run.paths[0]) - len, "/d%u",
                                         d);
                if (d < depth)
                        group_unref(group_make(core, run.paths[0]));
        }
        run_execute(&run);
        core_done(core);
}

/* ---- memory per group and flush time ---------------------------------- */

typedef struct Idler {
        MemCore *core;
        pthread_barrier_t *barrier;
        unsigned idx;
} Idler;

/* A registered thread that does nothing: it only owns per-thread slots. */
static void *idler_main(void *userdata) {
        Idler *d = userdata;

        pin_to(d->idx);
        check("core_thread_register", core_thread_register(d->core));
        pthread_barrier_wait(d->barrier); /* registered */
        pthread_barrier_wait(d->barrier); /* measured */
        core_thread_unregister(d->core);
        return NULL;
}

static size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();

        /* Sums every arena; big blocks may be mmapped, count those too. */
        return mi.uordblks + mi.hblkhd;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static void bench_mem(unsigned nthreads) {
        unsigned top = 100, per = arg_mem_groups / top - 1, n = 0;
        MemCore *core = core_make(arg_mem_groups + 16);
        pthread_t tids[MAX_WORKERS];
        Idler idlers[MAX_WORKERS];
        pthread_barrier_t barrier;
        uint64_t t0, t_create, flush[5];
        size_t before, after;
        char path[64];

        /* The main thread is registered; nthreads - 1 more. */
        check("pthread_barrier_init", -pthread_barrier_init(&barrier, NULL, nthreads));
        for (unsigned i = 1; i < nthreads; i++) {
                idlers[i] = (Idler) { .core = core, .barrier = &barrier, .idx = i };
                check("pthread_create", -pthread_create(&tids[i], NULL, idler_main, &idlers[i]));
        }
        /* The main thread is not pinned: liburcu starts the hash table's
         * resize worker from it, and a worker that inherits a pin shares
         * one CPU with the creating loop and lags behind it (lookups then
         * walk chains thousands long). */
        pthread_barrier_wait(&barrier);

        malloc_trim(0);
        before = heap_in_use();
        t0 = now_ns();
        for (unsigned i = 0; i < top; i++) {
                snprintf(path, sizeof(path), "/g%u", i);
                check(path, group_create(core, path, 0));
                n++;
                for (unsigned j = 0; j < per; j++) {
                        snprintf(path, sizeof(path), "/g%u/c%u", i, j);
                        check(path, group_create(core, path, 0));
                        n++;
                }
        }
        t_create = now_ns() - t0;
        after = heap_in_use();

        printf("mem_per_group %u %.1f\n", nthreads, (double) (after - before) / n);
        printf("create_per_group %u %.2f\n", nthreads, (double) t_create / n);
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
                qsort(flush, ELEMENTSOF(flush), sizeof(flush[0]), cmp_u64);
                printf("flush_100k %u %.0f\n", nthreads, (double) flush[ELEMENTSOF(flush) / 2]);
        }
        fflush(stdout);

        pthread_barrier_wait(&barrier);
        for (unsigned i = 1; i < nthreads; i++)
                pthread_join(tids[i], NULL);
        pthread_barrier_destroy(&barrier);
        core_done(core);
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

static void bench_mem_all(void) {
        for (unsigned t = 1; t <= 2; t++)
                bench_mem(t);
}

/* Each entry prints lines whose names start with its name; the names are
 * no prefix of one another, so --only NAME runs exactly one entry. */
static const struct {
        const char *name;
        void (*run)(void);
} measurements[] = {
        { "fp1_propagate", bench_fp1_all },
        { "fp2_stats", bench_fp2_all },
        { "fp2_batch", bench_fp2_batch_all },
        { "fp3_moving", bench_fp3_all },
        { "fp4_rss", bench_fp4_all },
        { "fp4_pids", bench_fp4_pids },
        { "charge_depth", bench_depth_all },
        { "mem_per_group", bench_mem_all }, /* also create_per_group, flush_100k */
};

static void help(void) {
        printf("Usage: bench-core [--quick] [--only NAME] [--duration MSEC] [--wall] [--fifo]\n"
               "                  [--verbose]\n"
               "       bench-core --list\n\n"
               "Prints \"<name> <threads> <value>\" per measurement. --only runs the\n"
               "measurements whose name starts with NAME (see --list; mem_per_group also\n"
               "prints create_per_group and flush_100k). --wall: ns/op from elapsed time\n"
               "rather than the threads' CPU time. --fifo: measuring threads run under\n"
               "SCHED_FIFO (needs CAP_SYS_NICE), for a machine other work shares.\n"
               "--verbose prints every thread's figures to stderr.\n");
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
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "qo:d:vwflh", options, NULL)) >= 0)
                switch (c) {
                case 'q':
                        arg_duration_ns = 80 * 1000 * 1000ull;
                        arg_warmup_ns = 20 * 1000 * 1000ull;
                        break;
                case 'o':
                        arg_only = optarg;
                        break;
                case 'd':
                        arg_duration_ns = strtoull(optarg, NULL, 10) * 1000 * 1000ull;
                        if (arg_duration_ns == 0)
                                die("--duration", -EINVAL);
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
                        for (size_t i = 0; i < ELEMENTSOF(measurements); i++)
                                puts(measurements[i].name);
                        exit(EXIT_SUCCESS);
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
        check("sched_getaffinity", sched_getaffinity(0, sizeof(cpus_allowed), &cpus_allowed) < 0
                                           ? -errno
                                           : 0);
        ncpus = (unsigned) CPU_COUNT(&cpus_allowed);
        item_plain = MEM_STAT_OTHER;
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (mem_rss_from_stat(i) < 0) {
                        item_plain = i;
                        break;
                }

        for (size_t i = 0; i < ELEMENTSOF(measurements); i++)
                if (selected(measurements[i].name))
                        measurements[i].run();
        return EXIT_SUCCESS;
}
