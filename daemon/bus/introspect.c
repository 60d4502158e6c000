/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --bus-introspect: the introspection XML, without a bus
 *
 * sd-bus writes introspection XML only in answer to an Introspect call,
 * so this asks it one: the vtables are registered on one end of a
 * socketpair (a peer-to-peer server connection, no bus daemon), a client
 * connection on the other end calls Introspect, and one thread turns both
 * until the reply is in. What it prints is therefore exactly what busctl
 * introspect shows of a running daemon. No service is created: the group
 * objects answer for any well-formed path.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include "bus/introspect.h"
#include "bus/manager.h"
#include "bus/names.h"
#include "macro.h"
#include "base/log.h"

#define INTROSPECT_TIMEOUT_MSEC 10000

typedef struct Reply {
        bool done;
        int r;
        char *text; /* the XML, or the error's message */
} Reply;

static int on_reply(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Reply *reply = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(msg);
        const char *xml;

        (void) error;
        reply->done = true;
        if (e) {
                reply->r = -sd_bus_error_get_errno(e);
                reply->text = strdup(e->message ? e->message : e->name);
                return 0;
        }
        reply->r = sd_bus_message_read(msg, "s", &xml);
        if (reply->r >= 0 && !(reply->text = strdup(xml)))
                reply->r = -ENOMEM;
        return 0;
}

static int bus_pair(sd_bus **ret_server, sd_bus **ret_client) {
        _cleanup_(sd_bus_unrefp) sd_bus *server = NULL, *client = NULL;
        sd_id128_t id;
        int fds[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
                return -errno;
        r = sd_bus_new(&server);
        if (r >= 0)
                r = sd_bus_new(&client);
        if (r < 0) {
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        r = sd_bus_set_fd(server, fds[0], fds[0]);
        if (r < 0) {
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        r = sd_bus_set_fd(client, fds[1], fds[1]);
        if (r < 0) {
                close(fds[1]);
                return r;
        }
        r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_set_server(server, 1, id);
        if (r >= 0)
                r = sd_bus_start(server);
        if (r >= 0)
                r = sd_bus_start(client);
        if (r < 0)
                return r;
        *ret_server = TAKE_PTR(server);
        *ret_client = TAKE_PTR(client);
        return 0;
}

/* Turn both ends until the reply is in. */
static int run_pair(sd_bus *server, sd_bus *client, Reply *reply) {
        while (!reply->done) {
                struct pollfd p[2];
                int r, k;

                r = sd_bus_process(server, NULL);
                if (r < 0)
                        return r;
                k = sd_bus_process(client, NULL);
                if (k < 0)
                        return k;
                if (r > 0 || k > 0)
                        continue;
                p[0] = (struct pollfd) { .fd = sd_bus_get_fd(server),
                                         .events = (short) sd_bus_get_events(server) };
                p[1] = (struct pollfd) { .fd = sd_bus_get_fd(client),
                                         .events = (short) sd_bus_get_events(client) };
                r = poll(p, 2, INTROSPECT_TIMEOUT_MSEC);
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
        }
        return reply->r;
}

int bus_introspect(const char *object_path, FILE *out) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *server = NULL, *client = NULL;
        BusManager m = {};
        Reply reply = {};
        int r;

        if (strcmp(object_path, "list") == 0) {
                fprintf(out, "%s\n%s/_2f\n", BUS_MANAGER_PATH, BUS_GROUP_PREFIX);
                return 0;
        }
        if (!sd_bus_object_path_is_valid(object_path))
                return log_error_errno(EINVAL, "--bus-introspect: '%s' is not an object path (or 'list')",
                                       object_path);
        r = bus_pair(&server, &client);
        if (r < 0)
                return log_error_errno(r, "Cannot set up a connection to introspect: %m");
        m.bus = server;
        r = bus_manager_register(&m);
        if (r < 0)
                return log_error_errno(r, "Cannot register the bus objects: %m");
        r = sd_bus_call_method_async(client, NULL, NULL, object_path, "org.freedesktop.DBus.Introspectable",
                                     "Introspect", on_reply, &reply, NULL);
        if (r >= 0)
                r = run_pair(server, client, &reply);
        if (r < 0) {
                if (reply.text)
                        log_error("Cannot introspect %s: %s", object_path, reply.text);
                else
                        log_error_errno(r, "Cannot introspect %s: %m", object_path);
                free(reply.text);
                return r;
        }
        fputs(reply.text, out);
        free(reply.text);
        return fflush(out) == 0 ? 0 : log_error_errno(errno, "Cannot write the introspection data: %m");
}
