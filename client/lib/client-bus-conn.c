/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The D-Bus transport's connection: the lock around sd-bus, the method
 * calls on the manager, and errors.
 *
 * sd-bus objects are not thread-safe, so the handle's mutex serialises
 * every use of the connection, message and slot reference counts included
 * (they are not atomic): everything here but bus_lock() runs with it held.
 * Releasing it (bus_unlock()) wakes a thread asleep in
 * memacct_next_event() or memacct_process() (bus_sleep_locked()), since
 * the call that ends may have read that thread's signals into sd-bus's
 * queue, where its poll() cannot see them; for the same reason it makes
 * memacct_fd() readable while anything waits in a queue, for an event
 * loop that polls it.
 *
 * Errors come back as org.memacct1.Error.* names from the status table
 * (proto/status.c), mapped back to the errno the socket reports for the
 * same status; a LimitExceeded message ends with "(max of /path)" (in a
 * device region "(max of /path in region R)"), from which
 * memacct_refused_path() is taken.
 */

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

#include "client-bus-conn.h"
#include "client-deadline.h"
#include "client-error.h"
#include "macro.h"
#include "status.h"

void bus_lock(memacct *m) {
        pthread_mutex_lock(&m->lock);
}

/*
 * Does something wait to be dispatched or served: a message sd-bus read
 * into its queue (its timeout is then "now"), or a reclaim request taken
 * off it and not served yet? Lock held.
 */
static bool pending_locked(memacct *m) {
        uint64_t until = UINT64_MAX;

        return m->n_reclaim_q > 0 ||
               (m->bus_conn->bus && sd_bus_get_timeout(m->bus_conn->bus, &until) > 0 && until == 0);
}

void bus_unlock(memacct *m) {
        BusConn *c = m->bus_conn;

        /* A thread asleep in next_event polls the fd, which this thread may
         * have read its signals from: wake it to look at the queue. */
        if (c->sleepers > 0)
                (void) eventfd_write(c->wake_fd, 1);
        /* Likewise an event loop polling memacct_fd(): the bus fd no longer
         * shows what this call read, so notify_fd must. */
        if (c->poll_fd >= 0 && pending_locked(m))
                (void) eventfd_write(c->notify_fd, 1);
        pthread_mutex_unlock(&m->lock);
}

int bus_sleep_locked(memacct *m, int left_msec) {
        BusConn *c = m->bus_conn;
        struct pollfd pfd[2];
        uint64_t until = UINT64_MAX;
        int events, fd, r;

        fd = sd_bus_get_fd(c->bus);
        events = sd_bus_get_events(c->bus);
        if (fd < 0 || events < 0)
                return bus_fail(m, NULL, fd < 0 ? fd : events);
        /* sd-bus's own deadline (a reply timeout), absolute CLOCK_MONOTONIC µs. */
        if (sd_bus_get_timeout(c->bus, &until) > 0 && until < CLIENT_NO_DEADLINE / 1000) {
                int bus_left = client_deadline_left_msec(until * 1000);

                if (left_msec < 0 || bus_left < left_msec)
                        left_msec = bus_left;
        }
        pfd[0] = (struct pollfd) { .fd = fd, .events = (short) events };
        pfd[1] = (struct pollfd) { .fd = c->wake_fd, .events = POLLIN };
        /* Sleep without the lock: other threads' calls go on. */
        c->sleepers++;
        pthread_mutex_unlock(&m->lock);
        r = poll(pfd, 2, left_msec) < 0 ? -errno : 0;
        pthread_mutex_lock(&m->lock);
        c->sleepers--;
        if (r == -EINTR)
                return client_error(m, -EINTR, "interrupted", NULL);
        if (pfd[1].revents & POLLIN) {
                eventfd_t v;

                (void) eventfd_read(c->wake_fd, &v);
        }
        return 0;
}

uint64_t bus_call_timeout_usec(const memacct *m) {
        /* UINT64_MAX: sd-bus's "no timeout". */
        return m->timeout_msec > 0 ? (uint64_t) m->timeout_msec * 1000 : UINT64_MAX;
}

/*
 * The group a LimitExceeded message names: "...: limit exceeded (max of
 * /a)", or in a device region "(max of /a in region gpu0)": a group path
 * has no space, so the path ends at the first. A device region at its
 * capacity ("/a: region gpu0 is at its capacity") was refused by the
 * root's max, which the capacity is, as the socket reports it.
 */
static const char *refused_from_message(const char *msg, char *buf, size_t size) {
        static const char capacity[] = " is at its capacity";
        size_t len = msg ? strlen(msg) : 0, n;
        const char *p = NULL, *q, *end, *space;

        if (len > strlen(capacity) && strcmp(msg + len - strlen(capacity), capacity) == 0 &&
            strstr(msg, ": region ")) {
                snprintf(buf, size, "/");
                return buf;
        }
        for (q = msg ? strstr(msg, "(max of ") : NULL; q; q = strstr(q + 1, "(max of "))
                p = q;
        if (!p)
                return NULL;
        p += strlen("(max of ");
        end = strrchr(p, ')');
        space = strchr(p, ' ');
        if (space && end && space < end)
                end = space;
        if (!end || end == p)
                return NULL;
        n = MIN((size_t) (end - p), size - 1);
        memcpy(buf, p, n);
        buf[n] = 0;
        return buf;
}

int bus_fail(const memacct *m, const sd_bus_error *e, int r) {
        char refused[1024];
        const char *msg;

        if (e && sd_bus_error_is_set(e)) {
                msg = e->message && *e->message ? e->message : e->name;
                for (unsigned s = MEM_STATUS_OK + 1; s < _MEM_STATUS_MAX; s++) {
                        const char *name = status_to_dbus_error((MemStatus) s);

                        if (!name || !sd_bus_error_has_name(e, name))
                                continue;
                        return client_error(m, status_to_errno((MemStatus) s), msg,
                                            s == MEM_STATUS_LIMIT_EXCEEDED
                                                    ? refused_from_message(e->message, refused,
                                                                           sizeof(refused))
                                                    : NULL);
                }
                /* Errors of the bus or of sd-bus's own checks on the server. */
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_AUTH_FAILED,
                                           SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
                        return client_error(m, -EPERM, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER, SD_BUS_ERROR_DISCONNECTED))
                        return client_error(m, -ECONNRESET, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                        return client_error(m, -ETIMEDOUT, msg, NULL);
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        /* A group object that went away meanwhile. */
                        return client_error(m, -ENOENT, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_METHOD,
                                           SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                           SD_BUS_ERROR_UNKNOWN_PROPERTY))
                        return client_error(m, -EOPNOTSUPP, msg, NULL);
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS))
                        return client_error(m, -EINVAL, msg, NULL);
                r = -sd_bus_error_get_errno(e);
                return client_error(m, r < 0 ? r : -EIO, msg, NULL);
        }
        switch (r) {
        case -ENOTCONN: /* ours means "not attached": never pass sd-bus's on */
        case -ECONNRESET:
        case -EPIPE:
        case -ESHUTDOWN:
                return client_error(m, -ECONNRESET, "the bus connection was lost", NULL);
        case -ECHILD:
                return client_error(m, -ECHILD, "a bus handle cannot be used after fork()", NULL);
        default:
                return client_error(m, r, NULL, NULL);
        }
}

int bus_manager_call_new(memacct *m, const char *member, sd_bus_message **ret) {
        int r = sd_bus_message_new_method_call(m->bus_conn->bus, ret, BUS_NAME, BUS_PATH,
                                               BUS_MANAGER, member);

        return r < 0 ? bus_fail(m, NULL, r) : 0;
}

int bus_call_locked(memacct *m, sd_bus_message *call, sd_bus_message **ret_reply) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call(m->bus_conn->bus, call, bus_call_timeout_usec(m), &e, ret_reply);
        if (r < 0)
                r = bus_fail(m, &e, r);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

int bus_send_locked(memacct *m, sd_bus_message *call, int r, sd_bus_message **ret_reply) {
        if (r < 0)
                r = bus_fail(m, NULL, r);
        else
                r = bus_call_locked(m, call, ret_reply);
        sd_bus_message_unref(call);
        return r;
}

int bus_manager_call_locked(memacct *m, const char *member, sd_bus_message **ret_reply,
                               const char *types, ...) {
        sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = bus_manager_call_new(m, member, &call);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(call, types, ap);
        va_end(ap);
        return bus_send_locked(m, call, r, ret_reply);
}

int bus_manager_path_call(memacct *m, const char *member, const char *path) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, member, NULL, "s", path);
        bus_unlock(m);
        return r;
}
