/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus thread
 *
 * sd-bus objects have no locking, and sd-event is meant to run one
 * instance per thread, so everything that touches the connection happens
 * here: an sd-event loop with the connection attached
 * (sd_bus_attach_event()), the eventfd of the signal queue and one for
 * "stop". The thread registers with the service like a socket worker and
 * serves bus calls with the same service calls.
 *
 * Signals: the service's events are queued by signals.c from whatever
 * thread made the change; its eventfd wakes this loop, which emits them.
 *
 * Start-up is a handshake, like housekeeping's: bus_thread_start()
 * returns once the name is acquired, so that READY=1 means the bus is up,
 * or once the bus was found unreachable: the socket is served without it.
 * Only a bus that answers and gives the name to someone else fails the
 * start (a second memacctd).
 *
 * The bus never stops the daemon. When the connection drops (the bus
 * daemon restarted, or it closed the connection for a reason of its own)
 * the loop ends (sd_bus_set_exit_on_disconnect()), the bus peers'
 * sessions end as they would had each left, and the thread connects
 * again, after 0.25 s and then twice as long each time up to 8 s, until
 * the name is ours again; each step is logged once. Socket clients never
 * notice. While there is no connection, queued signals are dropped (no
 * one could hear them) and a save wakes nothing that waits.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "bus/manager.h"
#include "bus/names.h"
#include "bus/park.h"
#include "bus/signals.h"
#include "bus/thread.h"
#include "clock.h"
#include "macro.h"
#include "base/log.h"
#include "thread-start.h"

struct BusThread {
        Service *service;
        BusSignals *signals;
        char *address;
        _Atomic bool connected; /* the name is ours now */

        pthread_t thread;
        bool running;
        ThreadStart start;

        int stop_fd;
        int saved_fd; /* the saver's wake-up: held replies may go */
        int park_fd;  /* a round of reclaim a held call waits for ended (park.h) */
        _Atomic bool stopping;
};

/* A SaverWakeFn: a save ended (on the saver thread). */
static void bus_thread_saved(void *userdata) {
        BusThread *t = userdata;

        (void) eventfd_write(t->saved_fd, 1);
}

int bus_thread_new(Service *svc, BusThread **ret) {
        BusThread *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        t->service = svc;
        t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        t->saved_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        t->park_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->stop_fd < 0 || t->saved_fd < 0 || t->park_fd < 0) {
                r = -errno;
                bus_thread_free(t);
                return r;
        }
        r = bus_signals_new(&t->signals);
        if (r < 0) {
                bus_thread_free(t);
                return r;
        }
        r = service_add_durable_waker(svc, bus_thread_saved, t);
        if (r < 0) {
                bus_thread_free(t);
                return r;
        }
        events_set_sink(service_events(svc), bus_signals_sink, t->signals);
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

        (void) s, (void) fd, (void) revents;
        drops_note(l, bus_manager_flush(&l->m));
        return 0;
}

static int on_saved(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        eventfd_t n;

        (void) s, (void) revents;
        (void) eventfd_read(fd, &n);
        bus_manager_release(&l->m);
        return 0;
}

static int on_park(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        (void) s, (void) fd, (void) revents;
        bus_park_serve(&l->m);
        return 0;
}

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        (void) s, (void) fd, (void) revents;
        return sd_event_exit(l->event, 0);
}

/*
 * An event loop, with the thread's own descriptors: one per connection,
 * since a loop that ended (sd_event_exit() when the connection drops)
 * cannot run again.
 */
static int loop_new(Loop *l, int level) {
        BusThread *t = l->t;
        int r;

        r = sd_event_new(&l->event);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, bus_signals_fd(t->signals), EPOLLIN, on_events, l);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, t->saved_fd, EPOLLIN, on_saved, l);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, t->park_fd, EPOLLIN, on_park, l);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, t->stop_fd, EPOLLIN, on_stop, l);
        if (r < 0)
                return log_full_errno(level, r, "Cannot set up the bus thread's event loop: %m");
        return 0;
}

/* Connect, register the objects and take the name. Return: 0 or a negative errno, logged at @level. */
static int loop_connect(Loop *l, int level) {
        BusThread *t = l->t;
        char words[256];
        int r;

        bus_words(t->address, words, sizeof(words));
        r = loop_new(l, level);
        if (r < 0)
                return r;
        r = bus_open(t->address, &l->m.bus);
        if (r < 0)
                return log_full_errno(level, r, "Cannot connect to %s: %m", words);
        r = sd_bus_attach_event(l->m.bus, l->event, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(l->m.bus, 1);
        if (r < 0)
                return log_full_errno(level, r, "Cannot attach the bus to the event loop: %m");
        /* The objects first: a call may arrive as soon as the name is ours. */
        r = bus_manager_register(&l->m);
        if (r < 0)
                return log_full_errno(level, r, "Cannot register the bus objects on %s: %m", words);
        r = sd_bus_request_name(l->m.bus, BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is owned by another process on %s", BUS_NAME, words);
        if (r < 0)
                return log_full_errno(level, r, "Cannot acquire the name %s on %s: %m", BUS_NAME, words);
        atomic_store(&t->connected, true);
        return 0;
}

/* The connection goes: its peers' sessions end first, then it is closed, and its loop. */
static void loop_disconnect(Loop *l) {
        atomic_store(&l->t->connected, false);
        /* Sessions end before the connection closes: a closing connection
         * would end every peer at once, to the same effect. */
        bus_manager_done(&l->m);
        if (l->m.bus)
                l->m.bus = sd_bus_flush_close_unref(l->m.bus);
        l->drops_timer = sd_event_source_unref(l->drops_timer);
        l->event = sd_event_unref(l->event);
}

static void loop_done(Loop *l) {
        if (l->drops_unlogged > 0)
                log_warning("Dropped %llu events at the end: the bus did not keep up",
                            (unsigned long long) l->drops_unlogged);
        loop_disconnect(l);
}

/* The first wait before connecting again, and the longest. */
#define RECONNECT_FIRST_USEC (250 * 1000ULL)
#define RECONNECT_MAX_USEC (8 * 1000000ULL)

/*
 * No connection: wait @usec, dropping the signals queued meanwhile and
 * the saver's wake-ups (no held reply is left to release). Return: true
 * when the thread is told to stop.
 */
static bool loop_wait(Loop *l, uint64_t usec) {
        BusThread *t = l->t;
        struct pollfd fds[] = {
                { .fd = t->stop_fd, .events = POLLIN },
                { .fd = bus_signals_fd(t->signals), .events = POLLIN },
                { .fd = t->saved_fd, .events = POLLIN },
        };
        uint64_t end = clock_now_usec(CLOCK_MONOTONIC) + usec;
        eventfd_t n;

        for (uint64_t now; !atomic_load(&t->stopping) && (now = clock_now_usec(CLOCK_MONOTONIC)) < end;) {
                if (poll(fds, ELEMENTSOF(fds), (int) ((end - now + 999) / 1000)) < 0 && errno != EINTR)
                        return false; /* only EINTR is expected: wait no more */
                (void) bus_signals_flush(t->signals, NULL, false);
                if (fds[2].revents & POLLIN)
                        (void) eventfd_read(t->saved_fd, &n);
        }
        return atomic_load(&t->stopping);
}

/* Serve until told to stop, connecting again whenever the connection is lost. */
static void loop_serve(Loop *l) {
        BusThread *t = l->t;
        uint64_t wait = RECONNECT_FIRST_USEC;
        bool said = false;
        char words[256];
        int r;

        bus_words(t->address, words, sizeof(words));
        for (;;) {
                if (atomic_load(&t->connected)) {
                        log_debug("Serving %s on %s", BUS_NAME, words);
                        r = sd_event_loop(l->event);
                        if (atomic_load(&t->stopping))
                                return;
                        if (r < 0)
                                log_warning_errno(r, "The bus thread's event loop failed, connecting to %s "
                                                  "again: %m", words);
                        else
                                log_warning("Lost the connection to %s: its peers' sessions end; serving "
                                            "the socket, and connecting again", words);
                        loop_disconnect(l);
                        wait = RECONNECT_FIRST_USEC;
                        said = true;
                }
                if (loop_wait(l, wait))
                        return;
                loop_disconnect(l); /* what a failed attempt left */
                r = loop_connect(l, LOG_DEBUG);
                if (r >= 0) {
                        log_notice("Connected to %s: %s is ours%s", words, BUS_NAME, said ? " again" : "");
                        continue;
                }
                wait = MIN(wait * 2, RECONNECT_MAX_USEC);
        }
}

static void *bus_thread_main(void *userdata) {
        BusThread *t = userdata;
        Loop l = {
                .t = t,
                .m = {
                        .service = t->service,
                        .signals = t->signals,
                        .park_fd = t->park_fd,
                },
        };
        char words[256];
        int r;

        bus_words(t->address, words, sizeof(words));
        r = service_thread_register(t->service);
        if (r < 0)
                log_error_errno(r, "Cannot register the bus thread with the service: %m");
        if (r >= 0) {
                r = loop_connect(&l, LOG_WARNING);
                if (r < 0 && r != -EEXIST) {
                        log_warning("Serving the socket without %s, and connecting to it when it is there",
                                    words);
                        r = 0;
                }
        }
        if (r < 0) {
                loop_done(&l);
                service_thread_unregister(t->service);
        }
        thread_started(&t->start, r);
        if (r < 0)
                return NULL;

        loop_serve(&l);
        loop_done(&l);
        service_thread_unregister(t->service);
        return NULL;
}

int bus_thread_start(BusThread *t, const char *address) {
        int r;

        t->address = strdup(address);
        if (!t->address)
                return log_error_errno(ENOMEM, "Out of memory");
        r = thread_start(&t->thread, &t->start, bus_thread_main, t);
        if (r < 0)
                return r; /* the thread logged why, or could not start at all */
        t->running = true;
        return 0;
}

bool bus_thread_connected(BusThread *t) {
        return t && atomic_load(&t->connected);
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
        if (!t)
                return NULL;
        bus_thread_stop(t);
        if (t->signals) {
                events_set_sink(service_events(t->service), NULL, NULL);
                t->signals = bus_signals_free(t->signals);
        }
        if (t->stop_fd >= 0)
                close(t->stop_fd);
        if (t->saved_fd >= 0)
                close(t->saved_fd);
        if (t->park_fd >= 0)
                close(t->park_fd);
        free(t->address);
        free(t);
        return NULL;
}
