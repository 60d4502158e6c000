/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon: the configuration in force and the components it starts,
 * stops and reconfigures.
 *
 * The configuration is memacctd.conf (when there is one), the command
 * line over it (the command line wins), and the defaults for what
 * neither sets; it is read whole, and a file that does not parse changes
 * nothing.
 *
 * Start order: bind the socket (or take the one systemd passed) first,
 * so that a second daemon refuses to start before it touches the state;
 * then the accounting core with the restored state, housekeeping, the
 * saver and the service over them (the service installs the core's hooks
 * before any other thread uses the core); the kernel cgroup mirror; the
 * bus, connected and its name acquired; the housekeeping thread; the
 * socket workers; the saver thread (after every transport added its
 * waker); then the socket is served, the metrics listener starts, and
 * SIGTERM, SIGINT and SIGHUP are watched. daemon_run() tells systemd
 * READY=1 and runs the main loop.
 *
 * Stop order, the reverse of what may still create work: STOPPING=1;
 * the service is told it stops (transient groups are the next start's,
 * not removed as their creators' connections close); the metrics
 * listener (a scrape would only see groups emptying); no more accepting,
 * the socket file removed; the workers answer what they read; the bus
 * thread, which ends the bus peers' sessions; housekeeping; and last the
 * saver, which saves what persists once every session is gone.
 *
 * A reload (SIGHUP, between RELOADING=1 and READY=1) changes what each
 * component takes at run time: the per-request and per-connection
 * limits and the per-uid and total bounds (read at each request or
 * connection), the accounting settings the core reads atomically, the
 * flush and sample intervals, fsync, [access] read and the [cgroup]
 * mirror settings, and the regions [regions] declares (added, never
 * removed: daemon-regions.c). It cannot change what was sized or bound at the
 * start, and says so: the socket (bound), the state directory (the
 * state was restored from it), the number of workers (threads),
 * [limits] groups and depth (the core's tables are sized by them), and
 * the metrics listener (bound, its bounds copied when it is made);
 * [cgroup] import-at-start matters at a start only.
 *
 * Which bus: --bus system|user|ADDRESS, or none. Without --bus, the
 * system bus when memacctd runs as root under systemd ($INVOCATION_ID is
 * set); no bus otherwise. A bus that cannot be reached is never fatal:
 * the socket is served, STATUS= says "(not connected)", and the bus thread
 * connects when the bus is there and again whenever it is lost
 * (bus/thread.c). Only a bus whose name another process owns fails the
 * start.
 */

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"
#include "bus/names.h"
#include "bus/thread.h"
#include "cgroup/mirror.h"
#include "core/core.h"
#include "daemon-internal.h"
#include "daemon.h"
#include "housekeeping.h"
#include "http/metrics.h"
#include "sock/listen.h"
#include "sock/server.h"
#include "state/persist.h"
#include "state/saver.h"

/* Workers get this long at shutdown to write what they owe. */
#define SHUTDOWN_GRACE_MSEC 1000

struct Daemon {
        Args args;
        char *config_path;    /* the file read (or tried) */
        bool config_explicit; /* --config: the file must exist */
        Config config;        /* in force: file, then command line, then defaults */

        struct event_base *base;
        struct event *ev_signals[3];

        MemCore *core;
        Service *service;
        Housekeeping *housekeeping;
        Saver *saver;
        CgroupMirror *cgroup;
        SockServer *server;
        BusThread *bus;
        Metrics *metrics;
        const char *bus_address; /* the bus served; NULL: none */

        SockListen listen; /* its fd until the server owns it */
};

/* ---- status ---- */

static const char *bus_description(const char *address) {
        if (!address)
                return NULL;
        if (strcmp(address, "system") == 0)
                return "the system bus";
        if (strcmp(address, "user") == 0)
                return "the user bus";
        return "a private bus";
}

/*
 * The one-line STATUS= (systemctl status shows it): where we listen and
 * how much we track. A HousekeepingStatusFn: called from the housekeeping
 * thread, and from main; everything it reads is fixed after start-up or
 * an atomic count.
 */
static void daemon_status(void *userdata, char *buf, size_t size) {
        Daemon *d = userdata;

        unsigned groups = service_group_count(d->service), sessions = service_session_count(d->service);

        snprintf(buf, size, "Listening on %s%s%s%s: %u group%s, %u session%s", d->listen.name,
                 d->bus_address ? " and " BUS_NAME " on " : "",
                 d->bus_address ? bus_description(d->bus_address) : "",
                 d->bus_address && !bus_thread_connected(d->bus) ? " (not connected)" : "", groups,
                 groups == 1 ? "" : "s", sessions, sessions == 1 ? "" : "s");
}

static void daemon_notify_ready(Daemon *d) {
        char status[256];

        daemon_status(d, status, sizeof(status));
        (void) sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

/* ---- the bus ---- */

/* Which bus to serve, from --bus and how we were started (see the top of the file). */
static void daemon_choose_bus(Daemon *d) {
        const char *bus = d->args.bus;

        if (bus) {
                d->bus_address = strcmp(bus, "none") == 0 ? NULL : bus;
                return;
        }
        if (geteuid() == 0 && getenv("INVOCATION_ID")) {
                d->bus_address = "system";
        }
}

/* Connect and acquire the name; before the workers and housekeeping run. */
static int daemon_start_bus(Daemon *d) {
        int r;

        if (!d->bus_address)
                return 0;
        r = bus_thread_new(d->service, &d->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the bus thread: %m");
        r = bus_thread_start(d->bus, d->bus_address);
        if (r >= 0)
                return 0;
        /* No other thread uses the service yet: the sink may go. */
        d->bus = bus_thread_free(d->bus);
        return r;
}

/* ---- the kernel cgroup mirror ---- */

static int daemon_start_cgroup(Daemon *d) {
        const Config *c = &d->config;
        ServiceImportCounts counts;
        Refusal rf;
        int r;

        r = cgroup_mirror_new(d->core, events_notify, service_events(d->service), NULL, config_cgroup_prefix(c),
                              c->cgroup_auto_create, &d->cgroup);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the kernel cgroup mirror: %m");
        log_info("Kernel cgroups: %s", cgroup_mirror_describe(d->cgroup));
        service_set_cgroup(d->service, d->cgroup);
        service_set_prune_on_sample(d->service, c->cgroup_prune);
        housekeeping_set_sampler(d->housekeeping, service_sample_mirrors, d->service,
                                 c->cgroup_sample_interval_sec * 1000);
        if (c->cgroup_import_at_start) {
                /* Not fatal: a host without cgroups still gets its daemon. */
                refusal_init(&rf);
                r = service_import_cgroups(d->service, service_daemon_peer(d->service), "/", NULL, &counts, &rf);
                if (r < 0)
                        log_warning("[cgroup] import-at-start: %s", rf.message);
        }
        return 0;
}

/* ---- reload ---- */

/* Hand the configuration in force to the components there are (none before the start). */
static void daemon_push_config(Daemon *d) {
        const Config *c = &d->config;

        log_set_max_level(c->log_level + d->args.verbose);
        if (d->service) {
                ServiceSettings ss = daemon_service_settings(c);

                service_set_prune_on_sample(d->service, c->cgroup_prune);
                service_set_settings(d->service, &ss);
        }
        if (d->server) {
                SockLimits sl = daemon_sock_limits(c);

                sock_server_set_limits(d->server, &sl);
        }
        if (d->housekeeping) {
                housekeeping_set_flush_interval(d->housekeeping, c->flush_interval_msec);
                housekeeping_set_sample_interval(d->housekeeping, c->cgroup_sample_interval_sec * 1000);
        }
        if (d->saver)
                saver_set_sync(d->saver, c->sync);
        if (d->cgroup && cgroup_mirror_set_config(d->cgroup, config_cgroup_prefix(c), c->cgroup_auto_create) < 0)
                log_warning("Out of memory: [cgroup] prefix not changed");
        if (d->core) {
                core_set_rss_threshold(d->core, c->rss_threshold);
                core_set_recursive_protection(d->core, c->recursive_protection);
        }
        /* On a reload a region that cannot be registered is logged, and
         * the daemon serves on with the others, as it does when the file
         * itself is bad. */
        if (d->service && daemon_regions_apply(d->service, c) < 0)
                log_warning("[regions] not every declared region is registered; see above");
}

int daemon_reload(Daemon *d) {
        _cleanup_free_ char *error = NULL;
        /* Before the start nobody waits for READY=1, and there is no status to tell. */
        bool started = d->service;
        Config new;
        int r;

        if (started)
                (void) sd_notify(0, "RELOADING=1\nSTATUS=Reloading the configuration");
        r = daemon_config_read(&d->args, d->config_path, d->config_explicit, &new, &error);
        if (r < 0) {
                if (error)
                        log_error("%s; keeping the current configuration", error);
                else
                        log_error_errno(r, "Cannot reload the configuration (%m); keeping the current one");
        } else {
                r = daemon_config_report_fixed(&d->config, &new, d->listen.activated);
                daemon_config_take_changeable(&d->config, &new);
                daemon_push_config(d);
                config_done(&new);
                log_notice("Configuration reloaded%s%s", d->config_path ? " from " : "",
                           d->config_path ? d->config_path : "");
                daemon_config_log(&d->config);
        }
        if (started)
                daemon_notify_ready(d);
        return r;
}

static void on_signal(evutil_socket_t sig, short what, void *userdata) {
        Daemon *d = userdata;

        (void) what;
        if (sig == SIGHUP) {
                (void) daemon_reload(d);
                return;
        }
        log_notice("Received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        event_base_loopexit(d->base, NULL);
}

/* ---- start and stop ---- */

static void transient_tick(void *userdata) {
        service_transient_tick(userdata);
}

/* The accounting core with the saved state, and the service over it. */
static int daemon_start_service(Daemon *d) {
        const Config *c = &d->config;
        MemCoreConfig cc = {
                /* Workers and root's, housekeeping, the saver, main, the bus,
                 * metrics, and room to spare. */
                .max_threads = c->workers + 7,
                .max_groups = c->max_groups,
                .max_depth = c->max_depth,
                .rss_threshold = c->rss_threshold,
                .recursive_protection = c->recursive_protection,
                .charge_stock = c->charge_stock,
        };
        ServiceSettings ss = daemon_service_settings(c);
        int r;

        r = core_new(&cc, &d->core);
        if (r < 0)
                return log_error_errno(r, "Cannot create the accounting core: %m");
        r = core_thread_register(d->core);
        if (r < 0)
                return log_error_errno(r, "Cannot register the main thread with the core: %m");
        r = persist_restore(d->core, c->state_dir);
        if (r < 0)
                return r;
        r = housekeeping_new(d->core, c->flush_interval_msec, &d->housekeeping);
        if (r < 0)
                return log_error_errno(r, "Cannot set up housekeeping: %m");
        r = saver_new(d->core, c->state_dir, c->sync, &d->saver);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the saver: %m");
        /* The service installs the core's hooks, and the bus its sink:
         * both before any other thread uses the core. */
        r = service_new(d->core, &ss, &d->service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the service: %m");
        service_set_saver(d->service, d->saver);
        /* After the restore: a declared region the state has already is
         * kept, or takes the file's capacity. A region that cannot be
         * registered as declared stops the start, as a bad value does. */
        return daemon_regions_apply(d->service, c);
}

/* The periodic duties, on their own thread from here on. */
static int daemon_start_housekeeping(Daemon *d) {
        uint64_t watchdog_usec;
        int r;

        if (sd_watchdog_enabled(0, &watchdog_usec) <= 0)
                watchdog_usec = 0;
        housekeeping_set_notify(d->housekeeping, daemon_status, d, watchdog_usec);
        housekeeping_set_alive(d->housekeeping, saver_alive, d->saver);
        /* Transient orphans go once empty even when no client goes. */
        housekeeping_set_chore(d->housekeeping, transient_tick, d->service, 1000);
        r = housekeeping_start(d->housekeeping);
        if (r < 0)
                return log_error_errno(r, "Cannot start the housekeeping thread: %m");
        return 0;
}

/* The socket workers, then the listener hands them connections. */
static int daemon_start_socket(Daemon *d) {
        SockLimits sl = daemon_sock_limits(&d->config);
        int r;

        r = sock_server_new(d->service, &sl, d->config.workers, &d->server);
        if (r < 0)
                return log_error_errno(r, "Cannot set up %u workers: %m", d->config.workers);
        return sock_server_start(d->server);
}

static int daemon_start_metrics(Daemon *d) {
        int r;

        /* A listener systemd passed (memacctd-metrics.socket), or [metrics] listen, or none. */
        r = metrics_new(d->service, &d->config, &d->metrics);
        if (r < 0 || !d->metrics)
                return r;
        r = metrics_start(d->metrics);
        if (r < 0)
                return r;
        if (strncmp(metrics_name(d->metrics), "unix:", 5) == 0)
                log_notice("Serving metrics on %s (GET /metrics)", metrics_name(d->metrics));
        else
                log_notice("Serving metrics on http://%s/metrics", metrics_name(d->metrics));
        return 0;
}

static int daemon_watch_signals(Daemon *d) {
        static const int signals[] = { SIGTERM, SIGINT, SIGHUP };

        _Static_assert(ELEMENTSOF(signals) == ELEMENTSOF(((Daemon *) NULL)->ev_signals), "a slot per signal");
        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                d->ev_signals[i] = evsignal_new(d->base, signals[i], on_signal, d);
                if (!d->ev_signals[i] || event_add(d->ev_signals[i], NULL) < 0)
                        return log_error_errno(ENOMEM, "Cannot watch signals");
        }
        return 0;
}

int daemon_start(Daemon *d) {
        int r;

        /* Before any event base exists: bases created earlier have no
         * locks (libevent#1130), and workers are woken across threads. */
        if (evthread_use_pthreads() < 0)
                return log_error_errno(ENOSYS, "libevent has no pthreads support");
        /* A peer that closes early makes writev() raise SIGPIPE; EPIPE is enough. */
        signal(SIGPIPE, SIG_IGN);
        d->base = event_base_new();
        if (!d->base)
                return log_error_errno(ENOMEM, "Cannot create the main event loop");

        r = sock_listen_open(d->config.socket_path, d->args.socket_path, &d->listen);
        if (r >= 0)
                r = daemon_start_service(d);
        if (r >= 0)
                r = daemon_start_cgroup(d);
        if (r >= 0)
                r = daemon_start_bus(d);
        if (r >= 0)
                r = daemon_start_housekeeping(d);
        if (r >= 0)
                r = daemon_start_socket(d);
        if (r < 0)
                return r;
        /* After every transport added its waker, before the socket is
         * served (the bus may already wait: its OKs go out from here). */
        r = saver_start(d->saver);
        if (r < 0)
                return log_error_errno(r, "Cannot start the saver thread: %m");
        r = sock_server_listen(d->server, d->base, d->listen.fd);
        if (r < 0)
                return log_error_errno(r, "Cannot listen: %m");
        d->listen.fd = -1; /* the listener owns it now */
        r = daemon_start_metrics(d);
        if (r < 0)
                return r;
        return daemon_watch_signals(d);
}

int daemon_run(Daemon *d) {
        daemon_notify_ready(d);
        log_notice("Listening on %s%s%s%s with %u workers, state in %s", d->listen.name,
                   d->listen.activated ? " (socket activation)" : "",
                   d->bus_address ? " and " BUS_NAME " on " : "",
                   d->bus_address ? bus_description(d->bus_address) : "", d->config.workers,
                   d->config.state_dir);

        event_base_dispatch(d->base);
        return 0;
}

int daemon_stop(Daemon *d) {
        (void) sd_notify(0, "STOPPING=1\nSTATUS=Shutting down");
        /* Transient groups are the next start's, not removed as their
         * creators' connections close now. */
        if (d->service)
                service_stopping(d->service);
        /* A scrape during shutdown would only see groups emptying. */
        metrics_stop(d->metrics);
        if (d->server)
                sock_server_stop_accepting(d->server);
        if (d->listen.fd >= 0) {
                close(d->listen.fd);
                d->listen.fd = -1;
        }
        sock_listen_unlink(&d->listen);
        if (d->server)
                sock_server_stop(d->server, SHUTDOWN_GRACE_MSEC);
        /* The bus peers' sessions end with the bus thread. */
        bus_thread_stop(d->bus);
        housekeeping_stop(d->housekeeping);
        /* Every session is gone: save what persists. */
        return saver_stop(d->saver);
}

Daemon *daemon_free(Daemon *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(d->ev_signals); i++)
                if (d->ev_signals[i])
                        event_free(d->ev_signals[i]);
        d->metrics = metrics_free(d->metrics);
        d->server = sock_server_free(d->server);
        d->housekeeping = housekeeping_free(d->housekeeping);
        d->saver = saver_free(d->saver);
        /* Before the service: it stops being the event sink. */
        d->bus = bus_thread_free(d->bus);
        d->service = service_free(d->service);
        d->cgroup = cgroup_mirror_free(d->cgroup);
        /* The main thread may stay registered: core_free() allows the caller. */
        d->core = core_free(d->core);
        if (d->base)
                event_base_free(d->base);
        config_done(&d->config);
        free(d->config_path);
        sock_listen_done(&d->listen);
        free(d);
        return NULL;
}

int daemon_new(const Args *args, Daemon **ret) {
        _cleanup_(daemon_freep) Daemon *d = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        d = calloc(1, sizeof(*d));
        if (!d)
                return log_error_errno(ENOMEM, "Cannot read the configuration: %m");
        d->listen = SOCK_LISTEN_INIT;
        d->args = *args;
        daemon_choose_bus(d);

        if (args->config_path) {
                d->config_explicit = true;
                d->config_path = strdup(args->config_path);
                r = d->config_path ? 0 : -ENOMEM;
        } else
                r = paths_default_config(&d->config_path);
        if (r >= 0)
                r = daemon_config_read(&d->args, d->config_path, d->config_explicit, &d->config, &error);
        if (r < 0) {
                if (!error)
                        return log_error_errno(r, "Cannot read the configuration: %m");
                log_error("%s", error);
                return r;
        }
        log_set_max_level(d->config.log_level + d->args.verbose);
        daemon_config_log(&d->config);
        *ret = TAKE_PTR(d);
        return 0;
}

const Config *daemon_config(const Daemon *d) {
        return &d->config;
}

Service *daemon_service(const Daemon *d) {
        return d->service;
}

const char *daemon_bus_address(const Daemon *d) {
        return d->bus_address;
}
