/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bus-peers ADDRESS N: as an idle client crowd would, open up to N
 * connections to the bus at ADDRESS, call org.memacct1's GetInfo once on
 * each (so memacctd knows each as a peer), print "peers K" (how many
 * answered; the bus daemon refuses a uid's connections past its limit),
 * then hold them all until stdin closes.
 *
 * bus-peers --big ADDRESS BYTES COUNT: COUNT calls of GetGroup with a
 * path of BYTES bytes, one after the other on one connection; prints
 * "big K" (how many were answered, with an error as they should be).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

/* A client connection to the bus at @address, started. */
static int connect_bus(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static int peer(const char *address, sd_bus **ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        int r;

        r = connect_bus(address, &bus);
        if (r >= 0)
                r = sd_bus_call_method(bus, "org.memacct1", "/org/memacct1", "org.memacct1.Manager", "GetInfo",
                                       &error, &reply, "");
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static int big(const char *address, size_t bytes, int count) {
        char *path = malloc(bytes + 1);
        sd_bus *bus = NULL;
        int answered = 0, r;

        if (!path)
                return 1;
        path[0] = '/';
        memset(path + 1, 'a', bytes - 1);
        path[bytes] = 0;
        r = connect_bus(address, &bus);
        for (int i = 0; r >= 0 && i < count; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                int k = sd_bus_call_method(bus, "org.memacct1", "/org/memacct1", "org.memacct1.Manager",
                                           "GetGroup", &error, &reply, "s", path);

                answered += k < 0 && sd_bus_error_is_set(&error);
                sd_bus_error_free(&error);
                sd_bus_message_unref(reply);
        }
        printf("big %d%s%s\n", answered, r < 0 ? " stopped: " : "", r < 0 ? strerror(-r) : "");
        sd_bus_flush_close_unref(bus);
        free(path);
        return 0;
}

int main(int argc, char **argv) {
        sd_bus **peers;
        int n, k = 0, r = 0;
        char c;

        if (argc == 5 && strcmp(argv[1], "--big") == 0 && atoi(argv[3]) > 1 && atoi(argv[4]) > 0)
                return big(argv[2], (size_t) atoi(argv[3]), atoi(argv[4]));
        if (argc != 3 || (n = atoi(argv[2])) <= 0) {
                fprintf(stderr, "usage: bus-peers ADDRESS N\n");
                return 2;
        }
        peers = calloc((size_t) n, sizeof(*peers));
        if (!peers)
                return 1;
        for (; k < n; k++) {
                r = peer(argv[1], &peers[k]);
                if (r < 0)
                        break;
        }
        printf("peers %d%s%s\n", k, r < 0 ? " stopped: " : "", r < 0 ? strerror(-r) : "");
        fflush(stdout);
        while (read(STDIN_FILENO, &c, 1) > 0)
                ;
        for (int i = 0; i < k; i++)
                sd_bus_flush_close_unref(peers[i]);
        free(peers);
        return 0;
}
