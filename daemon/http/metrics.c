/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Prometheus metrics listener: connections and their bounds
 *
 * One event base, run by a thread of its own that is registered with the
 * service; nothing crosses threads but the stop request
 * (event_base_loopexit(), safe with libevent's pthreads locking on). The
 * listening socket is bound by metrics_new() in the caller's thread, so a
 * bad or busy address fails the daemon's start, not a thread later.
 *
 * The connections are our own bufferevents, not evhttp's: evhttp (2.1)
 * has no bound on connections, its timeout restarts at every read (a
 * header sent a byte at a time is never cut off), and it keeps reading
 * while an answer is unsent, so a client that sends and never reads makes
 * the daemon buffer without end. Here, whoever connects is bounded:
 *
 *  - at most [metrics] connections are open; one more evicts the oldest
 *    connection stalled for a second or more in its current phase
 *    (waiting for a head, or for its answer to be read: a scrape's phases
 *    take milliseconds), else the oldest that never sent a byte, however
 *    young: a new scraper always has a slot, whoever holds idle
 *    connections (a scraper sends its head within a millisecond of the
 *    accept, so it is never the oldest idle one for long), and no
 *    scraper's kept-alive connection or scrape under way is cut for it;
 *    when there is none, the newcomer is answered 503 and closed at once;
 *  - a request head (and its body) must be complete head-timeout seconds
 *    after it may start (the accept, or the end of the previous answer),
 *    whatever the byte rate; the input kept is at most header-size +
 *    body-size (the read watermark), checked by http_request_parse();
 *  - while an answer is unsent the connection reads nothing: one answer
 *    per connection at most, never a second built behind it; it must be
 *    sent write-timeout seconds after it is queued, or the connection is
 *    closed and the answer freed;
 *  - answers unsent on all connections together stay near output-buffer:
 *    a scrape that would go over it evicts stalled readers first, and is
 *    answered 503 if that is not enough.
 *
 * An answer lives in pages of its own (metrics-render.c) handed to the
 * output buffer by reference, so closing a connection gives them back to
 * the kernel: memory returns when the clients go.
 *
 * There is no authentication: whoever can connect reads every group,
 * whatever [access] read says. main.c (and config.c) refuse an address
 * that is not loopback or a Unix socket unless [metrics] allow-remote. A
 * listener systemd passed (METRICS_FDNAME) is taken as it is: its unit
 * chose the address, and it wins over [metrics] listen, as the passed
 * client socket wins over --socket.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "http/metrics-internal.h"
#include "http/metrics.h"
#include "clock.h"
#include "macro.h"
#include "base/log.h"
#include "socket-util.h"
#include "thread-start.h"

/* A connection this long in its phase is stalled: a scrape's phases take milliseconds. */
#define METRICS_STALL_USEC (1000 * 1000)

typedef enum ConnState {
        CONN_READING, /* waiting for a request, the head deadline armed */
        CONN_WRITING, /* an answer queued, reading off, the write deadline armed */
} ConnState;

typedef struct MetricsConn MetricsConn;
struct MetricsConn {
        Metrics *m;
        struct bufferevent *bev;
        struct event *deadline;
        ConnState state;
        uint64_t since_usec; /* CLOCK_MONOTONIC: when the current phase began */
        bool close_after;    /* close once the answer is sent */
        bool answered;       /* an answer was queued on it: a scraper, not an idle opener */
        TAILQ_ENTRY(MetricsConn) link;
};

struct Metrics {
        Service *service;
        char *name;      /* "127.0.0.1:9464", "[::1]:9464", "unix:/run/..." */
        char *unix_path; /* the socket file we created and remove */

        struct event_base *base;
        struct evconnlistener *listener; /* owns the listening socket */

        unsigned max_connections;
        struct timeval head_timeout, write_timeout;
        size_t header_size, body_size;
        uint64_t output_buffer;
        unsigned max_groups; /* groups one scrape exports at most */
        bool basic;          /* [metrics] series = basic */

        TAILQ_HEAD(, MetricsConn) conns; /* oldest first */
        unsigned n_conns;
        size_t last_answer_bytes; /* of the last scrape: what the next one will likely take */
        char refusal[256];        /* the 503 for a connection over the cap */
        size_t refusal_len;

        pthread_t thread;
        bool running;
        ThreadStart start;
};

static void conn_free(MetricsConn *c) {
        Metrics *m = c->m;

        TAILQ_REMOVE(&m->conns, c, link);
        m->n_conns--;
        event_free(c->deadline);
        /* Frees the output and with it the answer's pages (answer_unmap()). */
        bufferevent_free(c->bev);
        free(c);
}

/* Bytes of answers queued and not yet taken by the kernel, on every connection. */
static uint64_t unsent_bytes(Metrics *m) {
        uint64_t n = 0;
        MetricsConn *c;

        TAILQ_FOREACH(c, &m->conns, link)
                n += evbuffer_get_length(bufferevent_get_output(c->bev));
        return n;
}

/* Close the oldest connection stalled in @state (or any, with -1) but @keep. Return: 1 if one went. */
static int evict_stalled(Metrics *m, int state, const MetricsConn *keep) {
        uint64_t now = clock_now_usec(CLOCK_MONOTONIC);
        MetricsConn *c, *oldest = NULL;

        TAILQ_FOREACH(c, &m->conns, link) {
                if (c == keep || (state >= 0 && c->state != (ConnState) state) ||
                    now - c->since_usec < METRICS_STALL_USEC)
                        continue;
                if (!oldest || c->since_usec < oldest->since_usec)
                        oldest = c;
        }
        if (!oldest)
                return 0;
        conn_free(oldest);
        return 1;
}

/*
 * Close the oldest connection that never sent a byte, however young: an
 * idle opener. Never one that was answered (a scraper keeping its
 * connection alive between scrapes) or is sending a head (a scrape under
 * way). Return: 1 if one went.
 */
static int evict_idle(Metrics *m) {
        MetricsConn *c, *oldest = NULL;

        TAILQ_FOREACH(c, &m->conns, link)
                if (c->state == CONN_READING && !c->answered &&
                    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
                    (!oldest || c->since_usec < oldest->since_usec))
                        oldest = c;
        if (!oldest)
                return 0;
        conn_free(oldest);
        return 1;
}

static void answer_unmap(const void *data, size_t len, void *extra) {
        (void) len;
        metrics_text_unmap((void *) data, (size_t) (uintptr_t) extra);
}

/* Hand @t's pages to @out by reference: unmapped when sent or when the connection goes. */
static int queue_text(struct evbuffer *out, MetricsText *t) {
        size_t cap, len = t->len;
        void *p;

        if (len == 0) {
                metrics_text_done(t);
                return 0;
        }
        p = metrics_text_steal(t, &cap);
        if (evbuffer_add_reference(out, p, len, answer_unmap, (void *) (uintptr_t) cap) < 0) {
                metrics_text_unmap(p, cap);
                return -ENOMEM;
        }
        return 0;
}

static void conn_read(MetricsConn *c);

static void conn_start_reading(MetricsConn *c) {
        c->state = CONN_READING;
        c->since_usec = clock_now_usec(CLOCK_MONOTONIC);
        evtimer_add(c->deadline, &c->m->head_timeout);
        bufferevent_enable(c->bev, EV_READ);
        /* A request that came behind the last one is in the input already. */
        if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
                conn_read(c);
}

/* Queue @resp (taking it) and stop reading until it is sent. Return: 0, or -ENOMEM (@c is then freed). */
static int conn_send(MetricsConn *c, MetricsResponse *resp) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        int r;

        bufferevent_disable(c->bev, EV_READ);
        c->state = CONN_WRITING;
        c->answered = true;
        c->since_usec = clock_now_usec(CLOCK_MONOTONIC);
        c->close_after = c->close_after || resp->close;
        r = queue_text(out, &resp->head);
        if (r >= 0)
                r = queue_text(out, &resp->body);
        metrics_response_done(resp);
        if (r < 0) {
                conn_free(c);
                return r;
        }
        evtimer_add(c->deadline, &c->m->write_timeout);
        bufferevent_enable(c->bev, EV_WRITE);
        return 0;
}

/* The answer to a whole request of @req; -EBUSY when the unsent answers would go over the bound. */
static int conn_answer(MetricsConn *c, const HttpRequest *req, MetricsResponse *ret) {
        Metrics *m = c->m;
        bool scrape = req->path_len == strlen("/metrics") && memcmp(req->path, "/metrics", req->path_len) == 0 &&
                      req->method == HTTP_METHOD_GET;
        int r;

        if (scrape) {
                /* At least one scrape goes whatever its size: the bound is for the pile-up. */
                while (unsent_bytes(m) > 0 && unsent_bytes(m) + m->last_answer_bytes > m->output_buffer)
                        if (evict_stalled(m, CONN_WRITING, c) == 0)
                                return metrics_respond_error(-EBUSY, ret);
        }
        r = metrics_respond(m->service, req, m->max_groups, m->basic, ret);
        if (r >= 0 && scrape)
                m->last_answer_bytes = ret->head.len + ret->body.len;
        return r;
}

static void conn_read(MetricsConn *c) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t n = evbuffer_get_length(in);
        MetricsResponse resp;
        HttpRequest req;
        int r;

        if (c->state != CONN_READING || n == 0)
                return;
        r = http_request_parse((const char *) evbuffer_pullup(in, -1), n, c->m->header_size, c->m->body_size,
                               &req);
        if (r == 0)
                return; /* more to come, within the watermark and the deadline */
        evtimer_del(c->deadline);
        if (r > 0) {
                /* The parser said the request is @r bytes of @n: they are
                 * taken once answered (@req points into them). */
                size_t used = (size_t) r;

                r = conn_answer(c, &req, &resp);
                (void) evbuffer_drain(in, used);
        } else
                r = metrics_respond_error(r, &resp);
        if (r < 0) {
                conn_free(c);
                return;
        }
        /* Requests are read one at a time: what follows waits for this answer to go. */
        (void) conn_send(c, &resp);
}

static void on_read(struct bufferevent *bev, void *userdata) {
        (void) bev;
        conn_read(userdata);
}

/* The output is empty (the low watermark 0): the answer has gone to the kernel. */
static void on_write(struct bufferevent *bev, void *userdata) {
        MetricsConn *c = userdata;

        (void) bev;
        if (c->state != CONN_WRITING)
                return;
        evtimer_del(c->deadline);
        if (c->close_after) {
                conn_free(c);
                return;
        }
        bufferevent_disable(c->bev, EV_WRITE);
        conn_start_reading(c);
}

/* End of file, a reset, an error: nothing more to say to it. */
static void on_event(struct bufferevent *bev, short what, void *userdata) {
        (void) bev;
        (void) what;
        conn_free(userdata);
}

/* The head did not come in time, or the answer was not read in time. */
static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        (void) fd;
        (void) what;
        conn_free(userdata);
}

/* Over the cap and nothing to evict: a 503 if the socket takes it at once, and close. */
static void refuse(Metrics *m, int fd) {
        (void) send(fd, m->refusal, m->refusal_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *userdata) {
        Metrics *m = userdata;
        MetricsConn *c;

        (void) l;
        (void) sa;
        (void) salen;
        if (m->n_conns >= m->max_connections && evict_stalled(m, -1, NULL) == 0 && evict_idle(m) == 0) {
                refuse(m, fd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(fd);
                return;
        }
        c->m = m;
        c->bev = bufferevent_socket_new(m->base, fd, BEV_OPT_CLOSE_ON_FREE);
        c->deadline = c->bev ? evtimer_new(m->base, on_deadline, c) : NULL;
        if (!c->deadline) {
                if (c->bev)
                        bufferevent_free(c->bev);
                else
                        close(fd);
                free(c);
                log_warning_errno(ENOMEM, "Cannot take a metrics connection: %m");
                return;
        }
        /* The input never holds more than the largest request we take. */
        bufferevent_setwatermark(c->bev, EV_READ, 0, m->header_size + m->body_size);
        bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
        TAILQ_INSERT_TAIL(&m->conns, c, link);
        m->n_conns++;
        conn_start_reading(c);
}

static int listen_on(Metrics *m, const char *address, const ConfigListen *l) {
        _cleanup_close_ int fd = -EBADF;
        int family = l->addr.ss_family, r;
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
                        return log_error_errno(r, "[metrics] cannot bind %s: %m", address);
                }
        }
        if (family == AF_UNIX) {
                m->unix_path = strdup(((const struct sockaddr_un *) &l->addr)->sun_path);
                if (!m->unix_path)
                        return log_error_errno(ENOMEM, "Out of memory");
                /* No authentication: the file's permissions are the access control. */
                if (chmod(m->unix_path, 0660) < 0) {
                        return log_error_errno(errno, "[metrics] cannot set the mode of %s: %m",
                                               m->unix_path);
                }
        }
        if (listen(fd, 64) < 0)
                return log_error_errno(errno, "[metrics] cannot listen on %s: %m", address);
        return TAKE_FD(fd);
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

/*
 * The listener systemd passed named METRICS_FDNAME, made non-blocking
 * (evconnlistener needs it) and close-on-exec (systemd passes it without).
 * Return: its fd; -ENOENT when none was passed; -EINVAL when it is not a
 * listening stream socket.
 */
static int passed_listener(void) {
        char **names = NULL;
        int n, fd = -ENOENT, r;

        n = sd_listen_fds_with_names(0, &names);
        if (n < 0)
                return log_error_errno(n, "Cannot read the sockets passed by systemd: %m");
        for (int i = 0; names && i < n; i++) {
                if (fd == -ENOENT && names[i] && strcmp(names[i], METRICS_FDNAME) == 0)
                        fd = SD_LISTEN_FDS_START + i;
                free(names[i]);
        }
        free(names);
        if (fd < 0)
                return fd;
        r = sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1);
        if (r < 0)
                return log_error_errno(r, "[metrics] cannot check the socket passed by systemd: %m");
        if (r == 0)
                return log_error_errno(EINVAL, "[metrics] the socket systemd passed as \"%s\" is not a "
                                       "listening stream socket", METRICS_FDNAME);
        r = fcntl(fd, F_GETFL);
        if (r < 0 || fcntl(fd, F_SETFL, r | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return log_error_errno(errno, "[metrics] cannot set up the socket passed by systemd: %m");
        return fd;
}

/* The passed listener's address, as bound_name() says it. */
static char *passed_name(int fd) {
        ConfigListen l = {};
        socklen_t len = sizeof(l.addr);
        char *s;

        if (getsockname(fd, (struct sockaddr *) &l.addr, &len) < 0)
                return strdup("(passed socket)");
        l.addr_len = len;
        if (l.addr.ss_family != AF_UNIX)
                return bound_name(fd, &l);
        if (asprintf(&s, "unix:%.*s", (int) (len - offsetof(struct sockaddr_un, sun_path)),
                     ((const struct sockaddr_un *) &l.addr)->sun_path) < 0)
                return NULL;
        return s;
}

/* A listening socket: the one systemd passed, or @address bound. Return: the fd, -ENOENT for none. */
static int metrics_listen(Metrics *m, const char *address) {
        ConfigListen l;
        int fd;

        fd = passed_listener();
        if (fd >= 0) {
                m->name = passed_name(fd);
                if (!m->name) {
                        close(fd);
                        return log_error_errno(ENOMEM, "Out of memory");
                }
                if (address)
                        log_notice("[metrics] using the socket passed by systemd (%s), not %s", m->name,
                                   address);
                return fd;
        }
        if (fd != -ENOENT)
                return fd;
        if (!address)
                return -ENOENT;
        if (config_listen_parse(address, &l) < 0)
                return log_error_errno(EINVAL, "[metrics] listen = %s: expected ADDRESS:PORT or unix:/PATH",
                                       address);
        fd = listen_on(m, address, &l);
        if (fd < 0) {
                free(m->unix_path);
                m->unix_path = NULL;
                return fd;
        }
        m->name = bound_name(fd, &l);
        if (!m->name) {
                close(fd);
                return log_error_errno(ENOMEM, "Out of memory");
        }
        return fd;
}

int metrics_new(Service *svc, const Config *c, Metrics **ret) {
        _cleanup_free_ Metrics *m = NULL;
        MetricsResponse busy;
        int fd;

        *ret = NULL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return log_error_errno(ENOMEM, "Out of memory");
        m->service = svc;
        m->max_connections = c->metrics_connections;
        m->head_timeout = (struct timeval) { .tv_sec = c->metrics_head_timeout_sec };
        m->write_timeout = (struct timeval) { .tv_sec = c->metrics_write_timeout_sec };
        m->header_size = c->metrics_header_size;
        m->body_size = c->metrics_body_size;
        m->output_buffer = c->metrics_output_buffer;
        m->max_groups = c->metrics_max_groups;
        m->basic = c->metrics_series_basic;
        TAILQ_INIT(&m->conns);
        if (metrics_respond_error(-EBUSY, &busy) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        m->refusal_len = MIN(busy.head.len, sizeof(m->refusal));
        memcpy(m->refusal, busy.head.p, m->refusal_len);
        if (busy.body.len <= sizeof(m->refusal) - m->refusal_len) {
                memcpy(m->refusal + m->refusal_len, busy.body.p, busy.body.len);
                m->refusal_len += busy.body.len;
        }
        metrics_response_done(&busy);

        fd = metrics_listen(m, c->metrics_listen);
        if (fd == -ENOENT)
                return 0; /* nothing to serve */
        if (fd < 0)
                return fd;
        m->base = event_base_new();
        if (!m->base) {
                close(fd);
                goto oom;
        }
        /* The listener owns the socket from here: evconnlistener_free() closes it. */
        m->listener = evconnlistener_new(m->base, on_accept, m, LEV_OPT_CLOSE_ON_FREE, -1, fd);
        if (!m->listener) {
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
        while (!TAILQ_EMPTY(&m->conns))
                conn_free(TAILQ_FIRST(&m->conns));
        if (m->listener)
                evconnlistener_free(m->listener);
        /* Runs the finalizers of the freed bufferevents, unmapping what they held. */
        if (m->base)
                event_base_free(m->base);
        if (m->unix_path && unlink(m->unix_path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Cannot remove %s, ignoring: %m", m->unix_path);
        free(m->unix_path);
        free(m->name);
        free(m);
        return NULL;
}
