/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness of bench-core: how a measurement is taken.
 *
 * Thread i is pinned to the i-th CPU of the affinity mask (modulo its
 * size) and registers with the core; every measurement gets a fresh core
 * (registrations take per-thread slots that are never given back). Each
 * measurement warms up, then runs for a fixed time by CLOCK_MONOTONIC.
 * Both the elapsed time and the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) over that span are kept: they are equal on
 * an idle machine, and the CPU time leaves out the time another process
 * had the CPU on a busy one. The value a line leads with is the CPU time
 * (--wall: the elapsed time); both follow it as wall= and cpu=.
 */

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench-core-lib.h"
#include "charge.h"

uint64_t arg_duration_ns = 300 * 1000 * 1000ull;
uint64_t arg_warmup_ns = 60 * 1000 * 1000ull;
unsigned arg_mem_groups = 100000;
unsigned arg_million_groups = 1000000;
unsigned arg_million_sec = 120;
bool arg_quick;
bool arg_verbose;
bool arg_wall;
bool arg_fifo;

MemStatItem item_plain;

static cpu_set_t cpus_allowed;
static unsigned ncpus;

void bench_init(void) {
        check("sched_getaffinity",
              sched_getaffinity(0, sizeof(cpus_allowed), &cpus_allowed) < 0 ? -errno : 0);
        ncpus = (unsigned) CPU_COUNT(&cpus_allowed);
        item_plain = MEM_STAT_OTHER;
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (mem_rss_from_stat(i) < 0) {
                        item_plain = i;
                        break;
                }
}

_Noreturn void die(const char *what, int r) {
        fprintf(stderr, "bench-core: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(EXIT_FAILURE);
}

void check(const char *what, int r) {
        if (r < 0)
                die(what, r);
}

uint64_t clock_ns(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

uint64_t now_ns(void) {
        return clock_ns(CLOCK_MONOTONIC);
}

static long nivcsw_self(void) {
        struct rusage ru;

        return getrusage(RUSAGE_THREAD, &ru) < 0 ? 0 : ru.ru_nivcsw;
}

void pin_to(unsigned i) {
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
void fifo_enter(void) {
        static atomic_bool warned;
        struct sched_param p = { .sched_priority = 1 };
        int r;

        if (!arg_fifo)
                return;
        r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
        if (r != 0 && !atomic_exchange(&warned, true))
                fprintf(stderr, "bench-core: --fifo: %s, going on without it\n", strerror(r));
}

bool bench_charge_stock;

MemCore *core_make(unsigned max_groups) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core;

        cfg.max_groups = max_groups;
        cfg.charge_stock = bench_charge_stock;
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
void core_done(MemCore *core) {
        core_free(core);
        core_thread_unregister(core);
}

MemGroup *group_make(MemCore *core, const char *path) {
        MemGroup *g;
        int r = group_create(core, path, 0);

        if (r < 0 && r != -EEXIST)
                die(path, r);
        check(path, group_get(core, path, &g));
        return g;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

double median_u64(uint64_t *v, size_t n) {
        qsort(v, n, sizeof(v[0]), cmp_u64);
        return n % 2 ? (double) v[n / 2] : ((double) v[n / 2 - 1] + (double) v[n / 2]) / 2;
}

size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();

        /* Sums every arena; big blocks may be mmapped, count those too. */
        return mi.uordblks + mi.hblkhd;
}

/* ---- timed loops ------------------------------------------------------ */

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
        case LOOP_SESSION_REGION:
                for (i = 0; i < CALLS_PER_CHECK / 2; i++) {
                        check("session_charge_region", session_charge_region(w->s, w->run->region, b, 0, NULL));
                        check("session_uncharge_region", session_uncharge_region(w->s, w->run->region, b));
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

/* The means over the threads of each one's time per operation. */
static RunResult run_result(const Run *run) {
        RunResult res = {};

        for (unsigned i = 0; i < run->nthreads; i++) {
                const Worker *w = &run->workers[i];
                double ops = (double) w->calls / 2;

                res.wall_ns += (double) w->ns / ops / run->nthreads;
                res.cpu_ns += (double) w->cpu_ns / ops / run->nthreads;
                if (arg_verbose)
                        fprintf(stderr,
                                "bench-core: %s %u: thread %u: %.2f ns/op (cpu %.2f), on CPU "
                                "%.1f%% of the time, %ld involuntary switches\n",
                                run->name, run->nthreads, i, (double) w->ns / ops,
                                (double) w->cpu_ns / ops,
                                100.0 * (double) w->cpu_ns / (double) w->ns, w->nivcsw);
        }
        res.value = arg_wall ? res.wall_ns : res.cpu_ns;
        return res;
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
 * A worker that shares its CPU with another process measures less well:
 * its thread CPU time leaves the other process out, but with two workers
 * the one still running meanwhile meets less contention (and with --wall
 * the waiting one counts the other process in). Such an attempt is
 * repeated (up to RUN_ATTEMPTS in all), the one whose workers were on
 * their CPUs the most is kept. Stdout stays one line per measurement.
 */
RunResult run_execute(Run *run) {
        RunResult best = {};
        double best_on_cpu = -1;

        for (unsigned a = 0; a < RUN_ATTEMPTS && best_on_cpu < RUN_ON_CPU_MIN; a++) {
                double on_cpu;
                RunResult res;

                /* Real-time threads get 95 % of each second: leave the
                 * rest to others between runs, or the kernel's throttle
                 * takes it in the middle of one. */
                if (arg_fifo)
                        nanosleep(&(struct timespec) { .tv_nsec = 80 * 1000 * 1000 }, NULL);
                run_once(run);
                res = run_result(run);
                on_cpu = run_on_cpu(run);
                if (on_cpu > best_on_cpu) {
                        best_on_cpu = on_cpu;
                        best = res;
                }
        }
        if (best_on_cpu < RUN_ON_CPU_MIN)
                fprintf(stderr,
                        "bench-core: %s %u: disturbed: a worker on its CPU %.0f%% of the time\n",
                        run->name, run->nthreads, 100 * best_on_cpu);
        printf("%s %u %.2f wall=%.2f cpu=%.2f\n", run->name, run->nthreads, best.value,
               best.wall_ns, best.cpu_ns);
        fflush(stdout);
        return best;
}

/* ---- a crew of registered threads ------------------------------------- */

static void *crew_main(void *userdata) {
        CrewMember *m = userdata;
        Crew *c = m->crew;

        pin_to(m->idx);
        check("core_thread_register", core_thread_register(c->core));
        for (;;) {
                pthread_barrier_wait(&c->go);
                if (!c->job)
                        break;
                c->job(c->core, m->idx, c->n, c->userdata);
                pthread_barrier_wait(&c->done);
        }
        core_thread_unregister(c->core);
        return NULL;
}

/* The caller is not pinned: liburcu starts the hash table's resize
 * worker from it, and a worker that inherits a pin shares one CPU with
 * the creating loop and lags behind it (lookups then walk chains
 * thousands long). */
void crew_start(Crew *c, MemCore *core, unsigned n) {
        *c = (Crew) { .core = core, .n = n };
        check("pthread_barrier_init", -pthread_barrier_init(&c->go, NULL, n));
        check("pthread_barrier_init", -pthread_barrier_init(&c->done, NULL, n));
        for (unsigned i = 1; i < n; i++) {
                c->members[i] = (CrewMember) { .crew = c, .idx = i };
                check("pthread_create",
                      -pthread_create(&c->members[i].tid, NULL, crew_main, &c->members[i]));
        }
        /* Every member registered before the caller goes on: a no-op job. */
        crew_run(c, NULL, NULL);
}

static void crew_nothing(MemCore *core, unsigned idx, unsigned n, void *userdata) {
        (void) core, (void) idx, (void) n, (void) userdata;
}

/* The barriers order the job and its data before and after every
 * member's run: pthread_barrier_wait() synchronises memory. */
void crew_run(Crew *c, CrewJob job, void *userdata) {
        c->job = job ? job : crew_nothing;
        c->userdata = userdata;
        pthread_barrier_wait(&c->go);
        c->job(c->core, 0, c->n, userdata);
        pthread_barrier_wait(&c->done);
}

void crew_stop(Crew *c) {
        c->job = NULL;
        pthread_barrier_wait(&c->go);
        for (unsigned i = 1; i < c->n; i++)
                pthread_join(c->members[i].tid, NULL);
        pthread_barrier_destroy(&c->go);
        pthread_barrier_destroy(&c->done);
}
