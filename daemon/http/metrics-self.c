/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's own series in the exposition: its requests, sessions,
 * connections, events, saves and flushes (base/selfstats.h, relaxed
 * counters summed here), and the process_* series as the Prometheus
 * client libraries write them, from /proc/self and getrlimit().
 *
 * A histogram's _count is the sum of the buckets read, so it equals the
 * +Inf bucket whatever moved during the scrape (selfstats.c says why).
 */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http/metrics-internal.h"
#include "base/selfstats.h"
#include "status.h"

#define ADD(...)                                                 \
        do {                                                     \
                if (metrics_text_printf(out, __VA_ARGS__) < 0)   \
                        return -ENOMEM;                          \
        } while (0)

static int header(MetricsText *out, const char *name, const char *type, const char *help) {
        ADD("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
        return 0;
}

/* Wire statuses in lower case, as labels: "ok", "not_found"... */
static void status_label(unsigned s, char buf[static 32]) {
        const char *name = status_to_string((MemStatus) s);
        size_t i = 0;

        for (; name && name[i] && i < 31; i++)
                buf[i] = (char) (name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
        buf[i] = 0;
}

/* One histogram's samples, @labels ("transport=\"bus\"" or "") inside its braces. */
static int histogram(MetricsText *out, const char *name, const char *labels, SelfHistogram h) {
        const char *sep = labels[0] ? "," : "";
        SelfHistogramRead hr;
        uint64_t cum = 0;

        selfstats_histogram(h, &hr);
        for (size_t i = 0; i < SELF_HIST_BOUNDS; i++) {
                cum += hr.counts[i];
                ADD("%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, hr.bounds[i], cum);
        }
        cum += hr.counts[SELF_HIST_BOUNDS];
        ADD("%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
        if (labels[0]) {
                ADD("%s_sum{%s} %.9f\n", name, labels, hr.sum_sec);
                ADD("%s_count{%s} %" PRIu64 "\n", name, labels, cum);
        } else {
                ADD("%s_sum %.9f\n", name, hr.sum_sec);
                ADD("%s_count %" PRIu64 "\n", name, cum);
        }
        return 0;
}

static int render_requests(MetricsText *out) {
        char status[32];
        int r;

        r = header(out, "memacctd_requests_total", "counter",
                   "Requests served, by operation, wire status and transport.");
        if (r < 0)
                return r;
        for (ServiceTransport t = 0; t < _SERVICE_TRANSPORT_MAX; t++)
                for (ServiceOp op = 0; op < _SERVICE_OP_MAX; op++)
                        for (unsigned s = 0; s < _MEM_STATUS_MAX && s < SELF_STATUS_MAX; s++) {
                                uint64_t n = selfstats_requests(t, op, s);

                                /* Series appear once they count: the cross product is thousands. */
                                if (n == 0)
                                        continue;
                                status_label(s, status);
                                ADD("memacctd_requests_total{op=\"%s\",status=\"%s\",transport=\"%s\"} %" PRIu64
                                    "\n",
                                    service_op_to_string(op), status, service_transport_to_string(t), n);
                        }
        r = header(out, "memacctd_request_duration_seconds", "histogram",
                   "Time from a decoded request to its answer, by transport (the socket's stock page excluded).");
        if (r >= 0)
                r = histogram(out, "memacctd_request_duration_seconds", "transport=\"socket\"",
                              SELF_HIST_REQUEST_SOCKET);
        if (r >= 0)
                r = histogram(out, "memacctd_request_duration_seconds", "transport=\"bus\"", SELF_HIST_REQUEST_BUS);
        return r;
}

static int render_gauges(MetricsText *out) {
        int r;

        r = header(out, "memacctd_sessions", "gauge", "Sessions open, by transport.");
        for (ServiceTransport t = 0; r >= 0 && t < _SERVICE_TRANSPORT_MAX; t++)
                ADD("memacctd_sessions{transport=\"%s\"} %" PRId64 "\n", service_transport_to_string(t),
                    selfstats_sessions(t));
        if (r >= 0)
                r = header(out, "memacctd_connections", "gauge",
                           "Connections open, by transport (on the bus: clients known by their unique name).");
        for (ServiceTransport t = 0; r >= 0 && t < _SERVICE_TRANSPORT_MAX; t++)
                ADD("memacctd_connections{transport=\"%s\"} %" PRId64 "\n", service_transport_to_string(t),
                    selfstats_connections(t));
        return r;
}

static int render_events(MetricsText *out) {
        int r;

        r = header(out, "memacctd_events_total", "counter", "Events raised for the fan-out, by kind.");
        for (EventKind k = EVENT_MEMORY; r >= 0 && k <= EVENT_LIMITS_CHANGED; k++)
                ADD("memacctd_events_total{kind=\"%s\"} %" PRIu64 "\n", selfstats_event_kind_to_string(k),
                    selfstats_events(k));
        if (r >= 0)
                r = header(out, "memacctd_events_dropped_total", "counter",
                           "Events lost for their subscribers: they could not be encoded.");
        if (r >= 0)
                ADD("memacctd_events_dropped_total %" PRIu64 "\n", selfstats_counter(SELF_EVENTS_DROPPED));
        return r;
}

static int render_persistence(MetricsText *out) {
        int r;

        r = header(out, "memacctd_state_saves_total", "counter", "State saves that succeeded.");
        if (r >= 0)
                ADD("memacctd_state_saves_total %" PRIu64 "\n", selfstats_counter(SELF_STATE_SAVES));
        if (r >= 0)
                r = header(out, "memacctd_state_save_failures_total", "counter", "State saves that failed.");
        if (r >= 0)
                ADD("memacctd_state_save_failures_total %" PRIu64 "\n", selfstats_counter(SELF_STATE_SAVE_FAILURES));
        if (r >= 0)
                r = header(out, "memacctd_fsync_duration_seconds", "histogram",
                           "Time of each fsync or fdatasync of the state and its journal.");
        if (r >= 0)
                r = histogram(out, "memacctd_fsync_duration_seconds", "", SELF_HIST_FSYNC);
        if (r >= 0)
                r = header(out, "memacctd_stats_flush_duration_seconds", "histogram",
                           "Time of each periodic flush of the per-CPU statistics into the tree.");
        if (r >= 0)
                r = histogram(out, "memacctd_stats_flush_duration_seconds", "", SELF_HIST_FLUSH);
        return r;
}

/* Entries of /proc/self/fd but the one the listing opens; -1 if unreadable. */
static long open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        long n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1;
}

/* The boot time (btime of /proc/stat), seconds since the epoch; 0 if unreadable. */
static unsigned long long boot_time(void) {
        unsigned long long btime = 0;
        char line[256];
        FILE *f = fopen("/proc/stat", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "btime %llu", &btime) == 1)
                        break;
        fclose(f);
        return btime;
}

/* process_* as the client libraries write them (fields of proc(5) /proc/pid/stat). */
static int render_process(MetricsText *out) {
        unsigned long long utime, stime, start, vsize;
        long long rss;
        long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
        char buf[1024], *p;
        struct rlimit rl;
        size_t n;
        FILE *f;
        int r = 0;

        f = fopen("/proc/self/stat", "re");
        if (!f)
                return 0; /* no /proc: the series are left out */
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        /* The command may hold spaces and parentheses: fields start after the last ')'. */
        p = strrchr(buf, ')');
        if (!p || ticks <= 0 ||
            sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                   &utime, &stime, &start, &vsize, &rss) != 5)
                return 0;

        r = header(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        if (r >= 0)
                ADD("process_cpu_seconds_total %.2f\n", (double) (utime + stime) / (double) ticks);
        if (r >= 0)
                r = header(out, "process_start_time_seconds", "gauge",
                           "Start time of the process since unix epoch in seconds.");
        if (r >= 0)
                ADD("process_start_time_seconds %.2f\n", (double) boot_time() + (double) start / (double) ticks);
        if (r >= 0)
                r = header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        if (r >= 0)
                ADD("process_virtual_memory_bytes %llu\n", vsize);
        if (r >= 0)
                r = header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        if (r >= 0)
                ADD("process_resident_memory_bytes %lld\n", rss * (long long) page);
        fds = open_fds();
        if (r >= 0 && fds >= 0) {
                r = header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
                if (r >= 0)
                        ADD("process_open_fds %ld\n", fds);
        }
        if (r >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                r = header(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
                if (r >= 0)
                        ADD("process_max_fds %llu\n", (unsigned long long) rl.rlim_cur);
        }
        return r;
}

int metrics_render_self(MetricsText *out) {
        int r;

        r = render_requests(out);
        if (r >= 0)
                r = render_gauges(out);
        if (r >= 0)
                r = render_events(out);
        if (r >= 0)
                r = render_persistence(out);
        if (r >= 0)
                r = render_process(out);
        if (r >= 0)
                r = header(out, "memacctd_build_info", "gauge", "The daemon's version; always 1.");
        if (r >= 0)
                ADD("memacctd_build_info{version=\"%s\"} 1\n", MEMACCT_VERSION);
        return r;
}
