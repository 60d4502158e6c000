/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus thread
 *
 * sd-bus objects have no locking, and sd-event is meant to run one
 * instance per thread, so everything that touches the connection happens
 * here: an sd-event loop with the connection attached
 * (sd_bus_attach_event()), an eventfd for the core's events and one for
 * "stop". The thread registers with the core like a socket worker and
 * serves bus calls with the same core calls.
 *
 * Events: the core raises them on whatever thread charges (a socket
 * worker, usually) and tells dispatch, which serves its socket
 * subscribers and then this sink. The sink copies the event into a
 * queue under a mutex and, when the queue was empty, writes the eventfd;
 * the bus thread takes the whole queue at once and emits one Event signal
 * per entry. The consumer reads the eventfd before it takes the queue, so
 * an event queued after the take finds the queue empty and writes the
 * eventfd again: no wake-up is lost. The queue holds at most
 * BUS_EVENTS_MAX events, and so may sd-bus's queue of messages not yet
 * written to the bus daemon: when the bus cannot keep up the rest are
 * dropped and counted (and logged), the workers never wait for it, and
 * the memory it costs is bounded.
 *
 * Start-up is a handshake, like housekeeping's: bus_thread_start()
 * returns once the name is acquired, so that READY=1 means the bus is up.
 * If the connection drops later (the bus daemon restarted), the loop ends
 * (sd_bus_set_exit_on_disconnect()) and the daemon is told, to exit with
 * a failure and be restarted, as systemd's own bus daemons do.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "manager.h"
#include "thread.h"
#include "log.h"
#include "macro.h"

typedef struct BusEvent {
        struct BusEvent *next;
        MemEvent ev;
        uint64_t count;
        char path[];
} BusEvent;

struct BusThread {
        MemCore *core;
        Dispatch *dispatch;
        DispatchChangedFn changed;
        void *changed_userdata;
        char *address;
        BusLostFn lost;
        void *lost_userdata;

        pthread_t thread;
        bool running;
        pthread_mutex_t lock; /* the start-up handshake */
        pthread_cond_t cond;
        bool started;
        int result;

        int stop_fd;
        _Atomic bool stopping;

        /* The core's events on their way to the bus thread. */
        pthread_mutex_t events_lock;
        BusEvent *events, **events_tail;
        unsigned nevents;
        _Atomic uint64_t dropped;
        int events_fd;
};

static void bus_event_sink(MemGroup *g, MemEvent ev, uint64_t local, void *userdata) {
        BusThread *t = userdata;
        size_t n = strlen(g->path) + 1;
        BusEvent *e;
        bool wake;

        e = malloc(sizeof(*e) + n);
        if (!e) {
                atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
                return;
        }
        e->next = NULL;
        e->ev = ev;
        e->count = local;
        memcpy(e->path, g->path, n);

        pthread_mutex_lock(&t->events_lock);
        if (t->nevents >= BUS_EVENTS_MAX) {
                pthread_mutex_unlock(&t->events_lock);
                free(e);
                /* Relaxed: a statistic, read by the bus thread for a log line. */
                atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
                return;
        }
        *t->events_tail = e;
        t->events_tail = &e->next;
        wake = t->nevents++ == 0;
        pthread_mutex_unlock(&t->events_lock);
        if (wake)
                (void) eventfd_write(t->events_fd, 1);
}

int bus_thread_new(MemCore *core, Dispatch *d, DispatchChangedFn changed, void *changed_userdata,
                   BusThread **ret) {
        BusThread *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->core = core;
        t->dispatch = d;
        t->changed = changed;
        t->changed_userdata = changed_userdata;
        t->stop_fd = t->events_fd = -1;
        t->events_tail = &t->events;
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->cond, NULL);
        pthread_mutex_init(&t->events_lock, NULL);
        t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        t->events_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->stop_fd < 0 || t->events_fd < 0) {
                int r = -errno;

                bus_thread_free(t);
                return r;
        }
        dispatch_set_event_sink(d, bus_event_sink, t);
        *ret = t;
        return 0;
}

/* "the system bus", "the user bus", "the bus at ADDRESS": for messages. */
static const char *bus_words(const char *address, char *buf, size_t size) {
        if (strcmp(address, "system") == 0 || strcmp(address, "user") == 0)
                snprintf(buf, size, "the %s bus", address);
        else
                snprintf(buf, size, "the bus at %s", address);
        return buf;
}

static int bus_open(const char *address, sd_bus **ret) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r;

        if (strcmp(address, "system") == 0)
                return sd_bus_open_system_with_description(ret, "memacctd");
        if (strcmp(address, "user") == 0)
                return sd_bus_open_user_with_description(ret, "memacctd");
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_description(bus, "memacctd");
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        /* Without it no Hello() is sent and no name can be requested. */
        r = sd_bus_set_bus_client(bus, 1);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

/* Drops are logged at once, then at most once per this interval. */
#define DROPS_LOG_INTERVAL_USEC (10 * 1000000ULL)

typedef struct Loop {
        BusThread *t;
        BusManager m;
        sd_event *event;
        sd_event_source *drops_timer; /* armed while drops are being summed */
        uint64_t drops_unlogged;
} Loop;

static int on_drops_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void drops_log(Loop *l, uint64_t n, const char *when) {
        log_warning("Dropped %llu events%s: the bus did not keep up (more than %u queued)",
                    (unsigned long long) n, when, BUS_EVENTS_MAX);
        if (sd_event_add_time_relative(l->event, &l->drops_timer, CLOCK_MONOTONIC, DROPS_LOG_INTERVAL_USEC, 0,
                                       on_drops_timer, l) < 0)
                l->drops_timer = NULL; /* then every batch logs: noisy, not wrong */
}

/* A rate limit on the warning: a bus that falls behind drops in every batch. */
static void drops_note(Loop *l, uint64_t n) {
        if (n == 0)
                return;
        if (l->drops_timer)
                l->drops_unlogged += n;
        else
                drops_log(l, n, "");
}

static int on_drops_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Loop *l = userdata;
        uint64_t n = l->drops_unlogged;

        (void) s, (void) usec;
        l->drops_timer = sd_event_source_unref(l->drops_timer);
        l->drops_unlogged = 0;
        if (n > 0)
                drops_log(l, n, " in the last 10 s");
        return 0;
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        BusThread *t = l->t;
        BusEvent *e, *next;
        eventfd_t ignored;
        uint64_t dropped;
        bool broadcast = bus_manager_may_broadcast(&l->m);

        (void) s, (void) revents;
        /* First the eventfd, then the queue: see the top of the file. */
        (void) eventfd_read(fd, &ignored);
        pthread_mutex_lock(&t->events_lock);
        e = t->events;
        t->events = NULL;
        t->events_tail = &t->events;
        t->nevents = 0;
        pthread_mutex_unlock(&t->events_lock);

        for (dropped = 0; e; e = next) {
                uint64_t queued = 0;
                int r = 0;

                next = e->next;
                /* A bus daemon that does not read (stopped, overloaded)
                 * would grow sd-bus's write queue without bound: past
                 * BUS_EVENTS_MAX unsent messages, events are dropped here
                 * too. */
                if (broadcast && sd_bus_get_n_queued_write(l->m.bus, &queued) >= 0 &&
                    queued >= BUS_EVENTS_MAX)
                        dropped++;
                else if (broadcast)
                        r = sd_bus_emit_signal(l->m.bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, "Event",
                                               "sst", e->path, mem_event_to_string(e->ev), e->count);
                if (r < 0)
                        log_debug_errno(r, "Cannot emit Event(%s, %s), ignoring: %m", e->path,
                                        mem_event_to_string(e->ev));
                free(e);
        }
        dropped += atomic_exchange_explicit(&t->dropped, 0, memory_order_relaxed);
        drops_note(l, dropped);
        return 0;
}

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        (void) s, (void) fd, (void) revents;
        return sd_event_exit(l->event, 0);
}

static int loop_setup(Loop *l) {
        BusThread *t = l->t;
        char words[256];
        int r;

        bus_words(t->address, words, sizeof(words));
        r = sd_event_new(&l->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the bus thread's event loop: %m");
        r = bus_open(t->address, &l->m.bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to %s: %m", words);
        r = sd_bus_attach_event(l->m.bus, l->event, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(l->m.bus, 1);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, t->events_fd, EPOLLIN, on_events, l);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, t->stop_fd, EPOLLIN, on_stop, l);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the bus thread's event loop: %m");
        /* The objects first: a call may arrive as soon as the name is ours. */
        r = bus_manager_register(&l->m);
        if (r < 0)
                return log_error_errno(r, "Cannot register the bus objects: %m");
        r = sd_bus_request_name(l->m.bus, BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is owned by another process on %s", BUS_NAME, words);
        if (r < 0)
                return log_error_errno(r, "Cannot acquire the name %s on %s: %m", BUS_NAME, words);
        return 0;
}

static void loop_done(Loop *l) {
        if (l->drops_unlogged > 0)
                log_warning("Dropped %llu events at the end: the bus did not keep up",
                            (unsigned long long) l->drops_unlogged);
        l->drops_timer = sd_event_source_unref(l->drops_timer);
        /* Sessions end before the connection closes: a closing connection
         * would fire every track at once, to the same effect. */
        bus_manager_done(&l->m);
        if (l->m.bus)
                l->m.bus = sd_bus_flush_close_unref(l->m.bus);
        l->event = sd_event_unref(l->event);
}

static void *bus_thread_main(void *userdata) {
        BusThread *t = userdata;
        Loop l = {
                .t = t,
                .m = {
                        .core = t->core,
                        .dispatch = t->dispatch,
                        .changed = t->changed,
                        .changed_userdata = t->changed_userdata,
                },
        };
        char words[256];
        int r;

        r = core_thread_register(t->core);
        if (r < 0)
                log_error_errno(r, "Cannot register the bus thread with the core: %m");
        else {
                r = loop_setup(&l);
                if (r < 0) {
                        loop_done(&l);
                        core_thread_unregister(t->core);
                }
        }
        pthread_mutex_lock(&t->lock);
        t->started = true;
        t->result = r;
        pthread_cond_broadcast(&t->cond);
        pthread_mutex_unlock(&t->lock);
        if (r < 0)
                return NULL;

        bus_words(t->address, words, sizeof(words));
        log_debug("Serving %s on %s", BUS_NAME, words);
        r = sd_event_loop(l.event);
        if (!atomic_load(&t->stopping)) {
                if (r < 0)
                        log_error_errno(r, "The bus thread's event loop failed: %m");
                else
                        log_error("Lost the connection to %s", words);
                if (t->lost)
                        t->lost(t->lost_userdata);
        }
        loop_done(&l);
        core_thread_unregister(t->core);
        return NULL;
}

int bus_thread_start(BusThread *t, const char *address, BusLostFn lost, void *lost_userdata) {
        sigset_t all, old;
        int r;

        t->address = strdup(address);
        if (!t->address)
                return log_error_errno(ENOMEM, "Out of memory");
        t->lost = lost;
        t->lost_userdata = lost_userdata;

        /* Signals are the main loop's business. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = -pthread_create(&t->thread, NULL, bus_thread_main, t);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return log_error_errno(r, "Cannot start the bus thread: %m");

        pthread_mutex_lock(&t->lock);
        while (!t->started)
                pthread_cond_wait(&t->cond, &t->lock);
        r = t->result;
        pthread_mutex_unlock(&t->lock);
        if (r < 0) {
                pthread_join(t->thread, NULL);
                return r;
        }
        t->running = true;
        return 0;
}

void bus_thread_stop(BusThread *t) {
        if (!t || !t->running)
                return;
        atomic_store(&t->stopping, true);
        (void) eventfd_write(t->stop_fd, 1);
        pthread_join(t->thread, NULL);
        t->running = false;
}

BusThread *bus_thread_free(BusThread *t) {
        BusEvent *e, *next;

        if (!t)
                return NULL;
        bus_thread_stop(t);
        if (t->dispatch)
                dispatch_set_event_sink(t->dispatch, NULL, NULL);
        for (e = t->events; e; e = next) {
                next = e->next;
                free(e);
        }
        if (t->stop_fd >= 0)
                close(t->stop_fd);
        if (t->events_fd >= 0)
                close(t->events_fd);
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->events_lock);
        free(t->address);
        free(t);
        return NULL;
}
