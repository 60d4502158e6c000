/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * D-Bus benchmark: Charge and Uncharge calls per second through a bus
 * daemon to memacctd, and the same calls to a minimal sd-bus echo service
 * on the same bus, so that what the bus costs and what memacctd adds can
 * be told apart (run-dbus.sh runs both, interleaved).
 *
 * Two modes:
 *
 *   --echo-server  own org.memacct1.BenchEcho on --address and serve one
 *                  method, Echo(s path, t bytes, s stat, b keep) -> (t, t),
 *                  the signature of Charge, answering (0, 0) at once. A
 *                  process of its own with its own sd-bus connection and
 *                  sd-event loop, as a daemon's bus side is: the call goes
 *                  through the same four hops (caller -> bus -> service ->
 *                  bus -> caller) as a Charge does.
 *   (default)      a caller: --target memacctd or echo, --depth D calls in
 *                  flight (sd_bus_call_async; each reply sends the next),
 *                  over --duration ms after --warmup ms.
 *
 * The caller keeps D lanes; each lane alternates Charge("", 4096, "anon",
 * false) and Uncharge("", 4096, "anon", false), sending the next call of
 * the lane when the previous one is answered, and stops only after an
 * uncharge, so that usage is back to 0 at the end. Against memacctd the
 * caller's bus peer is first attached to its own group /bench/a/c<pid>
 * (/bench/a has a max of 1 GiB): each charge is a checked charge of four
 * levels, root included, as in bench-sock. Against echo the same calls
 * go to Echo. Every reply must be a method return: an error reply counts
 * as an error, reported, never hidden. At the end memacctd's usage of the
 * group is read back (MemoryCurrent) and must be 0.
 *
 * With --server-pid and --bus-pid, the CPU time of the server's and of the
 * bus daemon's threads over the measured span (schedstat) is reported per
 * call, as is this process's own.
 *
 * Output, one line:
 *   <target> <depth> <calls/s> errors=<n> verify=<ok|FAIL...>
 *   server_ns_call=<ns> bus_ns_call=<ns> client_ns_call=<ns> [first_error="..."]
 * Exit status 0 if the run completed (even with errors), 1 if it could
 * not run.
 */

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define MEMACCT_NAME "org.memacct1"
#define MEMACCT_PATH "/org/memacct1"
#define MEMACCT_MANAGER "org.memacct1.Manager"
#define ECHO_NAME "org.memacct1.BenchEcho"
#define ECHO_PATH "/org/memacct1/BenchEcho"
#define ECHO_INTERFACE "org.memacct1.BenchEcho"
#define CHARGE_BYTES 4096
#define MAX_DEPTH 256
#define CALL_TIMEOUT_USEC (30 * UINT64_C(1000000))

static const char *arg_address;
static const char *arg_target = "memacctd";
static unsigned arg_depth = 1;
static unsigned arg_duration_msec = 2000;
static unsigned arg_warmup_msec = 300;
static int arg_server_pid;
static int arg_bus_pid;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
        va_list ap;

        fputs("bench-dbus: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static uint64_t now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t self_cpu_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
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

static sd_bus *bus_connect(void) {
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, arg_address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0)
                die("cannot connect to the bus at %s: %s", arg_address, strerror(-r));
        return bus;
}

/* --- the echo service --- */

static int echo_method(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        (void) userdata;
        (void) ret_error;
        /* Answer at once, with the shape of Charge's reply; the arguments
         * are not even read. */
        return sd_bus_reply_method_return(m, "tt", UINT64_C(0), UINT64_C(0));
}

static const sd_bus_vtable echo_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Echo", SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high), echo_method,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int echo_server(void) {
        sd_event *event = NULL;
        sd_bus *bus = bus_connect();
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, ECHO_PATH, ECHO_INTERFACE, echo_vtable,
                                             NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, ECHO_NAME, 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                die("echo server: %s", strerror(-r));
        printf("ready\n");
        fflush(stdout);
        r = sd_event_loop(event);
        sd_bus_flush_close_unref(bus);
        sd_event_unref(event);
        return r < 0 ? 1 : 0;
}

/* --- the caller --- */

typedef struct Lane {
        unsigned index;
        bool charge_next; /* the next call of this lane is a charge */
        bool busy;        /* a call is in flight */
} Lane;

static struct {
        sd_bus *bus;
        bool memacctd;
        Lane lanes[MAX_DEPTH];
        unsigned busy;
        bool stopping;
        uint64_t completed; /* replies, errors included */
        uint64_t errors;
        char first_error[256];
} run;

static void wait_for_name(const char *name) {
        uint64_t deadline = now_nsec() + 10 * UINT64_C(1000000000);

        for (;;) {
                sd_bus_error e = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                int r;

                r = sd_bus_call_method(run.bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetNameOwner", &e, &reply, "s",
                                       name);
                sd_bus_message_unref(reply);
                sd_bus_error_free(&e);
                if (r >= 0)
                        return;
                if (now_nsec() > deadline)
                        die("%s did not appear on the bus within 10 s", name);
                usleep(20000);
        }
}

static void call_sync(const char *member, sd_bus_message **ret_reply, const char *types, ...) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(run.bus, &call, MEMACCT_NAME, MEMACCT_PATH,
                                           MEMACCT_MANAGER, member);
        va_start(ap, types);
        if (r >= 0)
                r = sd_bus_message_appendv(call, types, ap);
        va_end(ap);
        if (r >= 0)
                r = sd_bus_call(run.bus, call, CALL_TIMEOUT_USEC, &e, ret_reply);
        sd_bus_message_unref(call);
        if (r < 0 && !sd_bus_error_has_name(&e, "org.memacct1.Error.Exists"))
                die("%s: %s", member, e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
}

static void create_group(const char *path, uint64_t max) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(run.bus, &call, MEMACCT_NAME, MEMACCT_PATH,
                                           MEMACCT_MANAGER, "CreateGroup");
        if (r >= 0)
                r = max > 0 ? sd_bus_message_append(call, "sa{st}u", path, 1, "max", max, UINT32_MAX)
                            : sd_bus_message_append(call, "sa{st}u", path, 0, UINT32_MAX);
        if (r >= 0)
                r = sd_bus_call(run.bus, call, CALL_TIMEOUT_USEC, &e, NULL);
        sd_bus_message_unref(call);
        if (r < 0 && !sd_bus_error_has_name(&e, "org.memacct1.Error.Exists"))
                die("CreateGroup %s: %s", path, e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
}

/* MemoryCurrent of @path, read over the bus. */
static uint64_t group_current(const char *path) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *object;
        uint64_t v = UINT64_MAX;
        char *copy;
        int r;

        call_sync("GetGroup", &reply, "s", path);
        if (sd_bus_message_read(reply, "o", &object) < 0)
                die("GetGroup: no object path");
        copy = strdup(object);
        sd_bus_message_unref(reply);
        if (!copy)
                die("out of memory");
        r = sd_bus_get_property_trivial(run.bus, MEMACCT_NAME, copy, "org.memacct1.Group",
                                        "MemoryCurrent", &e, 't', &v);
        if (r < 0)
                die("MemoryCurrent of %s: %s", path, e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
        free(copy);
        return v;
}

static int lane_send(Lane *l);

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Lane *l = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        (void) ret_error;
        l->busy = false;
        run.busy--;
        run.completed++;
        if (e) {
                if (run.errors++ == 0)
                        snprintf(run.first_error, sizeof(run.first_error), "%s: %s", e->name,
                                 e->message ? e->message : "");
                /* Failed: the lane tries the same call again (a refused
                 * charge holds nothing), unless the run is over. */
                if (run.stopping)
                        return 0;
        } else
                l->charge_next = !l->charge_next;
        /* A lane stops only after its uncharge: usage ends at 0. */
        if (run.stopping && l->charge_next)
                return 0;
        if (lane_send(l) < 0)
                die("cannot send the next call");
        return 0;
}

static int lane_send(Lane *l) {
        sd_bus_message *call = NULL;
        bool charge = l->charge_next;
        int r;

        if (run.memacctd)
                r = sd_bus_message_new_method_call(run.bus, &call, MEMACCT_NAME, MEMACCT_PATH,
                                                   MEMACCT_MANAGER, charge ? "Charge" : "Uncharge");
        else
                r = sd_bus_message_new_method_call(run.bus, &call, ECHO_NAME, ECHO_PATH,
                                                   ECHO_INTERFACE, "Echo");
        if (r >= 0)
                r = sd_bus_message_append(call, "stsb", "", (uint64_t) CHARGE_BYTES, "anon", 0);
        if (r >= 0)
                r = sd_bus_call_async(run.bus, NULL, call, on_reply, l, CALL_TIMEOUT_USEC);
        sd_bus_message_unref(call);
        if (r < 0)
                return r;
        l->busy = true;
        run.busy++;
        return 0;
}

/* Serve the bus until @deadline_nsec (0: until no lane is busy). */
static void pump(uint64_t deadline_nsec) {
        for (;;) {
                int r;

                if (deadline_nsec == 0 ? run.busy == 0 : now_nsec() >= deadline_nsec)
                        return;
                r = sd_bus_process(run.bus, NULL);
                if (r < 0)
                        die("bus: %s", strerror(-r));
                if (r > 0)
                        continue;
                r = sd_bus_wait(run.bus, deadline_nsec == 0 ? UINT64_MAX : 10000);
                if (r < 0 && r != -EINTR)
                        die("bus: %s", strerror(-r));
        }
}

static int caller(void) {
        char group[64] = "";
        uint64_t t0, t1, c0, c1, s0, s1, b0, b1, n0, n1;
        const char *verify = "ok";
        char verify_buf[96];
        double secs;

        run.bus = bus_connect();
        run.memacctd = strcmp(arg_target, "memacctd") == 0;
        wait_for_name(run.memacctd ? MEMACCT_NAME : ECHO_NAME);
        if (run.memacctd) {
                create_group("/bench", 0);
                create_group("/bench/a", UINT64_C(1) << 30);
                snprintf(group, sizeof(group), "/bench/a/c%d", (int) getpid());
                create_group(group, 0);
                call_sync("Attach", NULL, "s", group);
        }

        for (unsigned i = 0; i < arg_depth; i++) {
                run.lanes[i] = (Lane) { .index = i, .charge_next = true };
                if (lane_send(&run.lanes[i]) < 0)
                        die("cannot send");
        }
        pump(now_nsec() + (uint64_t) arg_warmup_msec * 1000000u);

        n0 = run.completed;
        c0 = self_cpu_nsec();
        s0 = process_cpu_nsec(arg_server_pid);
        b0 = process_cpu_nsec(arg_bus_pid);
        t0 = now_nsec();
        pump(t0 + (uint64_t) arg_duration_msec * 1000000u);
        t1 = now_nsec();
        n1 = run.completed;
        c1 = self_cpu_nsec();
        s1 = process_cpu_nsec(arg_server_pid);
        b1 = process_cpu_nsec(arg_bus_pid);

        run.stopping = true;
        pump(0);

        if (run.memacctd) {
                uint64_t cur = group_current(group);

                if (cur != 0) {
                        snprintf(verify_buf, sizeof(verify_buf), "FAIL:usage=%" PRIu64, cur);
                        verify = verify_buf;
                }
        }

        secs = (double) (t1 - t0) / 1e9;
        n1 -= n0;
        printf("%s %u %.0f errors=%" PRIu64 " verify=%s server_ns_call=%.0f bus_ns_call=%.0f "
               "client_ns_call=%.0f",
               run.memacctd ? "memacctd" : "echo", arg_depth, n1 > 0 ? (double) n1 / secs : 0.0,
               run.errors, verify, n1 > 0 && arg_server_pid ? (double) (s1 - s0) / (double) n1 : 0.0,
               n1 > 0 && arg_bus_pid ? (double) (b1 - b0) / (double) n1 : 0.0,
               n1 > 0 ? (double) (c1 - c0) / (double) n1 : 0.0);
        if (run.errors > 0)
                printf(" first_error=\"%s\"", run.first_error);
        putchar('\n');
        sd_bus_flush_close_unref(run.bus);
        return 0;
}

static void help(void) {
        printf("bench-dbus --address ADDRESS [--target memacctd|echo] [--depth N]\n"
               "           [--duration MS] [--warmup MS] [--server-pid PID] [--bus-pid PID]\n"
               "bench-dbus --address ADDRESS --echo-server\n");
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "address", required_argument, NULL, 'a' },
                { "target", required_argument, NULL, 't' },
                { "depth", required_argument, NULL, 'd' },
                { "duration", required_argument, NULL, 'D' },
                { "warmup", required_argument, NULL, 'w' },
                { "server-pid", required_argument, NULL, 's' },
                { "bus-pid", required_argument, NULL, 'b' },
                { "echo-server", no_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        bool server = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'a':
                        arg_address = optarg;
                        break;
                case 't':
                        arg_target = optarg;
                        break;
                case 'd':
                        arg_depth = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'D':
                        arg_duration_msec = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'w':
                        arg_warmup_msec = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 's':
                        arg_server_pid = atoi(optarg);
                        break;
                case 'b':
                        arg_bus_pid = atoi(optarg);
                        break;
                case 'e':
                        server = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        help();
                        return 1;
                }
        }
        if (!arg_address)
                die("--address is required");
        if (server)
                return echo_server();
        if (arg_depth < 1 || arg_depth > MAX_DEPTH)
                die("--depth must be 1..%d", MAX_DEPTH);
        if (strcmp(arg_target, "memacctd") != 0 && strcmp(arg_target, "echo") != 0)
                die("--target must be memacctd or echo");
        return caller();
}
