/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-core's floor: what this machine charges for the operations the
 * core's fast paths are made of, so that a figure in nanoseconds can be
 * read against the machine it ran on (docs/performance.md, "The floor").
 *
 *   floor_atomic 1        an atomic add on a line of the thread's own
 *   floor_atomic 2        the same by two threads (CPUs 0 and 1) on one
 *                         shared line, per thread: what a counter every
 *                         charge of both threads writes costs at least
 *   floor_atomic_ratio 2  the second over the first: the ratio a
 *                         two-thread measurement cannot beat when all its
 *                         atomics go to shared lines
 *   floor_transfer 2      a line handed from one CPU to the other and
 *                         back, per hand-off: the two threads take turns
 *                         (each adds when the count says it is its
 *                         turn), so every add waits for the line; a
 *                         counter two threads' charges both write pays
 *                         up to this on every charge, and between two
 *                         of its writes each thread does other work
 *   floor_clock 1         clock_gettime(CLOCK_MONOTONIC), as the daemon
 *                         times every request
 *
 * Each is the threads' CPU time per operation, as the other lines.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "bench-core-floor.h"
#include "bench-core-lib.h"

typedef struct FloorThread {
        _Atomic uint64_t *line;
        unsigned cpu;
        bool turns;
        uint64_t n;
        pthread_barrier_t *go;
        uint64_t cpu_ns, wall_ns;
} FloorThread;

/* Add n times to t->line; with t->turns only when its count has the parity of t->cpu. */
static void *floor_adds(void *userdata) {
        FloorThread *t = userdata;
        uint64_t w0, c0;

        pin_to(t->cpu);
        pthread_barrier_wait(t->go);
        w0 = now_ns();
        c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (uint64_t i = 0; i < t->n; i++) {
                while (t->turns && (atomic_load_explicit(t->line, memory_order_acquire) & 1) != t->cpu)
                        ;
                atomic_fetch_add_explicit(t->line, 1, memory_order_acq_rel);
        }
        t->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        t->wall_ns = now_ns() - w0;
        return NULL;
}

/* @nthreads threads adding @n times to one line (@turns: taking turns): CPU and wall ns per add and thread, their mean. */
static RunResult floor_run(unsigned nthreads, uint64_t n, bool turns) {
        static _Atomic uint64_t line[8] __attribute__((aligned(64)));
        pthread_t tids[2];
        FloorThread t[2];
        pthread_barrier_t go;
        RunResult res = {};

        atomic_store(&line[0], 0);
        pthread_barrier_init(&go, NULL, nthreads);
        for (unsigned i = 0; i < nthreads; i++) {
                t[i] = (FloorThread) { .line = &line[0], .cpu = i, .turns = turns, .n = n, .go = &go };
                if (pthread_create(&tids[i], NULL, floor_adds, &t[i]) != 0)
                        die("pthread_create", -1);
        }
        for (unsigned i = 0; i < nthreads; i++) {
                pthread_join(tids[i], NULL);
                res.cpu_ns += (double) t[i].cpu_ns / (double) n / nthreads;
                res.wall_ns += (double) t[i].wall_ns / (double) n / nthreads;
        }
        pthread_barrier_destroy(&go);
        res.value = arg_wall ? res.wall_ns : res.cpu_ns;
        return res;
}

static void print_result(const char *name, unsigned nthreads, RunResult r) {
        printf("%s %u %.2f wall=%.2f cpu=%.2f\n", name, nthreads, r.value, r.wall_ns, r.cpu_ns);
}

void bench_floor_all(void) {
        uint64_t n = arg_quick ? UINT64_C(2000000) : UINT64_C(20000000);
        RunResult one = floor_run(1, n, false), two = floor_run(2, n, false), clock;
        RunResult turns = floor_run(2, n / 8, true);
        uint64_t c0, w0, k = n / 4;

        print_result("floor_atomic", 1, one);
        print_result("floor_atomic", 2, two);
        printf("floor_atomic_ratio 2 %.3f wall=%.3f cpu=%.3f\n", two.value / one.value, two.wall_ns / one.wall_ns,
               two.cpu_ns / one.cpu_ns);
        /* Each thread's add is one hand-off there and one back: half of it. */
        turns.value /= 2, turns.wall_ns /= 2, turns.cpu_ns /= 2;
        print_result("floor_transfer", 2, turns);

        w0 = now_ns();
        c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (uint64_t i = 0; i < k; i++)
                (void) now_ns();
        clock.cpu_ns = (double) (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double) k;
        clock.wall_ns = (double) (now_ns() - w0) / (double) k;
        clock.value = arg_wall ? clock.wall_ns : clock.cpu_ns;
        print_result("floor_clock", 1, clock);
        fflush(stdout);
}
