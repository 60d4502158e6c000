/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim benchmark: how long a charge refused at max waits for one round
 * of reclaim from N reclaimable clients (libmemacct, memacct(7) RECLAIM),
 * against a running memacctd.
 *
 * N holder threads, each with its own handle attached to a group of its
 * own below /bench-reclaim (max N x 1 MiB), hold 1 MiB each, declared
 * reclaimable, and serve requests from an event loop (poll() on
 * memacct_fd(), memacct_process()); each gives back what it is asked and
 * notes the time it answered, and charges back up to 1 MiB between
 * rounds. A charger
 * attached to /bench-reclaim/app then charges what needs every holder to
 * give a share, --rounds times, and each time gives it back.
 *
 * Output, one line per figure:
 *   reclaim_round <holders> <µs>    charge sent to reply received (median)
 *   reclaim_after_last <holders> <µs> the last holder's answer to the reply (median)
 *   plain_charge <holders> <µs>     a charge that needs no reclaim, same handle (median): the peer
 *   errors=<n>
 * The last answer is timed in the holder before its ReclaimDone goes out,
 * so reclaim_after_last includes that message's trip and the daemon's
 * retry of the charge.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memacct.h"

#define MIB (UINT64_C(1) << 20)
#define ROOT "/bench-reclaim"

typedef struct Holder {
        pthread_t thread;
        memacct *m;
        unsigned index;
        uint64_t held;
} Holder;

static const char *socket_path;
static unsigned nholders = 100, nrounds = 20;
static _Atomic bool stop;
static _Atomic bool refill = true; /* between rounds only: a cache refilling at once would take back the room */
static _Atomic uint64_t last_answer_nsec;
static _Atomic uint64_t errors;

static uint64_t now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int64_t give_back(memacct *m, uint64_t bytes, const char *region, void *userdata) {
        Holder *h = userdata;
        uint64_t give = bytes < h->held ? bytes : h->held;

        (void) region;
        if (give > 0 && memacct_uncharge(m, NULL, give, MEMACCT_STAT_FILE, 0) < 0) {
                atomic_fetch_add(&errors, 1);
                return -1;
        }
        h->held -= give;
        /* The answer goes out right after this returns. */
        atomic_store(&last_answer_nsec, now_nsec());
        return (int64_t) give;
}

static void *holder_main(void *userdata) {
        Holder *h = userdata;

        while (!atomic_load(&stop)) {
                struct pollfd pfd = { .fd = memacct_fd(h->m), .events = POLLIN };

                if (poll(&pfd, 1, 20) > 0 && memacct_process(h->m, 0) < 0)
                        atomic_fetch_add(&errors, 1);
                /* Back up to 1 MiB, as a cache refills, without waiting. */
                if (atomic_load(&refill) && h->held < MIB &&
                    memacct_charge(h->m, NULL, MIB - h->held, MEMACCT_STAT_FILE, MEMACCT_NO_WAIT, NULL) >= 0)
                        h->held = MIB;
        }
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n) {
        qsort(v, n, sizeof(*v), cmp_u64);
        return v[n / 2];
}

static void usage(void) {
        fprintf(stderr, "Usage: bench-reclaim --socket PATH [--holders N] [--rounds N]\n");
        exit(2);
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "holders", required_argument, NULL, 'n' },
                { "rounds", required_argument, NULL, 'r' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'n':
                        nholders = (unsigned) atoi(optarg);
                        if (nholders < 1 || nholders > 1000)
                                usage();
                        break;
                case 'r':
                        nrounds = (unsigned) atoi(optarg);
                        if (nrounds < 1 || nrounds > 10000)
                                usage();
                        break;
                default:
                        usage();
                }
        if (optind < argc || !socket_path)
                usage();
}

int main(int argc, char *argv[]) {
        memacct_limits max;
        memacct *root = NULL, *app = NULL;
        uint64_t *round_us, *after_us, *plain_us;
        Holder *h;
        char path[64];
        int r;

        parse_argv(argc, argv);
        max = (memacct_limits) { .set = MEMACCT_LIMIT_MAX, .max = nholders * MIB };
        if (memacct_connect(socket_path, &root) < 0 || memacct_connect(socket_path, &app) < 0) {
                fprintf(stderr, "bench-reclaim: cannot connect to %s\n", socket_path);
                return 1;
        }
        r = memacct_create_group(root, ROOT, &max, MEMACCT_NO_OWNER);
        if (r == -EEXIST)
                r = memacct_set_limits(root, ROOT, &max, MEMACCT_FORCE);
        if (r >= 0)
                r = memacct_create_group(root, ROOT "/app", NULL, MEMACCT_NO_OWNER);
        if (r < 0 && r != -EEXIST) {
                fprintf(stderr, "bench-reclaim: create %s: %s\n", ROOT, strerror(-r));
                return 1;
        }
        h = calloc(nholders, sizeof(*h));
        round_us = calloc(nrounds, sizeof(uint64_t));
        after_us = calloc(nrounds, sizeof(uint64_t));
        plain_us = calloc(nrounds, sizeof(uint64_t));
        if (!h || !round_us || !after_us || !plain_us)
                return 1;
        for (unsigned i = 0; i < nholders; i++) {
                snprintf(path, sizeof(path), ROOT "/h%u", i);
                h[i].index = i;
                r = memacct_create_group(root, path, NULL, MEMACCT_NO_OWNER);
                if (r >= 0 || r == -EEXIST)
                        r = memacct_connect(socket_path, &h[i].m);
                if (r >= 0)
                        r = memacct_attach(h[i].m, path);
                if (r >= 0)
                        r = memacct_charge(h[i].m, NULL, MIB, MEMACCT_STAT_FILE, 0, NULL);
                if (r >= 0)
                        r = memacct_set_reclaimable(h[i].m, NULL, give_back, &h[i]);
                if (r < 0 || pthread_create(&h[i].thread, NULL, holder_main, &h[i]) != 0) {
                        fprintf(stderr, "bench-reclaim: holder %u: %s\n", i, strerror(-r));
                        return 1;
                }
                h[i].held = MIB;
        }
        if (memacct_attach(app, ROOT "/app") < 0)
                return 1;

        for (unsigned k = 0; k < nrounds; k++) {
                /* Half of every holder's share: everyone is asked. */
                uint64_t need = nholders * MIB / 2, t0, t1;

                /* Let the holders charge back up first. */
                atomic_store(&refill, true);
                for (int wait = 0; wait < 500; wait++) {
                        memacct_group_info *g = NULL;
                        bool full = memacct_get_group(root, ROOT, NULL, 0, &g) >= 0 && g->current >= nholders * MIB;

                        memacct_group_info_free(g);
                        if (full)
                                break;
                        (void) poll(NULL, 0, 2);
                }
                atomic_store(&refill, false);
                t0 = now_nsec();
                r = memacct_charge(app, NULL, 4096, MEMACCT_STAT_ANON, MEMACCT_NO_WAIT, NULL);
                plain_us[k] = (now_nsec() - t0) / 1000;
                if (r >= 0)
                        (void) memacct_uncharge(app, NULL, 4096, MEMACCT_STAT_ANON, 0);

                t0 = now_nsec();
                r = memacct_charge(app, NULL, need, MEMACCT_STAT_ANON, 0, NULL);
                t1 = now_nsec();
                if (r < 0) {
                        if (atomic_fetch_add(&errors, 1) == 0)
                                fprintf(stderr, "bench-reclaim: round %u: %s\n", k, strerror(-r));
                        continue;
                }
                round_us[k] = (t1 - t0) / 1000;
                after_us[k] = (t1 - atomic_load(&last_answer_nsec)) / 1000;
                if (memacct_uncharge(app, NULL, need, MEMACCT_STAT_ANON, 0) < 0)
                        atomic_fetch_add(&errors, 1);
        }
        atomic_store(&stop, true);
        for (unsigned i = 0; i < nholders; i++) {
                pthread_join(h[i].thread, NULL);
                memacct_close(h[i].m);
        }
        printf("reclaim_round %u %" PRIu64 "\n", nholders, median(round_us, nrounds));
        printf("reclaim_after_last %u %" PRIu64 "\n", nholders, median(after_us, nrounds));
        printf("plain_charge %u %" PRIu64 "\n", nholders, median(plain_us, nrounds));
        printf("errors=%" PRIu64 "\n", atomic_load(&errors));
        memacct_close(app);
        memacct_close(root);
        free(h);
        free(round_us);
        free(after_us);
        free(plain_us);
        return 0;
}
