/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-cuda: what a device allocation's accounting costs, memacctd's
 * against a model of HAMi-core's (bench-cuda-hami.c), for run-cuda.sh
 * (docs/performance.md). Linked with -lcuda against the stand-in driver
 * (tests/cuda), as a CUDA program is, so that LD_PRELOAD of
 * libmemacct-cuda.so puts the interposer in front of its driver calls.
 *
 *   pair --scheme S [--procs P] [--slots N] [--driver] [--held K]
 *        [--bytes B] [--duration MSEC] [--socket PATH]
 *       P processes (forked, each pinned to a CPU of the affinity mask,
 *       started together) each make alloc+free pairs of B bytes (4 KiB)
 *       for MSEC ms (500). S is one of
 *         stock         memacct_charge_stocked() + memacct_uncharge_stocked()
 *                       of the GPU region's stock item (memacct_stock_region()),
 *                       each process a session of its own attached to the group;
 *         cuda          cuMemAlloc_v2() + cuMemFree_v2(): the stand-in alone, or
 *                       the interposer in front of it when preloaded;
 *         hami-seqlock  the HAMi model, limit check under per-slot seqlocks;
 *         hami-sem      the same under the shared file's semaphore;
 *       N: the shared file's slots (at least P: one per process, the rest
 *       other processes' with a little usage each); --driver: the HAMi
 *       model around the driver's cuMemAlloc_v2/cuMemFree_v2 (without it,
 *       the accounting alone); K: allocations held in the HAMi list before
 *       the loop (its free searches past them). One line:
 *         pair <scheme>[+driver] <procs> <slots|-> <ns/pair> cpu=<ns> ops=<n>
 *              errors=<n> verify=<ok|FAIL..> [via=<library of cuMemAlloc_v2>]
 *       ns/pair is the elapsed time per pair of a process, the mean over
 *       the processes; cpu the same in the process's CPU time.
 *
 *   cold [--connected] [--samples K] [--bytes B]
 *       K fresh processes (forked, one after the other) each time their
 *       first cuMemAlloc_v2() and, after its free, their second, and then
 *       one of 64 MiB, more than the stock's largest batch, which the
 *       interposer charges exactly: a round trip every time. Through
 *       the interposer the first is the one whose stock is empty; with
 *       --connected a cuMemGetInfo_v2() first sets the session up (the
 *       connection, the attach), so that the first allocation is the
 *       stock's refill alone. One line:
 *         cold <session|connected> first=<median ns> first_min=<ns>
 *              second=<median ns> big=<median ns> samples=<K> errors=<n> via=<library>
 *
 *   roundtrip --socket PATH [--samples K] [--bytes B]
 *       one process, K rounds of: a plain memacct_charge() of B bytes of
 *       anon memory, memacct_charge_region() in the GPU's region, and
 *       memacct_charge_stocked() of the region's item right after a
 *       memacct_stock_drain(); each timed alone, its uncharge (and the
 *       drain) not; and every tenth round, a new session's first
 *       memacct_charge_stocked() in the region (its connect and attach
 *       untimed). One line each: roundtrip <what> <median ns> min=<ns>
 *
 *   parts
 *       what the HAMi model's pair is made of, each timed alone on one CPU
 *       (ns per call): getpid(), an uncontended mutex lock and unlock,
 *       malloc() and free() of a list entry, the sum of 1,024 slots under
 *       seqlocks and under the semaphore, sem_wait() and sem_post().
 *       One line each: part <what> <ns>
 *
 * Every return value is checked and counted in errors=; none is ever
 * dropped. The group (--group, /bench-cuda) and the region (--region,
 * nvidia/0000:3b:00.0/vidmem) must exist; run-cuda.sh makes both.
 */

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-cuda-hami.h"
#include "memacct-region.h"
#include "memacct.h"
#include "standin-cuda-api.h"

#define CHUNK 256
#define MAX_PROCS 64
#define MAX_SAMPLES 100000
/* HAMi's limit: never reached, so that every allocation passes the check. */
#define HAMI_LIMIT (UINT64_C(1) << 50)

typedef enum Scheme {
        SCHEME_STOCK,
        SCHEME_CUDA,
        SCHEME_HAMI_SEQLOCK,
        SCHEME_HAMI_SEM,
        _SCHEME_MAX,
} Scheme;

static const char *const scheme_names[_SCHEME_MAX] = {
        [SCHEME_STOCK] = "stock",
        [SCHEME_CUDA] = "cuda",
        [SCHEME_HAMI_SEQLOCK] = "hami-seqlock",
        [SCHEME_HAMI_SEM] = "hami-sem",
};

static struct {
        const char *mode;
        Scheme scheme;
        unsigned procs, slots, held, samples, duration_msec;
        uint64_t bytes;
        bool driver, connected;
        const char *socket, *region, *group;
} arg = {
        .procs = 1,
        .slots = 1,
        .samples = 50,
        .duration_msec = 500,
        .bytes = 4096,
        .region = "nvidia/0000:3b:00.0/vidmem",
        .group = "/bench-cuda",
};

/* What each process reports, in memory shared with the parent. */
typedef struct ProcResult {
        _Alignas(64) uint64_t ops, wall_ns, cpu_ns, errors;
        int first_error;
        bool verify_failed;
} ProcResult;

typedef struct Shared {
        pthread_barrier_t go;
        ProcResult res[MAX_PROCS];
} Shared;

/* One process's side of a pair run. */
typedef struct Ctx {
        ProcResult *res;
        memacct *m;
        int item;
        HamiProc hami;
} Ctx;

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void fail(ProcResult *res, int r) {
        if (res->errors++ == 0)
                res->first_error = r;
}

/* Shared anonymous memory for @size bytes, seen by the children forked after. */
static void *shared_new(size_t size) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED) {
                perror("bench-cuda: mmap");
                exit(1);
        }
        return p;
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

static void pin(unsigned i) {
        int cpu = nth_cpu(i);
        cpu_set_t set;

        if (cpu < 0)
                return;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void) sched_setaffinity(0, sizeof(set), &set);
}

/* The library cuMemAlloc_v2 resolves to: the interposer when it is preloaded. */
static const char *via(void) {
        Dl_info info;
        const char *slash;

        if (dladdr((void *) (uintptr_t) &cuMemAlloc_v2, &info) == 0 || !info.dli_fname)
                return "unknown";
        slash = strrchr(info.dli_fname, '/');
        return slash ? slash + 1 : info.dli_fname;
}

/* cuInit and device 0's primary context, current. Return: 0, or a CUresult. */
static int cuda_begin(void) {
        CUcontext ctx;
        CUresult r = cuInit(0);

        if (r == MA_CUDA_SUCCESS)
                r = cuDevicePrimaryCtxRetain(&ctx, 0);
        if (r == MA_CUDA_SUCCESS)
                r = cuCtxSetCurrent(ctx);
        return (int) r;
}

/* The driver's calls as the HAMi model makes them (--driver). */
static int driver_alloc(void *userdata, uint64_t bytes, uint64_t *ret_ptr) {
        CUdeviceptr p;
        CUresult r = cuMemAlloc_v2(&p, (size_t) bytes);

        (void) userdata;
        if (r != MA_CUDA_SUCCESS)
                return -ENOMEM;
        *ret_ptr = p;
        return 0;
}

static int driver_free(void *userdata, uint64_t ptr) {
        (void) userdata;
        return cuMemFree_v2(ptr) == MA_CUDA_SUCCESS ? 0 : -EIO;
}

static int stock_setup(Ctx *c) {
        int r = memacct_connect(arg.socket, &c->m);

        if (r >= 0)
                r = memacct_attach(c->m, arg.group);
        if (r >= 0)
                r = c->item = memacct_stock_region(c->m, arg.region);
        return r < 0 ? r : 0;
}

/* Each process's setup for a pair run; what it does once, untimed. Return: 0, or < 0. */
static int pair_setup(Ctx *c, HamiRegion *region, unsigned index) {
        uint64_t ptr;
        int r = 0;

        if (arg.scheme == SCHEME_CUDA || arg.driver)
                if ((r = cuda_begin()) != 0)
                        return -EIO;
        if (arg.scheme == SCHEME_STOCK)
                return stock_setup(c);
        if (arg.scheme == SCHEME_CUDA)
                return 0;
        r = hami_proc_init(&c->hami, region, index,
                           arg.scheme == SCHEME_HAMI_SEQLOCK ? HAMI_SEQLOCK : HAMI_SEMAPHORE);
        for (unsigned i = 0; r >= 0 && i < arg.held; i++)
                r = hami_alloc(&c->hami, arg.bytes, NULL, NULL, &ptr);
        return r;
}

/* CHUNK pairs of the scheme. */
static void pair_chunk(Ctx *c) {
        HamiAllocFn alloc = arg.driver ? driver_alloc : NULL;
        HamiFreeFn free_fn = arg.driver ? driver_free : NULL;
        CUdeviceptr p;
        uint64_t ptr;
        CUresult cr;
        int r;

        switch (arg.scheme) {
        case SCHEME_STOCK:
                for (unsigned i = 0; i < CHUNK; i++) {
                        r = memacct_charge_stocked(c->m, arg.bytes, c->item);
                        if (__builtin_expect(r < 0, 0)) {
                                fail(c->res, r);
                                continue;
                        }
                        r = memacct_uncharge_stocked(c->m, arg.bytes, c->item);
                        if (__builtin_expect(r < 0, 0))
                                fail(c->res, r);
                }
                break;
        case SCHEME_CUDA:
                for (unsigned i = 0; i < CHUNK; i++) {
                        cr = cuMemAlloc_v2(&p, (size_t) arg.bytes);
                        if (__builtin_expect(cr != MA_CUDA_SUCCESS, 0)) {
                                fail(c->res, -(int) cr);
                                continue;
                        }
                        cr = cuMemFree_v2(p);
                        if (__builtin_expect(cr != MA_CUDA_SUCCESS, 0))
                                fail(c->res, -(int) cr);
                }
                break;
        default:
                for (unsigned i = 0; i < CHUNK; i++) {
                        r = hami_alloc(&c->hami, arg.bytes, alloc, NULL, &ptr);
                        if (__builtin_expect(r < 0, 0)) {
                                fail(c->res, r);
                                continue;
                        }
                        r = hami_free(&c->hami, ptr, free_fn, NULL);
                        if (__builtin_expect(r < 0, 0))
                                fail(c->res, r);
                }
                break;
        }
}

/* What a process undoes, and checks, at its end. */
static void pair_teardown(Ctx *c) {
        uint64_t total;
        int r;

        if (arg.scheme == SCHEME_STOCK && c->m) {
                if ((r = memacct_stock_drain(c->m)) < 0)
                        fail(c->res, r);
                c->m = memacct_close(c->m);
        } else if (arg.scheme == SCHEME_HAMI_SEQLOCK || arg.scheme == SCHEME_HAMI_SEM) {
                /* Every pair gave back what it added: the slot holds the held ones alone. */
                total = atomic_load_explicit(&c->hami.my_slot->total, memory_order_relaxed);
                if (total != (uint64_t) arg.held * arg.bytes || c->hami.listed != arg.held)
                        c->res->verify_failed = true;
                hami_proc_done(&c->hami);
        }
}

static void pair_child(Shared *sh, HamiRegion *region, unsigned index) {
        Ctx c = { .res = &sh->res[index] };
        uint64_t start, cpu0, deadline;
        int r;

        pin(index);
        r = pair_setup(&c, region, index);
        if (r < 0)
                fail(c.res, r);
        else
                for (unsigned i = 0; i < 16; i++) /* warm: the stock filled, the caches */
                        pair_chunk(&c);
        pthread_barrier_wait(&sh->go);
        if (r < 0)
                _exit(1);
        start = now_ns(CLOCK_MONOTONIC);
        cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        deadline = start + (uint64_t) arg.duration_msec * 1000000u;
        do {
                pair_chunk(&c);
                c.res->ops += CHUNK;
        } while (now_ns(CLOCK_MONOTONIC) < deadline);
        c.res->wall_ns = now_ns(CLOCK_MONOTONIC) - start;
        c.res->cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        pair_teardown(&c);
        _exit(0);
}

/* The group's usage in the region is 0 once every stock is drained. Return: true if so. */
static bool stock_verify(void) {
        memacct_group_info *info = NULL;
        memacct *m = NULL;
        bool ok = false;

        if (memacct_connect(arg.socket, &m) < 0)
                return false;
        if (memacct_get_group(m, arg.group, NULL, MEMACCT_EXACT, &info) >= 0) {
                ok = true;
                for (size_t i = 0; i < info->n_regions; i++)
                        if (strcmp(info->regions[i].name, arg.region) == 0 && info->regions[i].current != 0)
                                ok = false;
        }
        memacct_group_info_free(info);
        memacct_close(m);
        return ok;
}

/* Wait for @n children; Return: how many failed. */
static unsigned wait_children(unsigned n) {
        unsigned failed = 0;
        int status;

        for (unsigned i = 0; i < n; i++)
                if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        failed++;
        return failed;
}

static int cmd_pair(void) {
        bool hami = arg.scheme == SCHEME_HAMI_SEQLOCK || arg.scheme == SCHEME_HAMI_SEM;
        unsigned slots = arg.slots < arg.procs ? arg.procs : arg.slots;
        Shared *sh = shared_new(sizeof(Shared));
        HamiRegion *region = NULL;
        pthread_barrierattr_t attr;
        double ns = 0, cpu = 0;
        uint64_t ops = 0, errors = 0;
        int first_error = 0;
        bool verify_ok = true;
        unsigned failed;

        if (hami && !(region = hami_region_new(slots, HAMI_LIMIT))) {
                perror("bench-cuda: the shared file");
                return 1;
        }
        pthread_barrierattr_init(&attr);
        pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
        pthread_barrier_init(&sh->go, &attr, arg.procs);
        fflush(stdout);
        for (unsigned i = 0; i < arg.procs; i++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("bench-cuda: fork");
                        return 1;
                }
                if (pid == 0)
                        pair_child(sh, region, i);
        }
        failed = wait_children(arg.procs);
        for (unsigned i = 0; i < arg.procs; i++) {
                ProcResult *r = &sh->res[i];

                ops += r->ops;
                errors += r->errors;
                if (r->errors && !first_error)
                        first_error = r->first_error;
                verify_ok = verify_ok && !r->verify_failed;
                if (r->ops) {
                        ns += (double) r->wall_ns / (double) r->ops / arg.procs;
                        cpu += (double) r->cpu_ns / (double) r->ops / arg.procs;
                }
        }
        if (arg.scheme == SCHEME_STOCK)
                verify_ok = verify_ok && stock_verify();
        printf("pair %s%s %u ", scheme_names[arg.scheme], arg.driver && hami ? "+driver" : "", arg.procs);
        if (hami)
                printf("%u", slots);
        else
                printf("-");
        printf(" %.1f cpu=%.1f ops=%" PRIu64 " errors=%" PRIu64 " verify=%s", ns, cpu, ops, errors + failed,
               verify_ok && !failed ? "ok" : "FAIL");
        if (arg.held)
                printf(" held=%u", arg.held);
        if (arg.scheme == SCHEME_CUDA || arg.driver)
                printf(" via=%s", via());
        if (errors)
                printf(" first_error=%d", first_error);
        putchar('\n');
        hami_region_free(region, slots);
        return errors || failed || !verify_ok ? 1 : 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The median of @n values (sorted in place); 0 for none. */
static uint64_t median(uint64_t *v, unsigned n) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof(*v), cmp_u64);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Larger than the stock's largest batch (4 MiB): charged exactly, a round trip every time. */
#define COLD_BIG_BYTES (UINT64_C(64) << 20)

/* One fresh process's first, second and big allocation, into @v[0], @v[n], @v[2n] once all three were made. */
static void cold_child(uint64_t *v, unsigned n) {
        size_t free_bytes, total_bytes;
        uint64_t t0, t1, ns[3];
        CUdeviceptr p;

        if (cuda_begin() != 0)
                _exit(1);
        if (arg.connected && cuMemGetInfo_v2(&free_bytes, &total_bytes) != MA_CUDA_SUCCESS)
                _exit(1);
        for (unsigned i = 0; i < 3; i++) {
                t0 = now_ns(CLOCK_MONOTONIC);
                if (cuMemAlloc_v2(&p, (size_t) (i == 2 ? COLD_BIG_BYTES : arg.bytes)) != MA_CUDA_SUCCESS)
                        _exit(1);
                t1 = now_ns(CLOCK_MONOTONIC);
                if (cuMemFree_v2(p) != MA_CUDA_SUCCESS)
                        _exit(1);
                ns[i] = t1 - t0;
        }
        for (unsigned i = 0; i < 3; i++)
                v[i * n] = ns[i];
        _exit(0);
}

static int cmd_cold(void) {
        uint64_t *v = shared_new(sizeof(uint64_t) * 3 * arg.samples);
        uint64_t *first = v, *second = v + arg.samples, *big = v + 2 * arg.samples;
        unsigned n = 0, errors = 0;

        fflush(stdout);
        for (unsigned i = 0; i < arg.samples; i++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("bench-cuda: fork");
                        return 1;
                }
                if (pid == 0)
                        cold_child(&v[i], arg.samples);
                errors += wait_children(1);
        }
        /* Only the processes that made all three allocations count. */
        for (unsigned i = 0; i < arg.samples; i++)
                if (first[i]) {
                        first[n] = first[i];
                        second[n] = second[i];
                        big[n++] = big[i];
                }
        printf("cold %s first=%" PRIu64, arg.connected ? "connected" : "session", median(first, n));
        printf(" first_min=%" PRIu64 " second=%" PRIu64 " big=%" PRIu64 " samples=%u errors=%u via=%s\n",
               n ? first[0] : 0, median(second, n), median(big, n), n, errors, via());
        return errors ? 1 : 0;
}

typedef enum RoundTrip {
        RT_CHARGE,
        RT_CHARGE_REGION,
        RT_STOCKED_COLD,
        RT_STOCKED_FIRST,
        _RT_MAX,
} RoundTrip;

static const char *const rt_names[_RT_MAX] = {
        [RT_CHARGE] = "memacct_charge",
        [RT_CHARGE_REGION] = "memacct_charge_region",
        [RT_STOCKED_COLD] = "charge_stocked_after_drain",
        [RT_STOCKED_FIRST] = "charge_stocked_first_of_session",
};

/* A new session's first stocked charge in the region (its set-up and end untimed). Return: ns, or < 0. */
static int64_t roundtrip_first(void) {
        uint64_t t0, t1;
        Ctx c = {};
        int r = stock_setup(&c);

        if (r >= 0) {
                t0 = now_ns(CLOCK_MONOTONIC);
                r = memacct_charge_stocked(c.m, arg.bytes, c.item);
                t1 = now_ns(CLOCK_MONOTONIC);
        }
        if (r >= 0)
                r = memacct_uncharge_stocked(c.m, arg.bytes, c.item);
        if (r >= 0)
                r = memacct_stock_drain(c.m);
        memacct_close(c.m);
        return r < 0 ? r : (int64_t) (t1 - t0);
}

/* One timed charge of @what (its undoing untimed). Return: its ns, or < 0. */
static int64_t roundtrip_one(memacct *m, int item, RoundTrip what) {
        uint64_t t0, t1;
        int r;

        if (what == RT_STOCKED_COLD && (r = memacct_stock_drain(m)) < 0)
                return r;
        t0 = now_ns(CLOCK_MONOTONIC);
        if (what == RT_CHARGE)
                r = memacct_charge(m, NULL, arg.bytes, MEMACCT_STAT_ANON, 0, NULL);
        else if (what == RT_CHARGE_REGION)
                r = memacct_charge_region(m, NULL, arg.region, arg.bytes, 0, NULL);
        else
                r = memacct_charge_stocked(m, arg.bytes, item);
        t1 = now_ns(CLOCK_MONOTONIC);
        if (r < 0)
                return r;
        if (what == RT_CHARGE)
                r = memacct_uncharge(m, NULL, arg.bytes, MEMACCT_STAT_ANON, 0);
        else if (what == RT_CHARGE_REGION)
                r = memacct_uncharge_region(m, NULL, arg.region, arg.bytes, 0);
        else
                r = memacct_uncharge_stocked(m, arg.bytes, item);
        return r < 0 ? r : (int64_t) (t1 - t0);
}

static int cmd_roundtrip(void) {
        /* A session each: one in ten rounds, not to open thousands of connections. */
        unsigned n[_RT_MAX] = {}, errors = 0;
        uint64_t *v[_RT_MAX];
        Ctx c = {};
        int r;

        r = stock_setup(&c);
        if (r < 0) {
                fprintf(stderr, "bench-cuda: %s: %s\n", arg.socket, strerror(-r));
                return 1;
        }
        for (unsigned w = 0; w < _RT_MAX; w++)
                v[w] = calloc(arg.samples, sizeof(uint64_t));
        /* Interleaved, so that each sees the same machine. */
        for (unsigned i = 0; i < arg.samples; i++)
                for (unsigned w = 0; w < _RT_MAX; w++) {
                        int64_t ns;

                        if (w == RT_STOCKED_FIRST && i % 10 != 0)
                                continue;
                        ns = w == RT_STOCKED_FIRST ? roundtrip_first() : roundtrip_one(c.m, c.item, (RoundTrip) w);
                        if (ns < 0)
                                errors++;
                        else
                                v[w][n[w]++] = (uint64_t) ns;
                }
        if (memacct_stock_drain(c.m) < 0)
                errors++;
        for (unsigned w = 0; w < _RT_MAX; w++) {
                uint64_t med = median(v[w], n[w]);

                printf("roundtrip %s %" PRIu64 " min=%" PRIu64 " samples=%u errors=%u\n", rt_names[w], med,
                       n[w] ? v[w][0] : 0, n[w], errors);
                free(v[w]);
        }
        memacct_close(c.m);
        return errors ? 1 : 0;
}

/* @n calls of @body, ns per call. */
#define TIME_NS(n, body)                                                                   \
        ({                                                                                 \
                uint64_t _t0 = now_ns(CLOCK_MONOTONIC);                                    \
                for (unsigned _i = 0; _i < (n); _i++) {                                    \
                        body;                                                              \
                }                                                                          \
                (double) (now_ns(CLOCK_MONOTONIC) - _t0) / (double) (n);                   \
        })

/* What the HAMi model's pair is made of, each alone on one CPU. */
static int cmd_parts(void) {
        const unsigned n = 1000000;
        HamiRegion *region = hami_region_new(1024, HAMI_LIMIT);
        pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
        HamiProc hp;
        volatile uint64_t sink = 0;

        if (!region || hami_proc_init(&hp, region, 0, HAMI_SEQLOCK) < 0)
                return 1;
        pin(0);
        printf("part getpid %.1f\n", TIME_NS(n, sink += (uint64_t) getpid()));
        printf("part mutex_lock_unlock %.1f\n",
               TIME_NS(n, pthread_mutex_lock(&mutex); pthread_mutex_unlock(&mutex)));
        printf("part malloc_free %.1f\n", TIME_NS(n, void *p = malloc(32); sink += (uintptr_t) p; free(p)));
        printf("part sum_1024_slots_seqlock %.1f\n", TIME_NS(n / 100, sink += hami_usage(&hp)));
        hp.lock = HAMI_SEMAPHORE;
        printf("part sum_1024_slots_semaphore %.1f\n", TIME_NS(n / 100, sink += hami_usage(&hp)));
        printf("part sem_wait_post %.1f\n", TIME_NS(n, sem_wait(&region->sem); sem_post(&region->sem)));
        hami_proc_done(&hp);
        hami_region_free(region, 1024);
        return sink == 0; /* never: the pids and sums are not 0 */
}

static void usage(void) {
        fprintf(stderr, "Usage: bench-cuda pair --scheme stock|cuda|hami-seqlock|hami-sem [--procs P] [--slots N]\n"
                        "                       [--driver] [--held K] [--bytes B] [--duration MSEC] [--socket PATH]\n"
                        "       bench-cuda cold [--connected] [--samples K] [--bytes B]\n"
                        "       bench-cuda roundtrip --socket PATH [--samples K] [--bytes B]\n"
                        "       bench-cuda parts\n"
                        "       (and --group PATH, --region NAME)\n");
        exit(2);
}

static unsigned parse_unsigned(const char *s, unsigned min, unsigned max) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                usage();
        return (unsigned) v;
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "scheme", required_argument, NULL, 'S' },
                { "procs", required_argument, NULL, 'p' },
                { "slots", required_argument, NULL, 'n' },
                { "driver", no_argument, NULL, 'D' },
                { "held", required_argument, NULL, 'H' },
                { "bytes", required_argument, NULL, 'b' },
                { "duration", required_argument, NULL, 'd' },
                { "socket", required_argument, NULL, 's' },
                { "samples", required_argument, NULL, 'k' },
                { "connected", no_argument, NULL, 'c' },
                { "group", required_argument, NULL, 'g' },
                { "region", required_argument, NULL, 'r' },
                {}
        };
        int c;

        if (argc < 2)
                usage();
        arg.mode = argv[1];
        optind = 2;
        arg.scheme = _SCHEME_MAX;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 'S':
                        for (unsigned s = 0; s < _SCHEME_MAX; s++)
                                if (strcmp(optarg, scheme_names[s]) == 0)
                                        arg.scheme = (Scheme) s;
                        if (arg.scheme == _SCHEME_MAX)
                                usage();
                        break;
                case 'p':
                        arg.procs = parse_unsigned(optarg, 1, MAX_PROCS);
                        break;
                case 'n':
                        arg.slots = parse_unsigned(optarg, 1, 1u << 20);
                        break;
                case 'D':
                        arg.driver = true;
                        break;
                case 'H':
                        arg.held = parse_unsigned(optarg, 0, 1u << 20);
                        break;
                case 'b':
                        arg.bytes = parse_unsigned(optarg, 1, 1u << 30);
                        break;
                case 'd':
                        arg.duration_msec = parse_unsigned(optarg, 10, 600000);
                        break;
                case 's':
                        arg.socket = optarg;
                        break;
                case 'k':
                        arg.samples = parse_unsigned(optarg, 1, MAX_SAMPLES);
                        break;
                case 'c':
                        arg.connected = true;
                        break;
                case 'g':
                        arg.group = optarg;
                        break;
                case 'r':
                        arg.region = optarg;
                        break;
                default:
                        usage();
                }
        }
        if (optind < argc)
                usage();
}

int main(int argc, char *argv[]) {
        parse_argv(argc, argv);
        if (strcmp(arg.mode, "pair") == 0) {
                if (arg.scheme == _SCHEME_MAX || (arg.scheme == SCHEME_STOCK && !arg.socket))
                        usage();
                return cmd_pair();
        }
        if (strcmp(arg.mode, "cold") == 0)
                return cmd_cold();
        if (strcmp(arg.mode, "parts") == 0)
                return cmd_parts();
        if (strcmp(arg.mode, "roundtrip") == 0) {
                if (!arg.socket)
                        usage();
                return cmd_roundtrip();
        }
        usage();
}
