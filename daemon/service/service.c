/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service object: its settings, its peers, and what every operation
 * shares (look-ups, persistence, change notices). The operations
 * themselves are in the service-*.c files, one per concept (groups,
 * charges and sessions, placement, mirrors, transient groups, info).
 *
 * Durability: an operation that changes what is saved (groups, limits,
 * owners, kept charges) asks service_admit() first (refused while the
 * state cannot be saved) and calls service_committed() once the change
 * is made; the transport holds its OK until the saver has it on disk
 * (saver.h).
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "service/service-internal.h"

static void settings_store(Service *svc, const ServiceSettings *s) {
        atomic_store_explicit(&svc->settings.max_frame, s->max_frame, memory_order_relaxed);
        atomic_store_explicit(&svc->settings.charge_batch, s->charge_batch, memory_order_relaxed);
        atomic_store_explicit(&svc->settings.read_access, (int) s->read_access, memory_order_relaxed);
        atomic_store_explicit(&svc->settings.confined_read, (int) s->confined_read, memory_order_relaxed);
        registry_set_sessions_per_uid(svc->registry, s->max_sessions_per_uid);
        registry_set_bounds(svc->registry, &s->bounds);
        events_set_read_access(svc->events, s->read_access, s->confined_read);
        service_reclaim_set_timeout(svc, s->reclaim_timeout_usec);
}

int service_new(MemCore *core, const ServiceSettings *settings, Service **ret) {
        Service *svc = calloc(1, sizeof(*svc));
        int r;

        if (!svc)
                return -ENOMEM;
        svc->core = core;
        r = events_new(core, &svc->events);
        pthread_mutex_init(&svc->transient_lock, NULL);
        pthread_mutex_init(&svc->reclaim_lock, NULL);
        service_reclaim_set_timeout(svc, 0);
        if (r >= 0)
                r = registry_new(core, svc->events, &svc->registry);
        if (r >= 0)
                registry_set_peer_gone(svc->registry, service_peer_leaving, service_peer_gone, svc);
        if (r >= 0)
                r = service_groups_recount(svc);
        if (r >= 0)
                r = placement_new(NULL, &svc->placement);
        svc->started_usec = service_now_usec();
        if (r >= 0)
                r = service_transient_restore(svc);
        if (r < 0) {
                service_free(svc);
                return r;
        }
        settings_store(svc, settings);
        svc->started_usec = service_now_usec();
        /* Root of its own tree whatever uid it runs as; it never opens a
         * session or subscribes. */
        svc->daemon_peer = (Peer) {
                .registry = svc->registry,
                .creds = { .pid = getpid(), .uid = 0, .gid = 0 },
                .internal = true,
        };
        *ret = svc;
        return 0;
}

Service *service_free(Service *svc) {
        if (!svc)
                return NULL;
        svc->registry = registry_free(svc->registry);
        svc->events = events_free(svc->events);
        svc->placement = placement_free(svc->placement);
        service_transient_done(svc);
        free(svc);
        return NULL;
}

void service_set_settings(Service *svc, const ServiceSettings *settings) {
        settings_store(svc, settings);
}

ServiceSettings service_settings(Service *svc) {
        return (ServiceSettings) {
                .max_frame = atomic_load_explicit(&svc->settings.max_frame, memory_order_relaxed),
                .charge_batch = atomic_load_explicit(&svc->settings.charge_batch, memory_order_relaxed),
                .reclaim_timeout_usec = atomic_load_explicit(&svc->reclaim_timeout_usec, memory_order_relaxed),
                .max_sessions_per_uid = registry_sessions_per_uid(svc->registry),
                .read_access = service_read_access(svc),
                .confined_read = service_confined_read(svc),
                .bounds = registry_bounds(svc->registry),
        };
}

uint32_t service_max_frame(Service *svc) {
        return atomic_load_explicit(&svc->settings.max_frame, memory_order_relaxed);
}

ReadAccess service_read_access(Service *svc) {
        return (ReadAccess) atomic_load_explicit(&svc->settings.read_access, memory_order_relaxed);
}

void service_audit(const Peer *p, const char *message_id, const char *group, const char *fmt, ...) {
        char what[512], f_uid[32], f_pid[32], f_comm[32], f_group[16 + MEM_PATH_MAX];
        const char *transport = p->internal ? "daemon" : p->creds.transport == SERVICE_TRANSPORT_BUS ? "bus" : "socket";
        char f_transport[32];
        const char *fields[7];
        size_t n = 0;
        va_list ap;

        /* Formatting costs more than the check: at log-level = warning, nothing. */
        if (log_get_max_level() < LOG_NOTICE)
                return;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        snprintf(f_transport, sizeof(f_transport), "MEMACCT_TRANSPORT=%s", transport);
        fields[n++] = f_transport;
        if (group) {
                snprintf(f_group, sizeof(f_group), "MEMACCT_GROUP=%s", group);
                fields[n++] = f_group;
        }
        if (p->internal) {
                fields[n] = NULL;
                log_struct(LOG_NOTICE, message_id, fields, "%s, by memacctd itself", what);
                return;
        }
        snprintf(f_uid, sizeof(f_uid), "MEMACCT_UID=%u", (unsigned) p->creds.uid);
        snprintf(f_pid, sizeof(f_pid), "MEMACCT_PID=%d", (int) p->creds.pid);
        snprintf(f_comm, sizeof(f_comm), "MEMACCT_COMM=%s", p->comm[0] ? p->comm : "?");
        fields[n++] = f_uid;
        fields[n++] = f_pid;
        fields[n++] = f_comm;
        if (p->who.confined)
                fields[n++] = "MEMACCT_CONFINED=1";
        fields[n] = NULL;
        log_struct(LOG_NOTICE, message_id, fields, "%s, by uid %u pid %d (%s)%s over the %s", what,
                   (unsigned) p->creds.uid, (int) p->creds.pid, p->comm[0] ? p->comm : "?",
                   p->who.confined ? " confined" : "", transport);
}

ConfinedRead service_confined_read(Service *svc) {
        return (ConfinedRead) atomic_load_explicit(&svc->settings.confined_read, memory_order_relaxed);
}

bool service_may_read(Service *svc, const Peer *p, MemGroup *g) {
        return authz_may_read(service_read_access(svc), service_confined_read(svc), &p->who, g);
}

bool service_reads_open(Service *svc) {
        if (service_read_access(svc) != READ_ACCESS_ALL)
                return false;
        return service_confined_read(svc) == CONFINED_READ_ALL || placement_confining(svc->placement) == 0;
}

void service_set_saver(Service *svc, Saver *d) {
        svc->saver = d;
        /* The placement rules live beside the state (placement.h); a
         * file that cannot be read leaves the table empty, logged, and
         * the daemon serves on: attach falls back to the mirror. */
        if (d)
                (void) placement_load(svc->placement, saver_state_dir(d));
}

int service_add_durable_waker(Service *svc, void (*fn)(void *userdata), void *userdata) {
        return svc->saver ? saver_add_waker(svc->saver, fn, userdata) : 0;
}

uint64_t service_peer_take_wait(Peer *p) {
        uint64_t seq = p->saver_seq;

        p->saver_seq = 0;
        return seq;
}

int service_durable_check(Service *svc, uint64_t seq, Refusal *rf) {
        if (!svc->saver || seq == 0)
                return 1;
        return saver_check(svc->saver, seq, rf);
}

void service_set_cgroup(Service *svc, CgroupMirror *cgroup) {
        svc->cgroup = cgroup;
}

Events *service_events(Service *svc) {
        return svc->events;
}

int service_thread_register(Service *svc) {
        return core_thread_register(svc->core);
}

void service_thread_unregister(Service *svc) {
        core_thread_unregister(svc->core);
}

unsigned service_session_count(Service *svc) {
        return registry_session_count(svc->registry);
}

unsigned service_group_count(Service *svc) {
        return core_group_count(svc->core);
}

int service_admit(Service *svc, Refusal *rf) {
        return svc->saver ? saver_admit(svc->saver, rf) : 0;
}

void service_committed(Service *svc, Peer *p, const char *path) {
        uint64_t seq;

        if (!svc->saver)
                return;
        seq = saver_committed(svc->saver, path);
        /* The daemon's own peer is shared by threads, and nobody waits
         * for its changes (the import at start). */
        if (!p->internal)
                p->saver_seq = MAX(p->saver_seq, seq);
}

void service_changed(Service *svc) {
        if (svc->saver)
                saver_changed(svc->saver);
}

int service_peer_new(Service *svc, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                     bool open_session, Peer **ret, Refusal *rf) {
        char scope[MEM_PATH_MAX + 1];
        PeerCreds c = *creds;
        bool confined;
        Peer *p;
        int r;

        service_identify(svc, &c, scope, sizeof(scope), &confined);
        r = registry_peer_new(svc->registry, &c, delivery, userdata, &p);
        if (r < 0)
                return refusal_set(rf, r, "out of memory");
        if (confined)
                service_confine(svc, p, scope);
        if (open_session) {
                r = peer_open_session(p);
                if (r < 0) {
                        registry_peer_free(p);
                        if (r == -EUSERS)
                                return refusal_set(rf, r, "too many sessions for uid %u", (unsigned) creds->uid);
                        return refusal_set(rf, r, "cannot open a session: %s", refusal_errno_text(r));
                }
        }
        *ret = p;
        return 0;
}

int service_connection_open(Service *svc, const PeerCreds *creds, UidUsage **ret, Refusal *rf) {
        RegistryBounds b = registry_bounds(svc->registry);
        char scope[MEM_PATH_MAX + 1];
        PeerCreds c = *creds;
        bool confined;
        UidUsage *u;
        int r;

        service_identify(svc, &c, scope, sizeof(scope), &confined);
        u = registry_usage_get(svc->registry, c.account);
        if (!u)
                return refusal_set(rf, -ENOMEM, "out of memory");
        r = registry_usage_acquire(svc->registry, u, UID_CONNECTIONS, false);
        if (r < 0) {
                registry_usage_put(svc->registry, u);
                if (r == -EUSERS)
                        return refusal_set(rf, -EUSERS, "too many connections for uid %u ([limits] "
                                           "connections-per-uid = %u)", (unsigned) creds->uid,
                                           b.per_uid[UID_CONNECTIONS]);
                return refusal_set(rf, -EUSERS, "too many connections ([limits] connections = %u)",
                                   b.total[UID_CONNECTIONS]);
        }
        *ret = u;
        return 0;
}

UidUsage *service_connection_close(Service *svc, UidUsage *u) {
        if (!u)
                return NULL;
        registry_usage_release(svc->registry, u, UID_CONNECTIONS, 1);
        return registry_usage_put(svc->registry, u);
}

void service_output_add(Service *svc, UidUsage *u, int64_t delta) {
        registry_output_add(svc->registry, u, delta);
}

bool service_output_over(Service *svc, const UidUsage *u) {
        return registry_output_over(svc->registry, u);
}

Peer *service_peer_free(Peer *p) {
        return registry_peer_free(p);
}

Peer *service_daemon_peer(Service *svc) {
        return &svc->daemon_peer;
}

int service_lookup(Service *svc, const char *path, MemGroup **ret, Refusal *rf) {
        int r;

        if (!path || !*path)
                return refusal_set(rf, -EINVAL, "a group path is required");
        r = mem_path_check(path, svc->core->config.max_depth, NULL);
        if (r >= 0)
                r = group_get(svc->core, path, ret);
        return r < 0 ? refusal_path(rf, r, path) : 0;
}

int service_lookup_for(Service *svc, Peer *p, const char *path, bool (*may)(const AuthzWho *who, MemGroup *g),
                       MemGroup **ret, Refusal *rf) {
        MemGroup *g;
        int r;

        r = service_lookup(svc, path, &g, rf);
        if (r < 0)
                return r;
        if (!may(&p->who, g)) {
                r = refusal_denied(rf, g->path);
                group_unref(g);
                return r;
        }
        *ret = g;
        return 0;
}
