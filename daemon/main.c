/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctd: hierarchical memory accounting in userspace, served over a
 * protobuf Unix socket and, optionally, D-Bus (org.memacct1).
 *
 * This file wires the pieces together and owns the process's life:
 * parse the command line and memacctd.conf (the command line wins),
 * bind the socket (or take the one systemd passed) before anything else
 * so that a second daemon refuses to start without touching the state,
 * restore the state, set up the service, connect to the bus and acquire the
 * name, start the housekeeping thread and the workers, tell systemd
 * READY=1, and run the main loop: accepting, SIGHUP (reload what can
 * change at run time, between RELOADING=1 and READY=1), SIGTERM/SIGINT
 * (STOPPING=1, stop accepting, let the workers answer what they read,
 * end the bus peers' sessions, save, exit 0).
 *
 * Threads: main (acceptor, signals; registered with the core because it
 * restores the state), N workers, one housekeeping thread (statistics,
 * saves, STATUS= and WATCHDOG=1), one bus thread when there is a bus, one
 * metrics thread when systemd passed a "metrics" listener or [metrics]
 * listen or --metrics names an address (it starts once the socket
 * listens, and stops first at shutdown).
 *
 * Which bus: --bus system|user|ADDRESS, or none. Without --bus, the
 * system bus when memacctd runs as root under systemd ($INVOCATION_ID is
 * set), and then a bus that cannot be reached is only a warning; no bus
 * otherwise. An explicit --bus that fails is fatal.
 */

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "bus/introspect.h"
#include "bus/names.h"
#include "bus/thread.h"
#include "core/core.h"
#include "http/metrics.h"
#include "macro.h"
#include "options.h"
#include "cgroup/mirror.h"
#include "base/config.h"
#include "state/saver.h"
#include "housekeeping.h"
#include "base/log.h"
#include "base/paths.h"
#include "state/persist.h"
#include "service/service.h"
#include "sock/listen.h"
#include "sock/server.h"

/* Workers get this long at shutdown to write what they owe. */
#define SHUTDOWN_GRACE_MSEC 1000


typedef struct Manager {
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
        bool bus_implicit;       /* not asked for: a failure to reach it is not fatal */
        _Atomic bool bus_lost;

        SockListen listen; /* its fd until the server owns it */
} Manager;

static unsigned cpu_count(void) {
        cpu_set_t set;
        long n;

        /* taskset, cgroup cpusets */
        if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
                return (unsigned) CPU_COUNT(&set);
        n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (unsigned) n : 1;
}

static int replace_string(char **p, const char *s) {
        char *copy = strdup(s);

        if (!copy)
                return -ENOMEM;
        free(*p);
        *p = copy;
        return 0;
}

/*
 * The configuration in force: the file (if any), the command line over it,
 * and the defaults for what neither set. On failure *ret_error says why
 * (for -ENOMEM it may be NULL).
 */
static int manager_read_config(Manager *m, Config *ret, char **ret_error) {
        Config c = CONFIG_DEFAULT;
        int r;

        *ret_error = NULL;
        if (m->config_path) {
                r = config_load(m->config_path, &c, ret_error);
                if (r == -ENOENT && !m->config_explicit) {
                        log_debug("No configuration file %s, using the defaults", m->config_path);
                        free(*ret_error);
                        *ret_error = NULL;
                        c = CONFIG_DEFAULT;
                } else if (r < 0)
                        return r;
        }

        r = 0;
        if (m->args.socket_path)
                r = replace_string(&c.socket_path, m->args.socket_path);
        if (r >= 0 && m->args.state_dir)
                r = replace_string(&c.state_dir, m->args.state_dir);
        if (m->args.workers > 0)
                c.workers = m->args.workers;
        if (r >= 0 && m->args.metrics) {
                free(c.metrics_listen);
                c.metrics_listen = NULL;
                if (*m->args.metrics)
                        r = replace_string(&c.metrics_listen, m->args.metrics);
        }
        if (r >= 0 && c.metrics_listen && !c.metrics_allow_remote) {
                ConfigListen l;

                /* The file's own listen was checked by config_parse(); this is --metrics. */
                if (config_listen_parse(c.metrics_listen, &l) >= 0 && !l.local) {
                        if (asprintf(ret_error, "--metrics %s: not a loopback address or Unix socket; the "
                                     "listener has no authentication (set [metrics] allow-remote = yes "
                                     "to serve it anyway)", c.metrics_listen) < 0)
                                *ret_error = NULL;
                        config_done(&c);
                        return -EINVAL;
                }
        }
        if (r >= 0 && !c.socket_path)
                r = paths_default_socket(&c.socket_path);
        if (r >= 0 && !c.state_dir)
                r = paths_default_state_dir(&c.state_dir);
        if (r == -ENOENT)
                r = log_error_errno(r, "No home directory for the state: use --state-dir");
        if (c.workers == 0)
                c.workers = MIN(cpu_count(), (unsigned) OPTIONS_WORKERS_MAX);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

/*
 * Descriptors the daemon keeps for itself and for root beyond the
 * [limits] connections of the other uids: its own files, the bus, the
 * workers' eventfds, the state file, and root's clients.
 */
#define NOFILE_RESERVE 256

/*
 * At start: the soft RLIMIT_NOFILE up to the hard one. systemd's soft
 * 1024 would make accept() fail with EMFILE at about a thousand clients,
 * well below [limits] connections; the hard limit is what the unit
 * (LimitNOFILE=) or the administrator granted.
 */
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warning_errno(errno, "Cannot raise the descriptor limit to %llu, ignoring: %m",
                                  (unsigned long long) rl.rlim_max);
}

/* [limits] connections, within what the descriptor limit leaves after NOFILE_RESERVE. */
static unsigned connections_bound(const Config *c) {
        struct rlimit rl;
        rlim_t room;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return c->connections;
        room = rl.rlim_cur > NOFILE_RESERVE * 2 ? rl.rlim_cur - NOFILE_RESERVE : rl.rlim_cur / 2;
        if (c->connections != 0 && c->connections <= room)
                return c->connections;
        /* 0, no bound of its own: the descriptors are the bound. */
        if (c->connections != 0)
                log_warning("[limits] connections = %u does not fit the descriptor limit %llu; using %llu",
                            c->connections, (unsigned long long) rl.rlim_cur, (unsigned long long) room);
        return (unsigned) MIN(room, (rlim_t) UINT_MAX);
}

static ServiceSettings service_settings_of(const Config *c) {
        return (ServiceSettings) {
                .max_frame = c->frame_size,
                .charge_batch = c->charge_batch,
                .max_sessions_per_uid = c->sessions_per_uid,
                .read_access = c->read_access,
                .bounds = {
                        .per_uid = {
                                [UID_CONNECTIONS] = c->connections_per_uid,
                                [UID_SUBSCRIPTIONS] = c->subscriptions_per_uid,
                                [UID_GROUPS] = c->groups_per_uid,
                        },
                        .total = {
                                [UID_CONNECTIONS] = connections_bound(c),
                                [UID_SUBSCRIPTIONS] = c->subscriptions,
                                [UID_GROUPS] = config_groups_not_root(c),
                        },
                        .output_per_uid = c->output_buffer_per_uid,
                        .output_total = c->output_buffer_total,
                },
        };
}

static SockLimits sock_limits(const Config *c) {
        return (SockLimits) {
                .max_frame = c->frame_size,
                .max_outstanding = c->outstanding_requests,
                .max_output = c->output_buffer,
                .idle_timeout_sec = c->idle_timeout_sec,
                .frame_timeout_sec = c->frame_timeout_sec,
        };
}

static void log_config(const Config *c) {
        log_debug("Configuration: socket=%s state-dir=%s workers=%u frame-size=%u groups=%u depth=%u "
                  "sessions-per-uid=%u outstanding-requests=%u output-buffer=%" PRIu64 " idle-timeout=%u "
                  "frame-timeout=%u flush-interval=%u charge-batch=%" PRIu64 " rss-threshold=%" PRIu64
                  " recursive-protection=%s read=%s cgroup-prefix=%s import-at-start=%s"
                  " sample-interval=%u auto-create=%s metrics=%s allow-remote=%s",
                  c->socket_path, c->state_dir, c->workers, c->frame_size, c->max_groups, c->max_depth,
                  c->sessions_per_uid, c->outstanding_requests, c->output_buffer, c->idle_timeout_sec,
                  c->frame_timeout_sec, c->flush_interval_msec, c->charge_batch, c->rss_threshold,
                  c->recursive_protection ? "yes" : "no", read_access_to_string(c->read_access),
                  config_cgroup_prefix(c), c->cgroup_import_at_start ? "yes" : "no",
                  c->cgroup_sample_interval_sec, c->cgroup_auto_create ? "yes" : "no",
                  c->metrics_listen ? c->metrics_listen : "(off)", c->metrics_allow_remote ? "yes" : "no");
        log_debug("Configuration: connections-per-uid=%u connections=%u subscriptions-per-uid=%u "
                  "subscriptions=%u groups-per-uid=%u output-buffer-per-uid=%" PRIu64
                  " output-buffer-total=%" PRIu64, c->connections_per_uid, c->connections,
                  c->subscriptions_per_uid, c->subscriptions, c->groups_per_uid, c->output_buffer_per_uid,
                  c->output_buffer_total);
}

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
static void manager_status(void *userdata, char *buf, size_t size) {
        Manager *m = userdata;

        snprintf(buf, size, "Listening on %s%s%s: %u groups, %u sessions", m->listen.name,
                 m->bus_address ? " and " BUS_NAME " on " : "",
                 m->bus_address ? bus_description(m->bus_address) : "", service_group_count(m->service),
                 service_session_count(m->service));
}

static void manager_notify_ready(Manager *m) {
        char status[256];

        manager_status(m, status, sizeof(status));
        (void) sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

/* ---- the bus ---- */

/* Which bus to serve, from --bus and how we were started (see the top of the file). */
static void manager_choose_bus(Manager *m) {
        const char *bus = m->args.bus;

        if (bus) {
                m->bus_address = strcmp(bus, "none") == 0 ? NULL : bus;
                return;
        }
        if (geteuid() == 0 && getenv("INVOCATION_ID")) {
                m->bus_address = "system";
                m->bus_implicit = true;
        }
}

/* A BusLostFn, on the bus thread: end the main loop, and exit with a failure. */
static void manager_bus_lost(void *userdata) {
        Manager *m = userdata;

        atomic_store(&m->bus_lost, true);
        /* Thread-safe: libevent's locking is on (evthread_use_pthreads()). */
        event_base_loopbreak(m->base);
}

/* Connect and acquire the name; before the workers and housekeeping run. */
static int manager_start_bus(Manager *m) {
        int r;

        if (!m->bus_address)
                return 0;
        r = bus_thread_new(m->service, &m->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the bus thread: %m");
        r = bus_thread_start(m->bus, m->bus_address, manager_bus_lost, m);
        if (r >= 0)
                return 0;
        /* No other thread uses the service yet: the sink may go. */
        m->bus = bus_thread_free(m->bus);
        if (!m->bus_implicit)
                return r;
        log_warning("Continuing without D-Bus (say --bus none to not try)");
        m->bus_address = NULL;
        return 0;
}

/* ---- the kernel cgroup mirror ---- */

static int manager_start_cgroup(Manager *m) {
        const Config *c = &m->config;
        ServiceImportCounts counts;
        Refusal rf;
        int r;

        r = cgroup_mirror_new(m->core, events_notify, service_events(m->service), NULL, config_cgroup_prefix(c),
                            c->cgroup_auto_create, &m->cgroup);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the kernel cgroup mirror: %m");
        log_info("Kernel cgroups: %s", cgroup_mirror_describe(m->cgroup));
        service_set_cgroup(m->service, m->cgroup);
        service_set_prune_on_sample(m->service, c->cgroup_prune);
        housekeeping_set_sampler(m->housekeeping, service_sample_mirrors, m->service,
                                 c->cgroup_sample_interval_sec * 1000);
        if (c->cgroup_import_at_start) {
                /* Not fatal: a host without cgroups still gets its daemon. */
                refusal_init(&rf);
                r = service_import_cgroups(m->service, service_daemon_peer(m->service), "/", NULL, &counts, &rf);
                if (r < 0)
                        log_warning("[cgroup] import-at-start: %s", rf.message);
        }
        return 0;
}

/* ---- signals and reload ---- */

static void manager_report_fixed(const char *key, const char *old, const char *new) {
        log_warning("%s changed from %s to %s: ignored until restart", key, old, new);
}

static bool streq_ptr(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}

/* Settings that only a restart changes: say so when the file changed them. */
static void manager_report_fixed_all(Manager *m, const Config *new) {
        const Config *c = &m->config;
        static const struct {
                const char *key;
                size_t offset;
        } numbers[] = {
                { "[daemon] workers", offsetof(Config, workers) },
                { "[limits] groups", offsetof(Config, max_groups) },
                { "[limits] depth", offsetof(Config, max_depth) },
        };
        char a[32], b[32];

        if (!m->listen.activated && strcmp(new->socket_path, c->socket_path) != 0)
                manager_report_fixed("[daemon] socket", c->socket_path, new->socket_path);
        if (strcmp(new->state_dir, c->state_dir) != 0)
                manager_report_fixed("[daemon] state-dir", c->state_dir, new->state_dir);
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                unsigned old_v = *(const unsigned *) ((const char *) c + numbers[i].offset);
                unsigned new_v = *(const unsigned *) ((const char *) new + numbers[i].offset);

                if (old_v == new_v)
                        continue;
                snprintf(a, sizeof(a), "%u", old_v);
                snprintf(b, sizeof(b), "%u", new_v);
                manager_report_fixed(numbers[i].key, a, b);
        }
        if (!streq_ptr(new->metrics_listen, c->metrics_listen))
                manager_report_fixed("[metrics] listen", c->metrics_listen ? c->metrics_listen : "(off)",
                                     new->metrics_listen ? new->metrics_listen : "(off)");
        if (new->metrics_allow_remote != c->metrics_allow_remote)
                manager_report_fixed("[metrics] allow-remote", c->metrics_allow_remote ? "yes" : "no",
                                     new->metrics_allow_remote ? "yes" : "no");
        if (new->cgroup_import_at_start != c->cgroup_import_at_start)
                log_notice("[cgroup] import-at-start takes effect at the next start");
}

/* Take what can change at run time from @new, and hand it to whoever uses it. */
static void manager_apply(Manager *m, Config *new) {
        Config *c = &m->config;
        ServiceSettings ss;
        SockLimits sl;

        c->frame_size = new->frame_size;
        c->sessions_per_uid = new->sessions_per_uid;
        c->outstanding_requests = new->outstanding_requests;
        c->output_buffer = new->output_buffer;
        c->idle_timeout_sec = new->idle_timeout_sec;
        c->frame_timeout_sec = new->frame_timeout_sec;
        c->connections_per_uid = new->connections_per_uid;
        c->connections = new->connections;
        c->subscriptions_per_uid = new->subscriptions_per_uid;
        c->subscriptions = new->subscriptions;
        c->groups_per_uid = new->groups_per_uid;
        c->output_buffer_per_uid = new->output_buffer_per_uid;
        c->output_buffer_total = new->output_buffer_total;
        c->flush_interval_msec = new->flush_interval_msec;
        c->charge_batch = new->charge_batch;
        c->rss_threshold = new->rss_threshold;
        c->recursive_protection = new->recursive_protection;
        c->read_access = new->read_access;
        c->cgroup_import_at_start = new->cgroup_import_at_start;
        c->cgroup_sample_interval_sec = new->cgroup_sample_interval_sec;
        c->cgroup_auto_create = new->cgroup_auto_create;
        c->cgroup_prune = new->cgroup_prune;
        service_set_prune_on_sample(m->service, c->cgroup_prune);
        free(c->cgroup_prefix);
        c->cgroup_prefix = TAKE_PTR(new->cgroup_prefix);

        ss = service_settings_of(c);
        service_set_settings(m->service, &ss);
        sl = sock_limits(c);
        sock_server_set_limits(m->server, &sl);
        housekeeping_set_flush_interval(m->housekeeping, c->flush_interval_msec);
        c->sync = new->sync;
        saver_set_sync(m->saver, c->sync);
        if (cgroup_mirror_set_config(m->cgroup, config_cgroup_prefix(c), c->cgroup_auto_create) < 0)
                log_warning("Out of memory: [cgroup] prefix not changed");
        housekeeping_set_sample_interval(m->housekeeping, c->cgroup_sample_interval_sec * 1000);
        core_set_rss_threshold(m->core, c->rss_threshold);
        core_set_recursive_protection(m->core, c->recursive_protection);
}

static void manager_reload(Manager *m) {
        _cleanup_free_ char *error = NULL;
        Config new;
        int r;

        (void) sd_notify(0, "RELOADING=1\nSTATUS=Reloading the configuration");
        r = manager_read_config(m, &new, &error);
        if (r < 0) {
                if (error)
                        log_error("%s; keeping the current configuration", error);
                else
                        log_error_errno(r, "Cannot reload the configuration (%m); keeping the current one");
        } else {
                manager_report_fixed_all(m, &new);
                manager_apply(m, &new);
                config_done(&new);
                log_notice("Configuration reloaded%s%s", m->config_path ? " from " : "",
                           m->config_path ? m->config_path : "");
                log_config(&m->config);
        }
        manager_notify_ready(m);
}

static void on_signal(evutil_socket_t sig, short what, void *userdata) {
        Manager *m = userdata;

        (void) what;
        if (sig == SIGHUP) {
                manager_reload(m);
                return;
        }
        log_notice("Received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        event_base_loopexit(m->base, NULL);
}

/* ---- start and stop ---- */

static void transient_tick(void *userdata) {
        service_transient_tick(userdata);
}

/* The accounting core with the saved state, and the service over it. */
static int manager_start_service(Manager *m) {
        Config *c = &m->config;
        MemCoreConfig cc = {
                /* Workers and root's, housekeeping, the saver, main, the bus,
                 * metrics, and room to spare. */
                .max_threads = c->workers + 7,
                .max_groups = c->max_groups,
                .max_depth = c->max_depth,
                .rss_threshold = c->rss_threshold,
                .recursive_protection = c->recursive_protection,
        };
        ServiceSettings ss = service_settings_of(c);
        int r;

        r = core_new(&cc, &m->core);
        if (r < 0)
                return log_error_errno(r, "Cannot create the accounting core: %m");
        r = core_thread_register(m->core);
        if (r < 0)
                return log_error_errno(r, "Cannot register the main thread with the core: %m");
        r = persist_restore(m->core, c->state_dir);
        if (r < 0)
                return r;
        r = housekeeping_new(m->core, c->flush_interval_msec, &m->housekeeping);
        if (r < 0)
                return log_error_errno(r, "Cannot set up housekeeping: %m");
        r = saver_new(m->core, c->state_dir, c->sync, &m->saver);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the saver: %m");
        /* The service installs the core's hooks, and the bus its sink:
         * both before any other thread uses the core. */
        r = service_new(m->core, &ss, &m->service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the service: %m");
        service_set_saver(m->service, m->saver);
        return 0;
}

/* The socket workers, then the listener hands them connections. */
static int manager_start_socket(Manager *m) {
        SockLimits sl = sock_limits(&m->config);
        int r;

        r = sock_server_new(m->service, &sl, m->config.workers, &m->server);
        if (r < 0)
                return log_error_errno(r, "Cannot set up %u workers: %m", m->config.workers);
        return sock_server_start(m->server);
}

static int manager_start_metrics(Manager *m) {
        int r;

        /* A listener systemd passed (memacctd-metrics.socket), or [metrics] listen, or none. */
        r = metrics_new(m->service, &m->config, &m->metrics);
        if (r < 0 || !m->metrics)
                return r;
        r = metrics_start(m->metrics);
        if (r < 0)
                return r;
        if (strncmp(metrics_name(m->metrics), "unix:", 5) == 0)
                log_notice("Serving metrics on %s (GET /metrics)", metrics_name(m->metrics));
        else
                log_notice("Serving metrics on http://%s/metrics", metrics_name(m->metrics));
        return 0;
}

/*
 * Everything, in the order the top of the file gives: the socket first,
 * so that a second daemon stops before it touches the state.
 */
static int manager_start(Manager *m) {
        static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
        uint64_t watchdog_usec;
        int r;

        /* Before any event base exists: bases created earlier have no
         * locks (libevent#1130), and workers are woken across threads. */
        if (evthread_use_pthreads() < 0)
                return log_error_errno(ENOSYS, "libevent has no pthreads support");
        /* A peer that closes early makes writev() raise SIGPIPE; EPIPE is enough. */
        signal(SIGPIPE, SIG_IGN);
        m->base = event_base_new();
        if (!m->base)
                return log_error_errno(ENOMEM, "Cannot create the main event loop");

        r = sock_listen_open(m->config.socket_path, m->args.socket_path, &m->listen);
        if (r >= 0)
                r = manager_start_service(m);
        if (r >= 0)
                r = manager_start_cgroup(m);
        if (r >= 0)
                r = manager_start_bus(m);
        if (r < 0)
                return r;

        if (sd_watchdog_enabled(0, &watchdog_usec) <= 0)
                watchdog_usec = 0;
        housekeeping_set_notify(m->housekeeping, manager_status, m, watchdog_usec);
        housekeeping_set_alive(m->housekeeping, saver_alive, m->saver);
        /* Transient orphans go once empty even when no client goes. */
        housekeeping_set_chore(m->housekeeping, transient_tick, m->service, 1000);
        r = housekeeping_start(m->housekeeping);
        if (r < 0)
                return log_error_errno(r, "Cannot start the housekeeping thread: %m");
        r = manager_start_socket(m);
        if (r < 0)
                return r;
        /* After every transport added its waker, before the socket is
         * served (the bus may already wait: its OKs go out from here). */
        r = saver_start(m->saver);
        if (r < 0)
                return log_error_errno(r, "Cannot start the saver thread: %m");
        r = sock_server_listen(m->server, m->base, m->listen.fd);
        if (r < 0)
                return log_error_errno(r, "Cannot listen: %m");
        m->listen.fd = -1; /* the listener owns it now */
        r = manager_start_metrics(m);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                m->ev_signals[i] = evsignal_new(m->base, signals[i], on_signal, m);
                if (!m->ev_signals[i] || event_add(m->ev_signals[i], NULL) < 0)
                        return log_error_errno(ENOMEM, "Cannot watch signals");
        }
        return 0;
}

/* Return: 0, or the error of the last save. */
static int manager_stop(Manager *m) {
        (void) sd_notify(0, "STOPPING=1\nSTATUS=Shutting down");
        /* Transient groups are the next start's, not removed as their
         * creators' connections close now. */
        if (m->service)
                service_stopping(m->service);
        /* A scrape during shutdown would only see groups emptying. */
        metrics_stop(m->metrics);
        if (m->server)
                sock_server_stop_accepting(m->server);
        if (m->listen.fd >= 0) {
                close(m->listen.fd);
                m->listen.fd = -1;
        }
        sock_listen_unlink(&m->listen);
        if (m->server)
                sock_server_stop(m->server, SHUTDOWN_GRACE_MSEC);
        /* The bus peers' sessions end with the bus thread. */
        bus_thread_stop(m->bus);
        housekeeping_stop(m->housekeeping);
        /* Every session is gone: save what persists. */
        return saver_stop(m->saver);
}

static void manager_free(Manager *m) {
        for (size_t i = 0; i < ELEMENTSOF(m->ev_signals); i++)
                if (m->ev_signals[i])
                        event_free(m->ev_signals[i]);
        m->metrics = metrics_free(m->metrics);
        m->server = sock_server_free(m->server);
        m->housekeeping = housekeeping_free(m->housekeeping);
        m->saver = saver_free(m->saver);
        /* Before the service: it stops being the event sink. */
        m->bus = bus_thread_free(m->bus);
        m->service = service_free(m->service);
        m->cgroup = cgroup_mirror_free(m->cgroup);
        /* The main thread may stay registered: core_free() allows the caller. */
        m->core = core_free(m->core);
        if (m->base)
                event_base_free(m->base);
        config_done(&m->config);
        free(m->config_path);
        sock_listen_done(&m->listen);
}

static int run(int argc, char *argv[]) {
        Manager m = { .listen = SOCK_LISTEN_INIT };
        _cleanup_free_ char *error = NULL;
        int r, k;

        log_open();
        r = options_parse(argc, argv, &m.args);
        if (r <= 0)
                return r < 0 ? OPTIONS_EXIT_USAGE : EXIT_SUCCESS;
        log_set_max_level(LOG_NOTICE + m.args.verbose);
        raise_nofile();
        if (m.args.bus_introspect)
                return bus_introspect(m.args.bus_introspect, stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        manager_choose_bus(&m);

        if (m.args.config_path) {
                m.config_explicit = true;
                m.config_path = strdup(m.args.config_path);
                r = m.config_path ? 0 : -ENOMEM;
        } else
                r = paths_default_config(&m.config_path);
        if (r >= 0)
                r = manager_read_config(&m, &m.config, &error);
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "Cannot read the configuration: %m");
                manager_free(&m);
                return EXIT_FAILURE;
        }
        log_config(&m.config);

        r = manager_start(&m);
        if (r < 0) {
                (void) manager_stop(&m);
                manager_free(&m);
                return EXIT_FAILURE;
        }
        manager_notify_ready(&m);
        log_notice("Listening on %s%s%s%s with %u workers, state in %s", m.listen.name,
                   m.listen.activated ? " (socket activation)" : "",
                   m.bus_address ? " and " BUS_NAME " on " : "",
                   m.bus_address ? bus_description(m.bus_address) : "", m.config.workers, m.config.state_dir);

        event_base_dispatch(m.base);

        k = manager_stop(&m);
        manager_free(&m);
        if (atomic_load(&m.bus_lost)) {
                log_error("Stopped: the bus connection was lost");
                return EXIT_FAILURE;
        }
        if (k < 0) {
                log_error("The final state save failed; the state on disk may be behind");
                return EXIT_FAILURE;
        }
        log_info("Stopped");
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
