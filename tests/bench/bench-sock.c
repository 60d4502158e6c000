/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket benchmark: a load generator for memacctd and, for comparison, for
 * redis-server, over Unix sockets, in the same connection/depth shape.
 *
 * One run measures one point: --conns N connections, each keeping a
 * pipeline of --depth D requests: it writes D requests with one write(),
 * reads until all D answers are in, checks every one, and writes the next
 * D (redis-benchmark -P does the same). The requests alternate charge and
 * uncharge of 4096 bytes (a charge is always answered before its uncharge
 * is sent or sits before it in the same batch), and a connection stops
 * only after an uncharge, so the usage is back to 0 at the end; that is
 * checked. An operation is one request: a charge or an uncharge.
 *
 *   --system memacct  Charge{bytes:4096} / Uncharge{bytes:4096} without a
 *                     path, each connection attached to its own group
 *                     /bench/a/c<i> (a setup connection creates /bench,
 *                     /bench/a with max 1 GiB, and the leaves): a checked
 *                     charge of 4 levels (the root included). The frames are
 *                     encoded once with protobuf-c; answers are read with
 *                     a minimal scanner of the Response fields id, status
 *                     and message (no allocation per answer). Every answer
 *                     must have status OK and the id of its request.
 *                     With --kept, the charges are kept charges of the
 *                     shared group /bench/a (Charge{path, keep}), each a
 *                     durable change whose OK waits for its save.
 *   --system redis    INCRBY / DECRBY bench:k:<i> 4096: one add per op.
 *   --system eval     EVAL of a Lua script doing the same checked 3-level
 *                     charge (INCRBY bench, bench:a, bench:a:c<i>; if one
 *                     is above the limit, undo and return an error), and
 *                     the matching uncharge (refused if the leaf holds less,
 *                     else DECRBY the three).
 *   --system idle     open --conns connections, each with one Hello, print
 *                     "ready <n> <ms> ms" once every Hello is answered,
 *                     and hold them until a signal ends the process (for
 *                     the daemon's RSS with idle sessions).
 *
 * Threads: --threads T (default 1) client threads share the connections;
 * a thread with one connection uses blocking reads, one with several an
 * epoll loop. The same driver serves all three systems.
 *
 * Timing: the requests run for --warmup ms, then the completed answers are
 * counted over --duration ms of CLOCK_MONOTONIC; then every connection
 * finishes its batch and stops. With --server-pid, the server's CPU time
 * over the same span (the sum of /proc/PID/task/<tid>/schedstat, in ns) is
 * reported per operation, as is this process's own CPU time.
 *
 * Output, one line:
 *   <system> <conns> <depth> <ops/s> errors=<n> verify=<ok|FAIL...>
 *   server_ns_op=<ns> client_ns_op=<ns> [first_error="..."]
 * An error is an answer whose status is not OK (or a redis error reply);
 * errors are counted and reported, never hidden. Exit status 0 if the
 * run completed (even with errors), 1 if it could not run.
 *
 * This file holds the options, the load loop, the timing and the report;
 * what goes on the wire, and the setup calls, are bench-sock-proto.c.
 */

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench-sock-proto.h"
#include "frame.h"
#include "memacct.pb-c.h"

#define MAX_DEPTH 4096

static const char *const system_names[] = {
        [SYS_MEMACCT] = "memacct",
        [SYS_REDIS] = "redis",
        [SYS_EVAL] = "eval",
        [SYS_IDLE] = "idle",
};

typedef struct Options {
        System system;
        const char *socket;
        unsigned conns;
        unsigned depth;
        unsigned threads;
        unsigned duration_msec;
        unsigned warmup_msec;
        int server_pid;
        bool kept;
} Options;

static Options opt = {
        .system = SYS_MEMACCT,
        .conns = 1,
        .depth = 1,
        .threads = 1,
        .duration_msec = 2000,
        .warmup_msec = 300,
};

/* A connection's pre-encoded requests: 2 * depth frames alternating charge
 * and uncharge, starting with a charge; bounds[j] is where frame j starts
 * (bounds[2 * depth] is the end). Batch k sends frames s .. s + depth - 1
 * with s = (k * depth) % 2. */
typedef struct Conn {
        int fd;
        unsigned index;
        uint8_t *seq;
        size_t *bounds;
        uint64_t batches; /* batches sent */
        unsigned start;   /* first frame of the batch in flight */
        unsigned got;     /* answers of the batch in flight */
        bool done;
        uint8_t *in;
        size_t in_len;
} Conn;

typedef struct Thread {
        pthread_t thread;
        Conn **conns;
        unsigned nconns;
        int result;
        /* Written by the thread, read by main: own cache line. */
        _Alignas(64) _Atomic uint64_t ops;
        uint64_t errors;
        char first_error[160];
        char pad[64];
} Thread;

static atomic_bool stop_flag;

static uint64_t now_nsec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void sleep_msec(unsigned msec) {
        struct timespec ts = { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* CPU time of every thread of @pid in ns, from schedstat; 0 if unknown. */
static uint64_t process_cpu_nsec(int pid) {
        char path[64];
        struct dirent *de;
        uint64_t sum = 0;
        DIR *d;

        if (pid <= 0)
                return 0;
        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char p[320];
                unsigned long long v;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", pid, de->d_name);
                f = fopen(p, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &v) == 1)
                        sum += v;
                fclose(f);
        }
        closedir(d);
        return sum;
}

/* ---- the load loop ---- */

static void conn_send_batch(Conn *c) {
        unsigned start = (unsigned) ((c->batches * opt.depth) % 2);

        c->start = start;
        c->got = 0;
        c->batches++;
        write_all(c->fd, c->seq + c->bounds[start], c->bounds[start + opt.depth] - c->bounds[start]);
}

static void thread_error(Thread *t, const char *what, const uint8_t *msg, size_t len) {
        if (t->errors++ == 0)
                snprintf(t->first_error, sizeof(t->first_error), "%s%.*s", what,
                         (int) (len > 120 ? 120 : len), msg ? (const char *) msg : "");
}

/* Consume the complete answers in c->in. Return: answers consumed. */
static unsigned conn_parse(Thread *t, Conn *c) {
        const uint8_t *p = c->in, *end = c->in + c->in_len;
        unsigned n = 0;

        while (p < end && c->got < opt.depth) {
                if (opt.system == SYS_MEMACCT) {
                        size_t body, prefix;
                        RespFields f;
                        int r = frame_prefix_decode(p, (size_t) (end - p), MAX_FRAME, &body, &prefix);

                        if (r == -EAGAIN || (r == 0 && (size_t) (end - p) - prefix < body))
                                break;
                        if (r < 0 || !response_scan(p + prefix, body, &f))
                                die("malformed frame from memacctd");
                        p += prefix + body;
                        if (f.id == 0)
                                continue; /* unsolicited: not ours to count */
                        if (f.id != c->start + c->got + 1)
                                thread_error(t, "answer out of order", NULL, 0);
                        else if (f.status != 0)
                                thread_error(t, "", f.message, f.message_len);
                } else {
                        const uint8_t *nl = memchr(p, '\n', (size_t) (end - p));

                        if (!nl)
                                break;
                        if (*p == '-')
                                thread_error(t, "", p, (size_t) (nl - p - 1));
                        else if (*p != ':' && *p != '+')
                                die("unexpected redis reply: %.*s", (int) (nl - p), (const char *) p);
                        p = nl + 1;
                }
                c->got++;
                n++;
        }
        memmove(c->in, p, (size_t) (end - p));
        c->in_len = (size_t) (end - p);
        return n;
}

/* One read on @c, then its answers; the next batch once all are in.
 * Return: true while the connection runs. */
static bool conn_readable(Thread *t, Conn *c) {
        ssize_t k;

        k = read(c->fd, c->in + c->in_len, IN_BUF_SIZE - c->in_len);
        if (k < 0 && errno == EINTR)
                return true;
        if (k < 0 && errno == EAGAIN)
                die("no answer on connection %u for 10 s", c->index);
        if (k < 0)
                die("read: %m");
        if (k == 0)
                die("the server closed connection %u", c->index);
        c->in_len += (size_t) k;
        conn_parse(t, c);
        if (c->got < opt.depth)
                return true;
        /* Counted per batch: only this thread writes it, main reads it. */
        atomic_store_explicit(&t->ops, atomic_load_explicit(&t->ops, memory_order_relaxed) + opt.depth,
                              memory_order_relaxed);
        /* Stop only after an uncharge: every charge sent has its uncharge. */
        if (atomic_load_explicit(&stop_flag, memory_order_relaxed) && (c->batches * opt.depth) % 2 == 0) {
                c->done = true;
                return false;
        }
        conn_send_batch(c);
        return true;
}

static void *thread_main(void *userdata) {
        Thread *t = userdata;
        unsigned active = t->nconns;
        int ep = -1;

        for (unsigned i = 0; i < t->nconns; i++)
                conn_send_batch(t->conns[i]);
        if (t->nconns == 1) {
                while (conn_readable(t, t->conns[0]))
                        ;
                return NULL;
        }
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0)
                die("epoll_create1: %m");
        for (unsigned i = 0; i < t->nconns; i++) {
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t->conns[i] };

                if (epoll_ctl(ep, EPOLL_CTL_ADD, t->conns[i]->fd, &ev) < 0)
                        die("epoll_ctl: %m");
        }
        while (active > 0) {
                struct epoll_event evs[128];
                int n = epoll_wait(ep, evs, 128, 5000);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        die("epoll_wait: %m");
                if (n == 0)
                        die("no answer for 5 s");
                for (int i = 0; i < n; i++) {
                        Conn *c = evs[i].data.ptr;

                        if (c->done)
                                continue;
                        if (!conn_readable(t, c)) {
                                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                                active--;
                        }
                }
        }
        close(ep);
        return NULL;
}

static void raise_nofile(unsigned need) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        if (rl.rlim_cur < need + 64) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need + 16)
                die("RLIMIT_NOFILE is %llu, %u connections need more (ulimit -n)",
                    (unsigned long long) rl.rlim_cur, need);
}

/* --system idle: @conns sessions each after a Hello, held until killed. */
static _Noreturn void run_idle(void) {
        int *fds = xmalloc(opt.conns * sizeof(int));
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__Hello h = MEMACCT__V1__HELLO__INIT;
        uint8_t out[256], *buf = xmalloc(IN_BUF_SIZE);
        uint64_t t0 = now_nsec(CLOCK_MONOTONIC);
        size_t n;

        h.has_version = true;
        h.version = 1;
        h.agent = (char *) "bench-sock idle";
        req.has_id = true;
        req.id = 1;
        req.op_case = MEMACCT__V1__REQUEST__OP_HELLO;
        req.hello = &h;
        n = encode_request(&req, out);
        for (unsigned i = 0; i < opt.conns; i++) {
                fds[i] = connect_unix(opt.socket);
                write_all(fds[i], out, n);
        }
        for (unsigned i = 0; i < opt.conns; i++) {
                size_t len = 0;
                Memacct__V1__Response *resp = memacct_read_response(fds[i], buf, &len);

                if (resp->has_status && resp->status != 0)
                        die("Hello on connection %u: status %d", i, (int) resp->status);
                memacct__v1__response__free_unpacked(resp, NULL);
        }
        printf("ready %u %.0f ms\n", opt.conns, (double) (now_nsec(CLOCK_MONOTONIC) - t0) / 1e6);
        fflush(stdout);
        /* Held until a signal ends us (the kernel closes the sockets). */
        for (;;)
                pause();
}

static void help(void) {
        printf("Usage: bench-sock --system memacct|redis|eval|idle --socket PATH [OPTIONS]\n\n"
               "  --conns N        connections (default 1)\n"
               "  --depth D        requests in flight per connection (default 1)\n"
               "  --threads T      client threads (default 1)\n"
               "  --duration MSEC  measured time (default 2000)\n"
               "  --warmup MSEC    before measuring (default 300)\n"
               "  --server-pid PID report the server's CPU time per operation\n"
               "  --kept           memacct: kept charges of /bench/a (durable changes)\n");
}

static unsigned parse_uint(const char *s, const char *what, unsigned min, unsigned max) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || !*s || *end || v < min || v > max)
                die("%s: expected %u..%u, got '%s'", what, min, max, s);
        return (unsigned) v;
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "system", required_argument, NULL, 's' },
                { "socket", required_argument, NULL, 'S' },
                { "conns", required_argument, NULL, 'c' },
                { "depth", required_argument, NULL, 'd' },
                { "threads", required_argument, NULL, 't' },
                { "duration", required_argument, NULL, 'D' },
                { "warmup", required_argument, NULL, 'w' },
                { "server-pid", required_argument, NULL, 'p' },
                { "kept", no_argument, NULL, 'k' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        exit(0);
                case 's': {
                        bool found = false;

                        for (System s = 0; s <= SYS_IDLE; s++)
                                if (strcmp(optarg, system_names[s]) == 0) {
                                        opt.system = s;
                                        found = true;
                                }
                        if (!found)
                                die("--system: memacct, redis, eval or idle, not '%s'", optarg);
                        break;
                }
                case 'S':
                        opt.socket = optarg;
                        break;
                case 'c':
                        opt.conns = parse_uint(optarg, "--conns", 1, 100000);
                        break;
                case 'd':
                        opt.depth = parse_uint(optarg, "--depth", 1, MAX_DEPTH);
                        break;
                case 't':
                        opt.threads = parse_uint(optarg, "--threads", 1, 256);
                        break;
                case 'D':
                        opt.duration_msec = parse_uint(optarg, "--duration", 10, 600000);
                        break;
                case 'w':
                        opt.warmup_msec = parse_uint(optarg, "--warmup", 0, 600000);
                        break;
                case 'k':
                        opt.kept = true;
                        break;
                case 'p':
                        opt.server_pid = (int) parse_uint(optarg, "--server-pid", 1, INT32_MAX);
                        break;
                default:
                        exit(2);
                }
        }
        if (optind < argc || !opt.socket)
                die("usage: bench-sock --system SYSTEM --socket PATH [OPTIONS] (--help)");
        if (opt.threads > opt.conns)
                opt.threads = opt.conns;
}

int main(int argc, char *argv[]) {
        Conn *conns;
        Thread *threads;
        uint8_t *mseq = NULL;
        size_t *mbounds = NULL;
        uint64_t t0, t1, c0 = 0, c1 = 0, s0, s1, u0, u1, errors = 0;
        const char *first_error = NULL;
        char verify[96] = "ok";
        int setup_fd;
        double secs;

        parse_argv(argc, argv);
        signal(SIGPIPE, SIG_IGN);
        raise_nofile(opt.conns + 1);
        if (opt.system == SYS_IDLE)
                run_idle();

        /* Setup: the groups (memacctd) or the keys at 0 (redis). */
        setup_fd = connect_unix(opt.socket);
        if (opt.system == SYS_MEMACCT) {
                memacct_hello(setup_fd);
                memacct_create(setup_fd, "/bench", LIMIT_BYTES);
                memacct_create(setup_fd, "/bench/a", LIMIT_BYTES);
                for (unsigned i = 0; i < opt.conns; i++) {
                        char path[64];

                        snprintf(path, sizeof(path), "/bench/a/c%u", i);
                        memacct_create(setup_fd, path, 0);
                }
                if (memacct_usage(setup_fd, "/bench") != 0)
                        die("/bench is not empty before the run");
                memacct_sequence(opt.depth, opt.kept, &mseq, &mbounds);
        } else
                redis_reset(setup_fd, opt.system, opt.conns);

        conns = calloc(opt.conns, sizeof(Conn));
        threads = aligned_alloc(64, opt.threads * sizeof(Thread));
        if (!conns || !threads)
                die("out of memory");
        memset(threads, 0, opt.threads * sizeof(Thread));
        for (unsigned i = 0; i < opt.threads; i++)
                threads[i].conns = xmalloc((opt.conns / opt.threads + 1) * sizeof(Conn *));
        for (unsigned i = 0; i < opt.conns; i++) {
                Conn *c = &conns[i];
                Thread *t = &threads[i % opt.threads];

                c->index = i;
                c->fd = connect_unix(opt.socket);
                c->in = xmalloc(IN_BUF_SIZE);
                if (opt.system == SYS_MEMACCT) {
                        char path[64];

                        snprintf(path, sizeof(path), "/bench/a/c%u", i);
                        memacct_hello(c->fd);
                        memacct_attach(c->fd, path);
                        c->seq = mseq;
                        c->bounds = mbounds;
                } else
                        redis_sequence(opt.system, opt.depth, i, &c->seq, &c->bounds);
                t->conns[t->nconns++] = c;
        }

        for (unsigned i = 0; i < opt.threads; i++)
                if (pthread_create(&threads[i].thread, NULL, thread_main, &threads[i]) != 0)
                        die("pthread_create failed");
        sleep_msec(opt.warmup_msec);
        t0 = now_nsec(CLOCK_MONOTONIC);
        s0 = process_cpu_nsec(opt.server_pid);
        u0 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned i = 0; i < opt.threads; i++)
                c0 += atomic_load(&threads[i].ops);
        sleep_msec(opt.duration_msec);
        t1 = now_nsec(CLOCK_MONOTONIC);
        s1 = process_cpu_nsec(opt.server_pid);
        u1 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned i = 0; i < opt.threads; i++)
                c1 += atomic_load(&threads[i].ops);
        atomic_store(&stop_flag, true);
        for (unsigned i = 0; i < opt.threads; i++) {
                pthread_join(threads[i].thread, NULL);
                errors += threads[i].errors;
                if (!first_error && threads[i].errors)
                        first_error = threads[i].first_error;
        }

        /* Everything charged was uncharged: check it while the sessions
         * still exist (their end would release their charges anyway). */
        if (opt.system == SYS_MEMACCT) {
                int64_t u = memacct_usage(setup_fd, "/bench");

                if (u != 0)
                        snprintf(verify, sizeof(verify), "FAIL(/bench.current=%" PRId64 ")", u);
        } else {
                int64_t s = redis_check(setup_fd, opt.system, opt.conns);

                if (s < 0)
                        snprintf(verify, sizeof(verify), "FAIL(check-refused)");
                else if (s != 0)
                        snprintf(verify, sizeof(verify), "FAIL(sum|keys|=%" PRId64 ")", s);
        }
        for (unsigned i = 0; i < opt.conns; i++)
                close(conns[i].fd);
        close(setup_fd);

        secs = (double) (t1 - t0) / 1e9;
        printf("%s %u %u %.0f errors=%" PRIu64 " verify=%s server_ns_op=%.0f client_ns_op=%.0f", system_names[opt.system],
               opt.conns, opt.depth, (double) (c1 - c0) / secs, errors, verify,
               opt.server_pid && c1 > c0 ? (double) (s1 - s0) / (double) (c1 - c0) : 0.0,
               c1 > c0 ? (double) (u1 - u0) / (double) (c1 - c0) : 0.0);
        if (first_error)
                printf(" first_error=\"%s\"", first_error);
        putchar('\n');
        return 0;
}
