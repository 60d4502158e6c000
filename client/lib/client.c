/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The handle: made, connected, configured and closed.
 *
 * One mutex per handle serialises everything that touches the socket (or,
 * on a bus handle, the sd-bus connection); the stock's fast path
 * (client-stock.c) never takes it. The handle is filled in before
 * memacct_connect() or memacct_connect_bus() returns it, and its transport
 * (m->bus: the D-Bus table, or NULL for the socket) never changes after,
 * so each public call tests it once at its entry, without the lock, and
 * hands over to the bus when it is set.
 *
 * memacct_connect() with no socket path reaches the system daemon
 * ($MEMACCT_SOCKET aside), whoever calls; memacct_connect_user() the
 * caller's own, under $XDG_RUNTIME_DIR.
 *
 * memacct_connect() with no socket path, in an environment naming a bus
 * ($MEMACCT_BUS, set by memacctctl run --bus) and no socket, is
 * memacct_connect_bus() of that bus.
 *
 * A new handle whose environment names a group ($MEMACCT_GROUP, set by
 * memacctctl run) attaches its session there before it is returned, so a
 * client that never attaches charges where the one who started it said;
 * an explicit memacct_attach() later moves it as before. A group that is
 * not there fails the connect: charging nowhere or elsewhere instead would
 * go unnoticed.
 *
 * Unsolicited frames from the socket land here (on_frame()): events go to
 * the event queue, a Moved to the session's group, which a reconnection
 * attaches to.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client-call.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "client-stock-socket.h"
#include "macro.h"

_public_ int memacct_default_socket(char **ret) {
        const char *e;
        char *s;

        if (!ret)
                return -EINVAL;
        /* The system daemon for everybody, as systemctl's --system is: its
         * socket is open to all and it decides each request by the uid
         * (SO_PEERCRED). A user's own daemon is asked for by name
         * (memacct_connect_user(), memacctctl --user) or $MEMACCT_SOCKET. */
        e = secure_getenv("MEMACCT_SOCKET");
        s = strdup(e && *e ? e : MEMACCT_SYSTEM_SOCKET);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

_public_ int memacct_user_socket(char **ret) {
        const char *e;
        char *s;

        if (!ret)
                return -EINVAL;
        /* Where a memacctd a user started listens (memacctd(8)). A
         * relative or missing $XDG_RUNTIME_DIR names no place we may trust
         * to be the user's own. */
        e = secure_getenv("XDG_RUNTIME_DIR");
        if (!e || e[0] != '/')
                return -ENXIO;
        if (asprintf(&s, "%s/memacctd/memacctd.sock", e) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* An unsolicited frame with a result. Lock held: the connection reads
 * only for a caller that holds it. */
static void on_frame(void *userdata, Response *resp) {
        memacct *m = userdata;

        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_EVENT) {
                const Memacct__V1__Event *ev = resp->event;

                event_queue_push_region(&m->events, ev->path ? ev->path : "", ev->name ? ev->name : "",
                                        ev->count, ev->pid, ev->uid, ev->region);
        }
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_RECLAIM)
                client_reclaim_queue(m, resp->reclaim);
        /* Someone moved our session: a replay after a reconnect must
         * re-attach there, not where we last attached. */
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_MOVED && resp->moved->path) {
                char *copy = strdup(resp->moved->path);

                if (copy) {
                        free(m->attached);
                        m->attached = copy;
                }
        }
        memacct__v1__response__free_unpacked(resp, NULL);
}

memacct *client_new(void) {
        memacct *m;

        /* The stock's fields are laid out by cache line: keep them so. */
        m = cacheline_alloc(sizeof(*m));
        if (!m)
                return NULL;
        memset(m, 0, sizeof(*m));
        pthread_mutex_init(&m->lock, NULL);
        conn_init(&m->conn, on_frame, m);
        m->timeout_msec = CLIENT_DEFAULT_TIMEOUT_MSEC;
        m->reconnect_attempts = CLIENT_DEFAULT_RECONNECT;
        stock_init(&m->stock, &client_stock_ops, m, 0);
        return m;
}

int client_attached_group_set(memacct *m, const char *group) {
        char *copy = NULL;

        if (group) {
                copy = strdup(group);
                if (!copy)
                        return client_error(m, -ENOMEM, NULL, NULL);
        }
        free(m->attached_group);
        m->attached_group = copy;
        return 0;
}

int client_attach_from_env(memacct *m) {
        const char *group = secure_getenv("MEMACCT_GROUP");
        char msg[512];
        int r;

        if (!group || !*group)
                return 0;
        r = memacct_attach(m, group);
        if (r >= 0)
                return 0;
        snprintf(msg, sizeof(msg), "MEMACCT_GROUP=%s: %s", group,
                 memacct_last_error(m) ? memacct_last_error(m) : strerror(-r));
        return client_error(m, r, msg, NULL);
}

/* The bus $MEMACCT_BUS names when memacct_connect() is given no socket and
 * $MEMACCT_SOCKET names none (memacctctl run --bus sets only the first),
 * or NULL: the socket then. */
static const char *env_bus(void) {
        const char *bus = secure_getenv("MEMACCT_BUS"), *sock = secure_getenv("MEMACCT_SOCKET");

        return bus && *bus && !(sock && *sock) ? bus : NULL;
}

/* Connect to the socket at @path, or the default one for NULL; attach
 * to $MEMACCT_GROUP when @env_group. */
static int connect_socket(const char *path, bool env_group, memacct **ret) {
        memacct *m;
        int r;

        m = client_new();
        if (!m)
                return -ENOMEM;
        if (path)
                m->socket_path = strdup(path);
        else if (memacct_default_socket(&m->socket_path) < 0)
                m->socket_path = NULL;
        if (!m->socket_path) {
                memacct_close(m);
                return -ENOMEM;
        }

        pthread_mutex_lock(&m->lock);
        r = conn_open(&m->conn, m->socket_path);
        if (r < 0)
                r = client_error(m, r, NULL, NULL);
        else
                r = client_hello_locked(m);
        pthread_mutex_unlock(&m->lock);
        if (r >= 0 && env_group)
                r = client_attach_from_env(m);
        if (r < 0) {
                memacct_close(m);
                /* The handle is gone; its error stays readable through
                 * memacct_last_error(NULL). */
                client_error_connect_failed();
                return r;
        }
        *ret = m;
        return 0;
}

_public_ int memacct_connect(const char *path, memacct **ret) {
        const char *bus;

        if (!ret)
                return -EINVAL;
        /* A command started by memacctctl run --bus reaches the daemon the
         * way its starter did, whatever it passes here; an explicit
         * socket is the caller's own choice and wins. */
        if (!path && (bus = env_bus()))
                return memacct_connect_bus(bus, ret);
        return connect_socket(path, true, ret);
}

_public_ int memacct_connect_unattached(const char *path, memacct **ret) {
        if (!path || !ret)
                return -EINVAL;
        return connect_socket(path, false, ret);
}

_public_ int memacct_connect_user(memacct **ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = memacct_user_socket(&path);
        if (r == -ENXIO) {
                client_error(NULL, r, "XDG_RUNTIME_DIR is not set (or not absolute): "
                             "no user memacctd to reach", NULL);
                client_error_connect_failed();
        }
        if (r < 0)
                return r;
        return connect_socket(path, true, ret);
}

_public_ memacct *memacct_close(memacct *m) {
        if (!m)
                return NULL;
        if (m->bus)
                m->bus->close(m);
        conn_done(&m->conn);
        if (m->page)
                munmap((void *) m->page, STOCK_PAGE_SIZE);
        for (size_t i = 0; i < m->n_old_pages; i++)
                munmap(m->old_pages[i], STOCK_PAGE_SIZE);
        free(m->old_pages);
        event_queue_done(&m->events);
        for (size_t i = 0; i < m->n_subscriptions; i++) {
                free(m->subscriptions[i].path);
                free(m->subscriptions[i].region);
        }
        free(m->subscriptions);
        client_region_held_done(m);
        client_reclaim_done(m);
        for (unsigned i = 0; i < STOCK_REGIONS; i++)
                free(m->stock_regions[i]);
        free(m->attached);
        free(m->attached_group);
        free(m->server);
        free(m->socket_path);
        pthread_mutex_destroy(&m->lock);
        client_error_forget(m);
        free(m);
        return NULL;
}

_public_ const char *memacct_server(memacct *m) {
        return m && m->server ? m->server : "";
}

_public_ pid_t memacct_peer_pid(memacct *m) {
        return m ? m->pid : 0;
}

_public_ int memacct_set_timeout(memacct *m, unsigned timeout_msec) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->timeout_msec = MIN(timeout_msec, (unsigned) INT32_MAX);
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ int memacct_set_reconnect(memacct *m, unsigned attempts) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->reconnect_attempts = attempts;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ int memacct_set_reconnect_callback(memacct *m, memacct_reconnect_fn fn, void *userdata) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->reconnect_fn = fn;
        m->reconnect_userdata = userdata;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ unsigned memacct_reconnect_count(memacct *m) {
        unsigned n;

        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        n = m->reconnects;
        pthread_mutex_unlock(&m->lock);
        return n;
}
