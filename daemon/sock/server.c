/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Acceptor and worker threads
 *
 * The main thread owns the listening socket (an evconnlistener on its
 * base). Each accepted descriptor goes to the next worker round-robin:
 * appended to the worker's queue under its mutex, and the worker woken
 * through its eventfd when the queue was empty (one write per burst).
 * A worker thread owns an event base and every connection on it; a
 * session stays on its worker for life, so nothing of a connection is
 * shared between threads but its push queue (conn.c).
 *
 * Root keeps a worker of its own: the acceptor reads each connection's
 * uid (SO_PEERCRED) and hands root's to one more worker that serves no
 * one else, so a request of root never waits behind another uid's work
 * on the same thread (a List of thousands of groups takes tens of
 * milliseconds to build). Root's connections also keep their capacity on
 * the shared workers, should any land there: a worker's base has two
 * priorities, root's connections (and the wake-up that brings new ones)
 * at 0, everyone else's at 1, and after ROOT_SLICE_USEC of the others'
 * callbacks the loop polls again and runs root's ready events first
 * (libevent's max_dispatch_interval). So whatever another uid asks,
 * root's request waits for at most that slice and the one callback in
 * progress.
 *
 * Commands to a worker (new limits, stop) travel the same way: fields
 * under the worker's mutex and an eventfd wake-up, applied on the
 * worker's own thread. On stop, a worker's connections answer what they
 * already read and write it out, within a grace period; then the worker
 * frees what remains (releasing every session) and its loop ends.
 *
 * accept() running out of descriptors (EMFILE/ENFILE) leaves the
 * connection in the backlog and the socket readable: the listener would
 * spin (libevent#71), and root could not get in. So one descriptor is
 * kept in reserve, as nginx and Redis do: out of descriptors, it is
 * closed to take the next connection off the backlog, which is served
 * when it is root's and closed at once otherwise; then the reserve is
 * opened again. Should that fail (root's connection took it), or memory
 * run out, the listener pauses for ACCEPT_PAUSE_MSEC. The [limits]
 * connections bound (main.c fits it within the descriptor limit) keeps
 * this rare: it is the backstop.
 */

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "base/log.h"
#include "sock/server.h"
#include "thread-start.h"

/* The first read of a connection lands here: a pipelined burst of small
 * frames is served from it without any per-connection allocation. */
#define SCRATCH_SIZE (128 * 1024)
/* Others' callbacks run at most this long before root's ready events are looked for. */
#define ROOT_SLICE_USEC 2000
/* Out of descriptors with none in reserve: accept again after this long. */
#define ACCEPT_PAUSE_MSEC 100

typedef struct SockWorker {
        SockConnHost host; /* this worker's connections */
        SockServer *server;
        unsigned index;
        pthread_t thread;
        bool running;
        int efd;
        struct event *ev_wake;
        struct event *ev_stop_timer;

        /* Commands from the main thread. */
        pthread_mutex_t lock;
        int *fds;
        size_t nfds, nfds_alloc;
        bool stop;
        unsigned grace_msec;
        bool limits_changed;
        SockLimits limits;

        ThreadStart start;
} SockWorker;

struct SockServer {
        Service *service;
        SockWorker *workers; /* the shared ones, then root's */
        unsigned nworkers;   /* all of them */
        unsigned nshared;
        unsigned next;

        struct evconnlistener *listener;
        struct event *ev_accept_retry;
        int reserve_fd;   /* /dev/null, closed to accept with when out of descriptors; -1: none */
        bool out_of_fds;  /* said so in the log, until a connection is accepted again */
};

static void worker_conn_gone(SockConnHost *host) {
        if (host->draining && host->nconns == 0)
                event_base_loopexit(host->base, NULL);
}

static void worker_stop_timer_cb(evutil_socket_t fd, short what, void *userdata) {
        SockWorker *w = userdata;

        (void) fd;
        (void) what;
        if (w->host.nconns > 0)
                log_info("Worker %u: closing %u connections still writing at shutdown", w->index, w->host.nconns);
        sock_host_close_all(&w->host);
        event_base_loopexit(w->host.base, NULL);
}

static void worker_begin_stop(SockWorker *w, unsigned grace_msec) {
        struct timeval tv = {
                .tv_sec = grace_msec / 1000,
                .tv_usec = (suseconds_t) (grace_msec % 1000) * 1000,
        };

        w->host.draining = true;
        /* Each connection has @grace_msec; the timer is the backstop. */
        sock_host_drain(&w->host, (uint64_t) grace_msec * 1000);
        if (w->host.nconns == 0) {
                event_base_loopexit(w->host.base, NULL);
                return;
        }
        tv.tv_usec += 100 * 1000;
        if (tv.tv_usec >= 1000000) {
                tv.tv_sec++;
                tv.tv_usec -= 1000000;
        }
        event_add(w->ev_stop_timer, &tv);
}

static void worker_wake_cb(evutil_socket_t fd, short what, void *userdata) {
        SockWorker *w = userdata;
        _cleanup_free_ int *fds = NULL;
        size_t nfds;
        bool stop, limits_changed;
        SockLimits limits;
        unsigned grace;
        uint64_t v;

        (void) what;
        /* Non-blocking; EAGAIN just means another wake-up already read it. */
        (void) !read(fd, &v, sizeof(v));

        pthread_mutex_lock(&w->lock);
        fds = TAKE_PTR(w->fds);
        nfds = w->nfds;
        w->nfds = w->nfds_alloc = 0;
        stop = w->stop;
        grace = w->grace_msec;
        limits_changed = w->limits_changed;
        limits = w->limits;
        w->limits_changed = false;
        pthread_mutex_unlock(&w->lock);

        if (limits_changed) {
                w->host.limits = limits;
                sock_host_limits_changed(&w->host);
        }
        for (size_t i = 0; i < nfds; i++) {
                if (w->host.draining || stop)
                        close(fds[i]);
                else
                        (void) sock_conn_new(&w->host, fds[i]);
        }
        if (stop && !w->host.draining)
                worker_begin_stop(w, grace);
}

static void worker_wake(SockWorker *w) {
        uint64_t one = 1;

        /* Cannot fail short of a counter overflow, which one pending
         * wake-up already covers. */
        (void) !write(w->efd, &one, sizeof(one));
}

static void *worker_main(void *userdata) {
        SockWorker *w = userdata;
        int r;

        r = service_thread_register(w->server->service);
        thread_started(&w->start, r);
        if (r < 0)
                return NULL;

        event_base_dispatch(w->host.base);

        /* Every session ends on the thread that served it. */
        sock_host_close_all(&w->host);
        service_thread_unregister(w->server->service);
        return NULL;
}

/* A base with root's priority above the others' (see the top of the file). */
static struct event_base *worker_base_new(void) {
        const struct timeval slice = { .tv_usec = ROOT_SLICE_USEC };
        struct event_config *cfg = event_config_new();
        struct event_base *base = NULL;

        if (cfg && event_config_set_max_dispatch_interval(cfg, &slice, -1, SOCK_PRIORITY_OTHERS) == 0)
                base = event_base_new_with_config(cfg);
        if (cfg)
                event_config_free(cfg);
        if (base && event_base_priority_init(base, SOCK_PRIORITY_OTHERS + 1) < 0) {
                event_base_free(base);
                base = NULL;
        }
        return base;
}

static int worker_init(SockServer *s, SockWorker *w, unsigned index, const SockLimits *limits) {
        *w = (SockWorker) {
                .server = s,
                .index = index,
                .efd = -1,
                .host = {
                        .service = s->service,
                        .limits = *limits,
                        .scratch_size = SCRATCH_SIZE,
                        .conn_gone = worker_conn_gone,
                },
        };
        pthread_mutex_init(&w->lock, NULL);
        w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (w->efd < 0)
                return -errno;
        w->host.scratch = malloc(SCRATCH_SIZE);
        /* Created after evthread_use_pthreads() (main.c): notifiable, so
         * other threads may event_active() its events. */
        w->host.base = worker_base_new();
        if (!w->host.scratch || !w->host.base)
                return -ENOMEM;
        w->ev_wake = event_new(w->host.base, w->efd, EV_READ | EV_PERSIST, worker_wake_cb, w);
        w->ev_stop_timer = evtimer_new(w->host.base, worker_stop_timer_cb, w);
        /* New connections, root's among them, are let in at root's priority. */
        if (!w->ev_wake || !w->ev_stop_timer || event_priority_set(w->ev_wake, SOCK_PRIORITY_ROOT) < 0 ||
            event_add(w->ev_wake, NULL) < 0)
                return -ENOMEM;
        if (sock_host_init(&w->host) < 0)
                return -ENOMEM;
        /* Held OKs are released on this worker after each save. */
        return service_add_durable_waker(s->service, sock_host_saved, &w->host);
}

static void worker_done(SockWorker *w) {
        if (w->ev_wake)
                event_free(w->ev_wake);
        if (w->ev_stop_timer)
                event_free(w->ev_stop_timer);
        sock_host_done(&w->host);
        if (w->host.base)
                event_base_free(w->host.base);
        free(w->host.scratch);
        for (size_t i = 0; i < w->nfds; i++)
                close(w->fds[i]);
        free(w->fds);
        if (w->efd >= 0)
                close(w->efd);
        pthread_mutex_destroy(&w->lock);
}

int sock_server_new(Service *svc, const SockLimits *limits, unsigned nworkers, SockServer **ret) {
        SockServer *s;
        int r;

        if (nworkers == 0)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->service = svc;
        s->reserve_fd = -1;
        /* One more for root. */
        s->workers = calloc(nworkers + 1, sizeof(SockWorker));
        if (!s->workers) {
                sock_server_free(s);
                return -ENOMEM;
        }
        s->nshared = nworkers;
        for (unsigned i = 0; i <= nworkers; i++) {
                s->nworkers = i + 1;
                r = worker_init(s, &s->workers[i], i, limits);
                if (r < 0) {
                        sock_server_free(s);
                        return r;
                }
        }
        *ret = s;
        return 0;
}

int sock_server_start(SockServer *s) {
        int r = 0;

        for (unsigned i = 0; i < s->nworkers && r == 0; i++) {
                SockWorker *w = &s->workers[i];

                r = thread_start(&w->thread, &w->start, worker_main, w);
                if (r < 0) {
                        log_error_errno(r, "Cannot start worker thread %u: %m", i);
                        break;
                }
                w->running = true;
        }
        if (r < 0)
                sock_server_stop(s, 0);
        return r;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen,
                      void *userdata) {
        SockServer *s = userdata;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        SockWorker *w;
        bool was_empty;

        (void) l;
        (void) sa;
        (void) socklen;
        /* Root's worker serves root alone (not a container's root:
         * service_is_root()); everyone else round-robin. A descriptor
         * whose credentials cannot be read goes to a shared worker, which
         * fails it the same way. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
            service_is_root(s->service, cred.pid, cred.uid))
                w = &s->workers[s->nshared];
        else {
                w = &s->workers[s->next];
                s->next = (s->next + 1) % s->nshared;
        }
        s->out_of_fds = false;

        pthread_mutex_lock(&w->lock);
        if (w->nfds == w->nfds_alloc) {
                size_t n = MAX(w->nfds_alloc * 2, (size_t) 16);
                int *p = realloc(w->fds, n * sizeof(int));

                if (!p) {
                        pthread_mutex_unlock(&w->lock);
                        close(fd);
                        log_error_errno(ENOMEM, "Cannot hand a connection to a worker: %m");
                        return;
                }
                w->fds = p;
                w->nfds_alloc = n;
        }
        w->fds[w->nfds++] = fd;
        was_empty = w->nfds == 1;
        pthread_mutex_unlock(&w->lock);
        if (was_empty)
                worker_wake(w);
}

static void reserve_open(SockServer *s) {
        if (s->reserve_fd < 0)
                s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *userdata) {
        SockServer *s = userdata;

        (void) fd;
        (void) what;
        reserve_open(s);
        if (s->listener)
                evconnlistener_enable(s->listener);
}

/*
 * Out of descriptors: take one connection off the backlog with the
 * reserve (see the top of the file). Return: true when one was taken.
 */
static bool accept_reserved(SockServer *s, int lfd) {
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        int fd;

        if (s->reserve_fd < 0)
                return false;
        close(s->reserve_fd);
        s->reserve_fd = -1;
        fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
            service_is_root(s->service, cred.pid, cred.uid))
                accept_cb(s->listener, fd, NULL, 0, s);
        else if (fd >= 0) {
                log_debug("Out of descriptors: closed a connection of pid %d uid %u", (int) cred.pid,
                          (unsigned) cred.uid);
                close(fd);
        }
        reserve_open(s);
        return fd >= 0;
}

/* Out of descriptors or memory: accept() fails until something is freed. */
static bool accept_should_pause(int e) {
        return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void accept_error_cb(struct evconnlistener *l, void *userdata) {
        SockServer *s = userdata;
        int e = EVUTIL_SOCKET_ERROR();

        if ((e == EMFILE || e == ENFILE) && !s->out_of_fds) {
                s->out_of_fds = true;
                log_warning_errno(e, "Cannot accept connections: %m; serving only root's until "
                                  "descriptors are freed");
        }
        /* The socket stays readable: the next round takes the next one. */
        if ((e == EMFILE || e == ENFILE) && accept_reserved(s, evconnlistener_get_fd(l)))
                return;
        if (accept_should_pause(e)) {
                struct timeval tv = { .tv_usec = ACCEPT_PAUSE_MSEC * 1000 };

                log_debug_errno(e, "Cannot accept connections: %m; pausing for %u ms", ACCEPT_PAUSE_MSEC);
                evconnlistener_disable(l);
                event_add(s->ev_accept_retry, &tv);
                return;
        }
        log_warning_errno(e, "accept() failed, ignoring: %m");
}

int sock_server_listen(SockServer *s, struct event_base *base, int fd) {
        if (evutil_make_socket_nonblocking(fd) < 0)
                return -errno;
        s->ev_accept_retry = evtimer_new(base, accept_retry_cb, s);
        if (!s->ev_accept_retry)
                return -ENOMEM;
        reserve_open(s);
        if (s->reserve_fd < 0)
                return -errno;
        /* Backlog 0: the socket is listening already (ours or systemd's). */
        s->listener = evconnlistener_new(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!s->listener)
                return -ENOMEM;
        evconnlistener_set_error_cb(s->listener, accept_error_cb);
        return 0;
}

void sock_server_set_limits(SockServer *s, const SockLimits *limits) {
        for (unsigned i = 0; i < s->nworkers; i++) {
                SockWorker *w = &s->workers[i];

                pthread_mutex_lock(&w->lock);
                w->limits = *limits;
                w->limits_changed = true;
                pthread_mutex_unlock(&w->lock);
                worker_wake(w);
        }
}

void sock_server_stop_accepting(SockServer *s) {
        if (s->listener) {
                evconnlistener_free(s->listener);
                s->listener = NULL;
        }
        if (s->ev_accept_retry) {
                event_free(s->ev_accept_retry);
                s->ev_accept_retry = NULL;
        }
        if (s->reserve_fd >= 0) {
                close(s->reserve_fd);
                s->reserve_fd = -1;
        }
}

void sock_server_stop(SockServer *s, unsigned grace_msec) {
        sock_server_stop_accepting(s);
        for (unsigned i = 0; i < s->nworkers; i++) {
                SockWorker *w = &s->workers[i];

                if (!w->running)
                        continue;
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                w->grace_msec = grace_msec;
                pthread_mutex_unlock(&w->lock);
                worker_wake(w);
        }
        for (unsigned i = 0; i < s->nworkers; i++) {
                SockWorker *w = &s->workers[i];

                if (!w->running)
                        continue;
                pthread_join(w->thread, NULL);
                w->running = false;
        }
}

SockServer *sock_server_free(SockServer *s) {
        if (!s)
                return NULL;
        sock_server_stop(s, 0);
        for (unsigned i = 0; i < s->nworkers; i++)
                worker_done(&s->workers[i]);
        free(s->workers);
        free(s);
        return NULL;
}
