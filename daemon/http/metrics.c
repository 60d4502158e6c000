/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prometheus metrics over HTTP
 *
 * One evhttp server on one event base, run by a thread of its own that is
 * registered with the service; nothing crosses threads but the stop request
 * (event_base_loopexit(), safe with libevent's pthreads locking on). The
 * listening socket is bound by metrics_new() in the caller's thread, so a
 * bad or busy address fails the daemon's start, not a thread later.
 *
 * A scrape reads the tree as a recursive list by the daemon itself
 * (service_list_groups() with the daemon's own peer, which reads
 * everything); its one exact statistics flush makes stat items exact as
 * of the scrape
 * (collect-on-scrape, so the numbers do not lag the flush interval). The
 * exposition format wants the samples of one family together, so each
 * group's values go to one buffer per family, joined at the end: memory is
 * the size of the answer, whatever the group count.
 *
 * Limits that are not set ("max") are +Inf, never UINT64_MAX: a sentinel
 * that would otherwise read as 16 EiB on a dashboard.
 *
 * There is no authentication: whoever can connect reads every group,
 * whatever [access] read says. main.c (and config.c) refuse an address
 * that is not loopback or a Unix socket unless [metrics] allow-remote.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http/metrics.h"
#include "macro.h"
#include "service/log.h"
#include "socket-util.h"
#include "thread-start.h"

struct Metrics {
        Service *service;
        char *name;      /* "127.0.0.1:9464", "[::1]:9464", "unix:/run/..." */
        char *unix_path; /* the socket file we created and remove */

        struct event_base *base;
        struct evhttp *http; /* owns the listening socket */

        pthread_t thread;
        bool running;
        ThreadStart start;
};

typedef enum MetricsFamily {
        FAMILY_USAGE,
        FAMILY_PEAK,
        FAMILY_MAX,
        FAMILY_HIGH,
        FAMILY_LOW,
        FAMILY_MIN,
        FAMILY_EFFECTIVE_MIN,
        FAMILY_EFFECTIVE_LOW,
        FAMILY_KERNEL_USAGE,
        FAMILY_SESSIONS_ATTACHED,
        FAMILY_FAILCNT,
        FAMILY_EVENTS,
        FAMILY_EVENTS_LOCAL,
        FAMILY_STAT,
        FAMILY_STAT_LOCAL,
        _FAMILY_MAX,
} MetricsFamily;

static const struct {
        const char *name, *type, *help;
} families[_FAMILY_MAX] = {
        [FAMILY_USAGE] = { "memacct_group_usage_bytes", "gauge",
                           "Bytes charged to the group and its subtree (memory.current)." },
        [FAMILY_PEAK] = { "memacct_group_peak_bytes", "gauge",
                          "Highest usage since creation or the last reset (memory.peak)." },
        [FAMILY_MAX] = { "memacct_group_max_bytes", "gauge",
                         "Hard limit (memory.max); +Inf when not set." },
        [FAMILY_HIGH] = { "memacct_group_high_bytes", "gauge",
                          "Throttle limit (memory.high); +Inf when not set." },
        [FAMILY_LOW] = { "memacct_group_low_bytes", "gauge",
                         "Best-effort protection (memory.low); +Inf for max." },
        [FAMILY_MIN] = { "memacct_group_min_bytes", "gauge",
                         "Hard protection (memory.min); +Inf for max." },
        [FAMILY_EFFECTIVE_MIN] = { "memacct_group_effective_min_bytes", "gauge",
                                   "Hard protection in effect, relative to the root; +Inf for max." },
        [FAMILY_EFFECTIVE_LOW] = { "memacct_group_effective_low_bytes", "gauge",
                                   "Best-effort protection in effect, relative to the root; +Inf for max." },
        [FAMILY_KERNEL_USAGE] = { "memacct_group_kernel_usage_bytes", "gauge",
                                  "The kernel cgroup's usage at the last sample, for cgroup mirrors only." },
        [FAMILY_SESSIONS_ATTACHED] = { "memacct_group_sessions", "gauge",
                                       "Sessions attached to the group itself." },
        [FAMILY_FAILCNT] = { "memacct_group_failcnt_total", "counter",
                             "Charges the group's max refused (failcnt)." },
        [FAMILY_EVENTS] = { "memacct_group_events_total", "counter",
                            "Events of the group and its subtree (memory.events)." },
        [FAMILY_EVENTS_LOCAL] = { "memacct_group_events_local_total", "counter",
                                  "Events of the group itself (memory.events.local)." },
        [FAMILY_STAT] = { "memacct_group_stat_bytes", "gauge",
                          "Bytes by item of the group and its subtree (memory.stat)." },
        [FAMILY_STAT_LOCAL] = { "memacct_group_stat_local_bytes", "gauge",
                                "Bytes by item charged to the group itself." },
};

/*
 * A label value as the exposition format escapes it: backslash, double
 * quote and line feed. (Group paths are [A-Za-z0-9._:@-/] today, so this
 * is a guard for whatever the path rules allow tomorrow.) @buf holds
 * 2 * strlen(@s) + 1 bytes.
 */
static const char *escape_label(const char *s, char *buf) {
        char *p = buf;

        for (; *s; s++) {
                if (*s == '\\' || *s == '"') {
                        *p++ = '\\';
                        *p++ = *s;
                } else if (*s == '\n') {
                        *p++ = '\\';
                        *p++ = 'n';
                } else
                        *p++ = *s;
        }
        *p = 0;
        return buf;
}

/* A limit or protection: UINT64_MAX ("max") is +Inf. */
static const char *limit_value(uint64_t v, char buf[static 24]) {
        if (v == UINT64_MAX)
                return "+Inf";
        snprintf(buf, 24, "%" PRIu64, v);
        return buf;
}

static int add_u64(struct evbuffer *b, const char *name, const char *label, uint64_t v) {
        return evbuffer_add_printf(b, "%s{group=\"%s\"} %" PRIu64 "\n", name, label, v) < 0 ? -ENOMEM : 0;
}

static int add_limit(struct evbuffer *b, const char *name, const char *label, uint64_t v) {
        char num[24];

        return evbuffer_add_printf(b, "%s{group=\"%s\"} %s\n", name, label, limit_value(v, num)) < 0 ? -ENOMEM
                                                                                                     : 0;
}

static int render_group(struct evbuffer *fam[_FAMILY_MAX], const char *label, const MemGroupInfo *in) {
        int r = 0;

#define NAME(f) families[f].name
        r |= add_u64(fam[FAMILY_USAGE], NAME(FAMILY_USAGE), label, in->current);
        r |= add_u64(fam[FAMILY_PEAK], NAME(FAMILY_PEAK), label, in->peak);
        r |= add_limit(fam[FAMILY_MAX], NAME(FAMILY_MAX), label, in->max);
        r |= add_limit(fam[FAMILY_HIGH], NAME(FAMILY_HIGH), label, in->high);
        r |= add_limit(fam[FAMILY_LOW], NAME(FAMILY_LOW), label, in->low);
        r |= add_limit(fam[FAMILY_MIN], NAME(FAMILY_MIN), label, in->min);
        r |= add_limit(fam[FAMILY_EFFECTIVE_MIN], NAME(FAMILY_EFFECTIVE_MIN), label, in->effective_min);
        r |= add_limit(fam[FAMILY_EFFECTIVE_LOW], NAME(FAMILY_EFFECTIVE_LOW), label, in->effective_low);
        if (in->mirror)
                r |= add_u64(fam[FAMILY_KERNEL_USAGE], NAME(FAMILY_KERNEL_USAGE), label, in->kernel_current);
        r |= add_u64(fam[FAMILY_SESSIONS_ATTACHED], NAME(FAMILY_SESSIONS_ATTACHED), label, in->nr_attached);
        r |= add_u64(fam[FAMILY_FAILCNT], NAME(FAMILY_FAILCNT), label, in->failcnt);
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++) {
                if (evbuffer_add_printf(fam[FAMILY_EVENTS], "%s{group=\"%s\",event=\"%s\"} %" PRIu64 "\n",
                                        NAME(FAMILY_EVENTS), label, mem_event_to_string(e),
                                        in->events[e]) < 0 ||
                    evbuffer_add_printf(fam[FAMILY_EVENTS_LOCAL],
                                        "%s{group=\"%s\",event=\"%s\"} %" PRIu64 "\n",
                                        NAME(FAMILY_EVENTS_LOCAL), label, mem_event_to_string(e),
                                        in->events_local[e]) < 0)
                        return -ENOMEM;
        }
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                /* group_read() clamps stat items at 0. */
                if (evbuffer_add_printf(fam[FAMILY_STAT], "%s{group=\"%s\",item=\"%s\"} %" PRId64 "\n",
                                        NAME(FAMILY_STAT), label, mem_stat_item_to_string(i),
                                        in->stat[i]) < 0 ||
                    evbuffer_add_printf(fam[FAMILY_STAT_LOCAL], "%s{group=\"%s\",item=\"%s\"} %" PRId64 "\n",
                                        NAME(FAMILY_STAT_LOCAL), label, mem_stat_item_to_string(i),
                                        in->stat_local[i]) < 0)
                        return -ENOMEM;
        }
#undef NAME
        return r < 0 ? -ENOMEM : 0;
}

static int add_header(struct evbuffer *out, const char *name, const char *type, const char *help) {
        return evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0 ? -ENOMEM
                                                                                                  : 0;
}

typedef struct Render {
        struct evbuffer *fam[_FAMILY_MAX];
        char *label; /* 2 * MEM_PATH_MAX + 1 bytes */
} Render;

/* ServiceGroupFn of a scrape: one group's samples into their families. */
static int render_one(void *userdata, const char *path, const MemGroupInfo *info) {
        Render *x = userdata;

        return render_group(x->fam, escape_label(path, x->label), info);
}

/* The daemon-wide series after the groups'. */
static int render_daemon(Service *svc, struct evbuffer *out) {
        int r;

        r = add_header(out, "memacct_groups", "gauge", "Groups, the root included.");
        if (r >= 0 && evbuffer_add_printf(out, "memacct_groups %u\n", service_group_count(svc)) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = add_header(out, "memacct_sessions", "gauge", "Sessions open, on every transport.");
        if (r >= 0 && evbuffer_add_printf(out, "memacct_sessions %u\n", service_session_count(svc)) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = add_header(out, "memacct_build_info", "gauge", "The daemon's version; always 1.");
        if (r >= 0 && evbuffer_add_printf(out, "memacct_build_info{version=\"%s\"} 1\n", MEMACCT_VERSION) < 0)
                r = -ENOMEM;
        return r;
}

int metrics_render(Service *svc, struct evbuffer *out) {
        Render x = {};
        Refusal rf;
        int r = 0;

        x.label = malloc(2 * MEM_PATH_MAX + 1);
        if (!x.label)
                r = -ENOMEM;
        for (size_t f = 0; f < _FAMILY_MAX && r >= 0; f++)
                if (!(x.fam[f] = evbuffer_new()))
                        r = -ENOMEM;
        /* One exact flush for the whole scrape (the first group's read). */
        refusal_init(&rf);
        if (r >= 0)
                r = service_list_groups(svc, service_daemon_peer(svc), "/",
                                        SERVICE_READ_RECURSIVE | SERVICE_READ_EXACT, render_one, &x, &rf);
        for (size_t f = 0; f < _FAMILY_MAX && r >= 0; f++) {
                /* A family without samples (no cgroup mirrors) is left out. */
                if (evbuffer_get_length(x.fam[f]) == 0)
                        continue;
                r = add_header(out, families[f].name, families[f].type, families[f].help);
                if (r >= 0 && evbuffer_add_buffer(out, x.fam[f]) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = render_daemon(svc, out);
        for (size_t f = 0; f < _FAMILY_MAX; f++)
                if (x.fam[f])
                        evbuffer_free(x.fam[f]);
        free(x.label);
        return r;
}

/* ---- HTTP ---- */

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text) {
        struct evbuffer *buf = evbuffer_new();

        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
        if (!buf) {
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        evbuffer_add_printf(buf, "%s\n", text);
        evhttp_send_reply(req, code, reason, buf);
        evbuffer_free(buf);
}

static void on_request(struct evhttp_request *req, void *userdata) {
        Metrics *m = userdata;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
        enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
        struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
        struct evbuffer *buf;
        int r;

        if (!path || strcmp(path, "/metrics") != 0) {
                reply_text(req, HTTP_NOTFOUND, "Not Found", "Not found; the metrics are at /metrics");
                return;
        }
        if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
                evhttp_add_header(headers, "Allow", "GET, HEAD");
                reply_text(req, 405, "Method Not Allowed", "Method not allowed; use GET");
                return;
        }
        buf = evbuffer_new();
        if (!buf) {
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        r = metrics_render(m->service, buf);
        if (r < 0) {
                log_warning_errno(r, "Cannot answer a metrics scrape: %m");
                evbuffer_free(buf);
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        evhttp_add_header(headers, "Content-Type", METRICS_CONTENT_TYPE);
        /* evhttp sends the headers only for HEAD, with this body's length. */
        evhttp_send_reply(req, HTTP_OK, "OK", buf);
        evbuffer_free(buf);
}

/* ---- the listener ---- */

static int listen_on(Metrics *m, const char *address, const ConfigListen *l) {
        int family = l->addr.ss_family, fd, r;
        int one = 1;

        fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "[metrics] %s: cannot create a socket: %m", address);
        if (family != AF_UNIX)
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (const struct sockaddr *) &l->addr, l->addr_len) < 0) {
                const char *path = ((const struct sockaddr_un *) &l->addr)->sun_path;
                struct stat st;

                r = -errno;
                /* Only a socket file nobody listens on is replaced. */
                if (family != AF_UNIX || r != -EADDRINUSE ||
                    unix_socket_is_live((const struct sockaddr *) &l->addr, l->addr_len) != 0 ||
                    lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || unlink(path) < 0 ||
                    bind(fd, (const struct sockaddr *) &l->addr, l->addr_len) < 0) {
                        log_error_errno(r, "[metrics] cannot bind %s: %m", address);
                        goto fail;
                }
        }
        if (family == AF_UNIX) {
                m->unix_path = strdup(((const struct sockaddr_un *) &l->addr)->sun_path);
                if (!m->unix_path) {
                        r = log_error_errno(ENOMEM, "Out of memory");
                        goto fail;
                }
                /* No authentication: the file's permissions are the access control. */
                if (chmod(m->unix_path, 0660) < 0) {
                        r = log_error_errno(errno, "[metrics] cannot set the mode of %s: %m", m->unix_path);
                        goto fail;
                }
        }
        if (listen(fd, 64) < 0) {
                r = log_error_errno(errno, "[metrics] cannot listen on %s: %m", address);
                goto fail;
        }
        return fd;
fail:
        close(fd);
        return r;
}

/* The bound address as text, with the port the kernel chose. */
static char *bound_name(int fd, const ConfigListen *l) {
        struct sockaddr_storage ss = {};
        socklen_t len = sizeof(ss);
        char host[INET6_ADDRSTRLEN];
        char *s = NULL;

        if (l->addr.ss_family == AF_UNIX) {
                if (asprintf(&s, "unix:%s", ((const struct sockaddr_un *) &l->addr)->sun_path) < 0)
                        return NULL;
                return s;
        }
        if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
                ss = l->addr;
        if (ss.ss_family == AF_INET6) {
                const struct sockaddr_in6 *sa = (const struct sockaddr_in6 *) &ss;

                if (!inet_ntop(AF_INET6, &sa->sin6_addr, host, sizeof(host)) ||
                    asprintf(&s, "[%s]:%u", host, (unsigned) ntohs(sa->sin6_port)) < 0)
                        return NULL;
        } else {
                const struct sockaddr_in *sa = (const struct sockaddr_in *) &ss;

                if (!inet_ntop(AF_INET, &sa->sin_addr, host, sizeof(host)) ||
                    asprintf(&s, "%s:%u", host, (unsigned) ntohs(sa->sin_port)) < 0)
                        return NULL;
        }
        return s;
}

int metrics_new(Service *svc, const char *address, Metrics **ret) {
        _cleanup_free_ Metrics *m = NULL;
        ConfigListen l;
        int fd;

        if (config_listen_parse(address, &l) < 0)
                return log_error_errno(EINVAL, "[metrics] listen = %s: expected ADDRESS:PORT or unix:/PATH",
                                       address);
        m = calloc(1, sizeof(*m));
        if (!m)
                return log_error_errno(ENOMEM, "Out of memory");
        m->service = svc;

        fd = listen_on(m, address, &l);
        if (fd < 0) {
                free(m->unix_path);
                m->unix_path = NULL;
                return fd;
        }
        m->name = bound_name(fd, &l);
        m->base = event_base_new();
        m->http = m->base ? evhttp_new(m->base) : NULL;
        if (!m->name || !m->http) {
                close(fd);
                goto oom;
        }
        evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS_BYTES);
        evhttp_set_max_body_size(m->http, METRICS_MAX_BODY_BYTES);
        evhttp_set_timeout(m->http, METRICS_TIMEOUT_SEC);
        /* Every method reaches on_request(), which answers 405 to the
         * ones it does not serve (evhttp itself would say 501). */
        evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                                    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                                    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                                    EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
        evhttp_set_gencb(m->http, on_request, m);
        /* evhttp owns the socket from here: evhttp_free() closes it. */
        if (!evhttp_accept_socket_with_handle(m->http, fd)) {
                close(fd);
                goto oom;
        }
        *ret = TAKE_PTR(m);
        return 0;
oom:
        metrics_free(TAKE_PTR(m));
        return log_error_errno(ENOMEM, "[metrics] cannot set up the HTTP server: out of memory");
}

const char *metrics_name(Metrics *m) {
        return m->name;
}

static void *metrics_main(void *userdata) {
        Metrics *m = userdata;
        int r;

        r = service_thread_register(m->service);
        thread_started(&m->start, r);
        if (r < 0)
                return NULL;
        event_base_dispatch(m->base);
        service_thread_unregister(m->service);
        return NULL;
}

int metrics_start(Metrics *m) {
        int r;

        r = thread_start(&m->thread, &m->start, metrics_main, m);
        if (r < 0)
                return log_error_errno(r, "Cannot start the metrics thread: %m");
        m->running = true;
        return 0;
}

void metrics_stop(Metrics *m) {
        if (!m || !m->running)
                return;
        /* Thread-safe: libevent's locking is on (evthread_use_pthreads()). */
        event_base_loopexit(m->base, NULL);
        pthread_join(m->thread, NULL);
        m->running = false;
}

Metrics *metrics_free(Metrics *m) {
        if (!m)
                return NULL;
        assert(!m->running);
        if (m->http)
                evhttp_free(m->http);
        if (m->base)
                event_base_free(m->base);
        if (m->unix_path && unlink(m->unix_path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Cannot remove %s, ignoring: %m", m->unix_path);
        free(m->unix_path);
        free(m->name);
        free(m);
        return NULL;
}
