/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stock benchmark: the cost of a small charge through libmemacct's charge
 * stock (memacct_charge_stocked()/memacct_uncharge_stocked()) against a
 * running memacctd, refills included.
 *
 * --threads T threads, each with its own handle (a session with its own
 * stock page), all attached to /bench-stock (created if missing; no max
 * on it or above it, so that charges without end are never refused),
 * thread i pinned to the i-th CPU of the affinity mask (--no-pin: not).
 * Each thread sets its stock up with one untimed charge and uncharge, then
 * all start together and run for --duration ms of CLOCK_MONOTONIC,
 * checking the clock every 1024 operations.
 *
 *   --mode pair    one operation = charge_stocked(4 KiB) + uncharge_stocked(4 KiB):
 *                  the steady state, where the page turns over in place and
 *                  a refill is rare.
 *   --mode charge  one operation = charge_stocked(4 KiB) only, so the page
 *                  runs dry every batch and refills dominate; at the end
 *                  everything is given back with one uncharge_stocked()
 *                  and a drain (timed apart: release_ms).
 *
 * --region NAME charges device region NAME (registered if missing, with no
 * capacity; root only) through its stock item (memacct_stock_region())
 * instead of anon memory: the same fast path on the region's counter.
 *
 * Every return value is checked; failures are counted and reported. At the
 * end, with every handle drained, /bench-stock's usage must be 0 (verify).
 *
 * Output, one line:
 *   stock_<mode> <threads> <ns/op> cpu_ns_op=<ns> mops=<M ops/s, all threads>
 *   errors=<n> verify=<ok|FAIL...> batch=<bytes> ops=<n, all threads> [release_ms=<ms>]
 * where ns/op is the elapsed time a thread takes per operation (the mean
 * over the threads) and cpu_ns_op the same from the thread's CPU time
 * (lower when the thread waited for a refill or another process ran).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memacct.h"

#define CHARGE_BYTES 4096
#define CHUNK 1024
#define GROUP "/bench-stock"

typedef enum Mode {
        MODE_PAIR,
        MODE_CHARGE,
} Mode;

static const char *socket_path;
static const char *region; /* NULL: memory */
static unsigned nthreads = 1;
static unsigned duration_msec = 1000;
static Mode mode = MODE_PAIR;
static bool pin = true;

typedef struct Thread {
        _Alignas(64) pthread_t thread;
        unsigned index;
        int cpu;
        memacct *m;
        int item; /* a stat item of memory, or --region's stock item */
        uint64_t ops;
        uint64_t wall_nsec;
        uint64_t cpu_nsec;
        uint64_t errors;
        int first_error;
        uint64_t release_nsec;
        uint64_t batch;
} Thread;

static pthread_barrier_t barrier;

static uint64_t now_nsec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void fail(Thread *t, int r) {
        if (t->errors++ == 0)
                t->first_error = r;
}

static void *thread_main(void *userdata) {
        Thread *t = userdata;
        uint64_t start, deadline, cpu0, held = 0;
        int r;

        if (t->cpu >= 0) {
                cpu_set_t set;

                CPU_ZERO(&set);
                CPU_SET(t->cpu, &set);
                (void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        }
        /* Set the stock up, untimed. */
        r = memacct_charge_stocked(t->m, CHARGE_BYTES, t->item);
        if (r < 0)
                fail(t, r);
        else if ((r = memacct_uncharge_stocked(t->m, CHARGE_BYTES, t->item)) < 0)
                fail(t, r);

        pthread_barrier_wait(&barrier);
        start = now_nsec(CLOCK_MONOTONIC);
        cpu0 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
        deadline = start + (uint64_t) duration_msec * 1000000u;
        do {
                if (mode == MODE_PAIR)
                        for (unsigned i = 0; i < CHUNK; i++) {
                                r = memacct_charge_stocked(t->m, CHARGE_BYTES, t->item);
                                if (__builtin_expect(r < 0, 0)) {
                                        fail(t, r);
                                        continue;
                                }
                                r = memacct_uncharge_stocked(t->m, CHARGE_BYTES, t->item);
                                if (__builtin_expect(r < 0, 0))
                                        fail(t, r);
                        }
                else
                        for (unsigned i = 0; i < CHUNK; i++) {
                                r = memacct_charge_stocked(t->m, CHARGE_BYTES, t->item);
                                if (__builtin_expect(r < 0, 0))
                                        fail(t, r);
                                else
                                        held += CHARGE_BYTES;
                        }
                t->ops += CHUNK;
        } while (now_nsec(CLOCK_MONOTONIC) < deadline);
        t->wall_nsec = now_nsec(CLOCK_MONOTONIC) - start;
        t->cpu_nsec = now_nsec(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        (void) memacct_stock_get(t->m, t->item, NULL, &t->batch);

        start = now_nsec(CLOCK_MONOTONIC);
        if (held > 0 && (r = memacct_uncharge_stocked(t->m, held, t->item)) < 0)
                fail(t, r);
        if ((r = memacct_stock_drain(t->m)) < 0)
                fail(t, r);
        t->release_nsec = now_nsec(CLOCK_MONOTONIC) - start;
        return NULL;
}

static void usage(void) {
        fprintf(stderr, "Usage: bench-stock --socket PATH [--threads N] [--mode pair|charge] "
                        "[--duration MSEC] [--no-pin] [--region NAME]\n");
        exit(2);
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "threads", required_argument, NULL, 't' },
                { "mode", required_argument, NULL, 'm' },
                { "duration", required_argument, NULL, 'd' },
                { "no-pin", no_argument, NULL, 'n' },
                { "region", required_argument, NULL, 'r' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        socket_path = optarg;
                        break;
                case 't':
                        nthreads = (unsigned) atoi(optarg);
                        if (nthreads < 1 || nthreads > 64)
                                usage();
                        break;
                case 'm':
                        if (strcmp(optarg, "pair") == 0)
                                mode = MODE_PAIR;
                        else if (strcmp(optarg, "charge") == 0)
                                mode = MODE_CHARGE;
                        else
                                usage();
                        break;
                case 'd':
                        duration_msec = (unsigned) atoi(optarg);
                        if (duration_msec < 10)
                                usage();
                        break;
                case 'n':
                        pin = false;
                        break;
                case 'r':
                        region = optarg;
                        break;
                default:
                        usage();
                }
        }
        if (optind < argc || !socket_path)
                usage();
}

/* The i-th CPU of our affinity mask, modulo its size; -1 if unknown. */
static int nth_cpu(unsigned i) {
        cpu_set_t set;
        int n, k = 0;

        if (sched_getaffinity(0, sizeof(set), &set) < 0 || (n = CPU_COUNT(&set)) == 0)
                return -1;
        i %= (unsigned) n;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set) && (unsigned) k++ == i)
                        return cpu;
        return -1;
}

int main(int argc, char *argv[]) {
        Thread *threads;
        memacct *setup = NULL;
        memacct_group_info *info = NULL;
        uint64_t ops = 0, wall_max = 0, errors = 0, batch = 0, release_max = 0;
        double ns = 0, cpu_ns = 0;
        char verify[96] = "ok";
        int r, first_error = 0;

        parse_argv(argc, argv);
        r = memacct_connect(socket_path, &setup);
        if (r < 0) {
                fprintf(stderr, "bench-stock: cannot connect to %s: %s\n", socket_path, strerror(-r));
                return 1;
        }
        r = memacct_create_group(setup, GROUP, NULL, MEMACCT_NO_OWNER);
        if (r < 0 && r != -EEXIST) {
                fprintf(stderr, "bench-stock: create %s: %s\n", GROUP, strerror(-r));
                return 1;
        }

        if (region && (r = memacct_add_region(setup, region, MEMACCT_UNLIMITED)) < 0 && r != -EEXIST) {
                fprintf(stderr, "bench-stock: add region %s: %s\n", region, strerror(-r));
                return 1;
        }

        threads = aligned_alloc(64, nthreads * sizeof(Thread));
        if (!threads)
                return 1;
        memset(threads, 0, nthreads * sizeof(Thread));
        pthread_barrier_init(&barrier, NULL, nthreads);
        for (unsigned i = 0; i < nthreads; i++) {
                Thread *t = &threads[i];

                t->index = i;
                t->cpu = pin ? nth_cpu(i) : -1;
                t->item = MEMACCT_STAT_ANON;
                r = memacct_connect(socket_path, &t->m);
                if (r >= 0)
                        r = memacct_attach(t->m, GROUP);
                if (r >= 0 && region)
                        r = t->item = memacct_stock_region(t->m, region);
                if (r < 0) {
                        fprintf(stderr, "bench-stock: connect/attach: %s\n", strerror(-r));
                        return 1;
                }
        }
        for (unsigned i = 0; i < nthreads; i++)
                if (pthread_create(&threads[i].thread, NULL, thread_main, &threads[i]) != 0) {
                        fprintf(stderr, "bench-stock: pthread_create failed\n");
                        return 1;
                }
        for (unsigned i = 0; i < nthreads; i++) {
                Thread *t = &threads[i];

                pthread_join(t->thread, NULL);
                ops += t->ops;
                ns += (double) t->wall_nsec / (double) t->ops;
                cpu_ns += (double) t->cpu_nsec / (double) t->ops;
                if (t->wall_nsec > wall_max)
                        wall_max = t->wall_nsec;
                if (t->release_nsec > release_max)
                        release_max = t->release_nsec;
                errors += t->errors;
                if (!first_error && t->errors)
                        first_error = t->first_error;
                batch = t->batch;
        }

        /* Everything given back and every stock drained: nothing is left. */
        r = memacct_get_group(setup, GROUP, NULL, MEMACCT_EXACT, &info);
        if (r < 0)
                snprintf(verify, sizeof(verify), "FAIL(get_group:%s)", strerror(-r));
        else if (info->current != 0)
                snprintf(verify, sizeof(verify), "FAIL(current=%" PRIu64 ")", info->current);
        for (size_t i = 0; r >= 0 && region && i < info->n_regions; i++)
                if (strcmp(info->regions[i].name, region) == 0 && info->regions[i].current != 0)
                        snprintf(verify, sizeof(verify), "FAIL(%s current=%" PRIu64 ")", region,
                                 info->regions[i].current);
        info = memacct_group_info_free(info);
        for (unsigned i = 0; i < nthreads; i++)
                threads[i].m = memacct_close(threads[i].m);
        setup = memacct_close(setup);

        printf("stock_%s %u %.2f cpu_ns_op=%.2f mops=%.2f errors=%" PRIu64 " verify=%s batch=%" PRIu64
               " ops=%" PRIu64,
               mode == MODE_PAIR ? "pair" : "charge", nthreads, ns / nthreads, cpu_ns / nthreads,
               (double) ops / ((double) wall_max / 1e9) / 1e6, errors, verify, batch, ops);
        if (mode == MODE_CHARGE)
                printf(" release_ms=%.2f", (double) release_max / 1e6);
        if (errors)
                printf(" first_error=%s", strerror(-first_error));
        putchar('\n');
        free(threads);
        return 0;
}
