/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's configuration, apart from the components it configures:
 * how memacctd.conf, the command line and the defaults make the
 * configuration in force; what each component is given of it; and, at a
 * reload, which settings are taken and which wait for a restart (the top
 * of daemon.c says why). Nothing here starts anything, so that the
 * whole of a reload's decision is testable without a running daemon.
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon-internal.h"
#include "daemon.h"
#include "macro.h"

/*
 * Descriptors the daemon keeps for itself and for root beyond the
 * [limits] connections of the other uids: its own files, the bus, the
 * workers' eventfds, the state file, and root's clients.
 */
#define NOFILE_RESERVE 256

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

/* The file, or the defaults when there is none and none was asked for. */
static int read_file(const char *path, bool explicit, Config *c, char **ret_error) {
        int r;

        *c = CONFIG_DEFAULT;
        if (!path)
                return 0;
        r = config_load(path, c, ret_error);
        if (r == -ENOENT && !explicit) {
                log_debug("No configuration file %s, using the defaults", path);
                free(*ret_error);
                *ret_error = NULL;
                *c = CONFIG_DEFAULT;
                return 0;
        }
        return r;
}

/* The command line over @c. */
static int apply_args(const Args *a, Config *c, char **ret_error) {
        ConfigListen l;
        int r = 0;

        if (a->socket_path)
                r = replace_string(&c->socket_path, a->socket_path);
        if (r >= 0 && a->state_dir)
                r = replace_string(&c->state_dir, a->state_dir);
        if (a->workers > 0)
                c->workers = a->workers;
        if (r >= 0 && a->metrics) {
                free(c->metrics_listen);
                c->metrics_listen = NULL;
                if (*a->metrics)
                        r = replace_string(&c->metrics_listen, a->metrics);
        }
        if (r < 0 || !c->metrics_listen || c->metrics_allow_remote)
                return r;
        /* The file's own listen was checked by config_parse(); this is --metrics. */
        if (config_listen_parse(c->metrics_listen, &l) >= 0 && !l.local) {
                if (asprintf(ret_error, "--metrics %s: not a loopback address or Unix socket; the "
                             "listener has no authentication (set [metrics] allow-remote = yes "
                             "to serve it anyway)", c->metrics_listen) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        return 0;
}

/* What depends on the user and the machine, where neither set it. */
static int fill_defaults(Config *c) {
        int r = 0;

        if (!c->socket_path)
                r = paths_default_socket(&c->socket_path);
        if (r >= 0 && !c->state_dir)
                r = paths_default_state_dir(&c->state_dir);
        if (r == -ENOENT)
                return log_error_errno(r, "No home directory for the state: use --state-dir");
        if (c->workers == 0)
                c->workers = MIN(cpu_count(), (unsigned) OPTIONS_WORKERS_MAX);
        return r;
}

int daemon_config_read(const Args *args, const char *path, bool explicit, Config *ret, char **ret_error) {
        Config c;
        int r;

        *ret_error = NULL;
        r = read_file(path, explicit, &c, ret_error);
        if (r < 0)
                return r;
        r = apply_args(args, &c, ret_error);
        if (r >= 0)
                r = fill_defaults(&c);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int daemon_check_config(const Args *args) {
        const char *file = args->check_file ? args->check_file : args->config_path;
        _cleanup_free_ char *path = NULL, *error = NULL;
        Config c;
        int r;

        path = file ? strdup(file) : NULL;
        r = file ? (path ? 0 : -ENOMEM) : paths_default_config(&path);
        if (r >= 0)
                r = daemon_config_read(args, path, file != NULL, &c, &error);
        if (r < 0) {
                /* As nginx -t and sshd -t: the words alone, FILE:LINE: first. */
                if (error)
                        fprintf(stderr, "%s\n", error);
                else
                        fprintf(stderr, "%s: %s\n", path ? path : "memacctd.conf", strerror(-r));
                return r;
        }
        if (path && access(path, F_OK) == 0)
                printf("%s: the configuration is good\n", path);
        else
                printf("%s: no such file; the defaults are good\n", path ? path : "memacctd.conf");
        config_done(&c);
        return 0;
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

ServiceSettings daemon_service_settings(const Config *c) {
        return (ServiceSettings) {
                .max_frame = c->frame_size,
                .charge_batch = c->charge_batch,
                .reclaim_timeout_usec = (uint64_t) c->reclaim_timeout_msec * 1000,
                .max_sessions_per_uid = c->sessions_per_uid,
                .read_access = c->read_access,
                .confined_read = c->confined_read,
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

SockLimits daemon_sock_limits(const Config *c) {
        return (SockLimits) {
                .max_frame = c->frame_size,
                .max_outstanding = c->outstanding_requests,
                .max_output = c->output_buffer,
                .idle_timeout_sec = c->idle_timeout_sec,
                .frame_timeout_sec = c->frame_timeout_sec,
        };
}

void daemon_config_log(const Config *c) {
        log_debug("Configuration: socket=%s state-dir=%s workers=%u frame-size=%u groups=%u depth=%u "
                  "sessions-per-uid=%u outstanding-requests=%u output-buffer=%" PRIu64 " idle-timeout=%u "
                  "frame-timeout=%u flush-interval=%u charge-batch=%" PRIu64 " rss-threshold=%" PRIu64
                  " recursive-protection=%s read=%s confined-read=%s cgroup-prefix=%s import-at-start=%s"
                  " sample-interval=%u auto-create=%s metrics=%s allow-remote=%s",
                  c->socket_path, c->state_dir, c->workers, c->frame_size, c->max_groups, c->max_depth,
                  c->sessions_per_uid, c->outstanding_requests, c->output_buffer, c->idle_timeout_sec,
                  c->frame_timeout_sec, c->flush_interval_msec, c->charge_batch, c->rss_threshold,
                  c->recursive_protection ? "yes" : "no", read_access_to_string(c->read_access),
                  confined_read_to_string(c->confined_read),
                  config_cgroup_prefix(c), c->cgroup_import_at_start ? "yes" : "no",
                  c->cgroup_sample_interval_sec, c->cgroup_auto_create ? "yes" : "no",
                  c->metrics_listen ? c->metrics_listen : "(off)", c->metrics_allow_remote ? "yes" : "no");
        log_debug("Configuration: connections-per-uid=%u connections=%u subscriptions-per-uid=%u "
                  "subscriptions=%u groups-per-uid=%u output-buffer-per-uid=%" PRIu64
                  " output-buffer-total=%" PRIu64, c->connections_per_uid, c->connections,
                  c->subscriptions_per_uid, c->subscriptions, c->groups_per_uid, c->output_buffer_per_uid,
                  c->output_buffer_total);
        for (unsigned i = 0; i < c->n_regions; i++)
                log_debug("Configuration: region %s capacity=%" PRIu64 "%s", c->regions[i].name,
                          c->regions[i].capacity, c->regions[i].capacity == UINT64_MAX ? " (max)" : "");
}

/* ---- at a reload ---- */

/* Return: 1, a setting counted. */
static int report_fixed(const char *key, const char *old, const char *new) {
        log_warning("%s changed from %s to %s: ignored until restart", key, old, new);
        return 1;
}

static bool streq_ptr(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}

int daemon_config_report_fixed(const Config *c, const Config *new, bool socket_passed) {
        static const struct {
                const char *key;
                size_t offset;
        } numbers[] = {
                { "[daemon] workers", offsetof(Config, workers) },
                { "[limits] groups", offsetof(Config, max_groups) },
                { "[limits] depth", offsetof(Config, max_depth) },
                /* The metrics listener copies its bounds when it is made. */
                { "[metrics] connections", offsetof(Config, metrics_connections) },
                { "[metrics] head-timeout", offsetof(Config, metrics_head_timeout_sec) },
                { "[metrics] write-timeout", offsetof(Config, metrics_write_timeout_sec) },
                { "[metrics] header-size", offsetof(Config, metrics_header_size) },
                { "[metrics] body-size", offsetof(Config, metrics_body_size) },
                { "[metrics] max-groups", offsetof(Config, metrics_max_groups) },
        };
        char a[32], b[32];
        int n = 0;

        /* The table reads each as an unsigned. */
        _Static_assert(sizeof(((Config *) NULL)->metrics_header_size) == sizeof(unsigned), "");
        _Static_assert(sizeof(((Config *) NULL)->metrics_body_size) == sizeof(unsigned), "");
        if (!socket_passed && strcmp(new->socket_path, c->socket_path) != 0)
                n += report_fixed("[daemon] socket", c->socket_path, new->socket_path);
        if (strcmp(new->state_dir, c->state_dir) != 0)
                n += report_fixed("[daemon] state-dir", c->state_dir, new->state_dir);
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                unsigned old_v = *(const unsigned *) ((const char *) c + numbers[i].offset);
                unsigned new_v = *(const unsigned *) ((const char *) new + numbers[i].offset);

                if (old_v == new_v)
                        continue;
                snprintf(a, sizeof(a), "%u", old_v);
                snprintf(b, sizeof(b), "%u", new_v);
                n += report_fixed(numbers[i].key, a, b);
        }
        if (!streq_ptr(new->metrics_listen, c->metrics_listen))
                n += report_fixed("[metrics] listen", c->metrics_listen ? c->metrics_listen : "(off)",
                                  new->metrics_listen ? new->metrics_listen : "(off)");
        if (new->metrics_output_buffer != c->metrics_output_buffer) {
                snprintf(a, sizeof(a), "%" PRIu64, c->metrics_output_buffer);
                snprintf(b, sizeof(b), "%" PRIu64, new->metrics_output_buffer);
                n += report_fixed("[metrics] output-buffer", a, b);
        }
        if (new->charge_stock != c->charge_stock)
                n += report_fixed("[accounting] charge-stock", c->charge_stock ? "yes" : "no",
                                  new->charge_stock ? "yes" : "no");
        if (new->metrics_allow_remote != c->metrics_allow_remote)
                n += report_fixed("[metrics] allow-remote", c->metrics_allow_remote ? "yes" : "no",
                                  new->metrics_allow_remote ? "yes" : "no");
        if (new->metrics_series_basic != c->metrics_series_basic)
                n += report_fixed("[metrics] series", c->metrics_series_basic ? "basic" : "full",
                                  new->metrics_series_basic ? "basic" : "full");
        if (new->cgroup_import_at_start != c->cgroup_import_at_start) {
                log_notice("[cgroup] import-at-start takes effect at the next start");
                n++;
        }
        return n;
}

void daemon_config_take_changeable(Config *c, Config *new) {
        c->sync = new->sync;
        c->log_level = new->log_level;
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
        c->reclaim_timeout_msec = new->reclaim_timeout_msec;
        c->rss_threshold = new->rss_threshold;
        c->recursive_protection = new->recursive_protection;
        c->read_access = new->read_access;
        c->confined_read = new->confined_read;
        c->cgroup_import_at_start = new->cgroup_import_at_start;
        c->cgroup_sample_interval_sec = new->cgroup_sample_interval_sec;
        c->cgroup_auto_create = new->cgroup_auto_create;
        c->cgroup_prune = new->cgroup_prune;
        /* Declared ones are added (daemon_regions_apply()), none removed. */
        memcpy(c->regions, new->regions, sizeof(c->regions));
        c->n_regions = new->n_regions;
        free(c->cgroup_prefix);
        c->cgroup_prefix = TAKE_PTR(new->cgroup_prefix);
}
