/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test-bus-client's tests share: the two connections to one daemon
 * (the private bus of $MEMACCT_BUS_ADDRESS and the socket of
 * $MEMACCT_SOCKET), a Manager call with its outcome, and reads of a group's
 * properties, at once or once they settle. Every helper asserts (cmocka)
 * rather than returns an error: it runs inside a test.
 */

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-client-util.h"

const char *bus_address;
const char *socket_path;

uint64_t now_msec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

void sleep_msec(unsigned msec) {
        struct timespec ts = { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000 };

        nanosleep(&ts, NULL);
}

/* ---- connections ---- */

sd_bus *bus_open(void) {
        sd_bus *bus = NULL;

        assert_true(sd_bus_new(&bus) >= 0);
        assert_true(sd_bus_set_address(bus, bus_address) >= 0);
        assert_true(sd_bus_set_bus_client(bus, 1) >= 0);
        assert_true(sd_bus_start(bus) >= 0);
        return bus;
}

memacct *sock_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(socket_path, &m), 0);
        return m;
}

/* ---- calls, and what came of them ---- */

int bcall(sd_bus *bus, Outcome *o, sd_bus_message **ret_reply, const char *member, const char *types, ...) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_methodv(bus, DEST, MANAGER_PATH, MANAGER_IFACE, member, &error, &reply, types, ap);
        va_end(ap);
        *o = (Outcome) { .r = r };
        if (r < 0) {
                snprintf(o->name, sizeof(o->name), "%s", error.name ? error.name : "");
                snprintf(o->message, sizeof(o->message), "%s", error.message ? error.message : "");
        }
        sd_bus_error_free(&error);
        if (ret_reply)
                *ret_reply = reply;
        else
                sd_bus_message_unref(reply);
        return r;
}

void assert_ok(const char *what, const Outcome *o) {
        if (o->r < 0) {
                fprintf(stderr, "%s: %s: %s\n", what, o->name, o->message);
                fail();
        }
}

/* ---- reads ---- */

char *object_of(const char *path) {
        char *object = NULL;

        assert_true(sd_bus_path_encode("/org/memacct1/group", path, &object) >= 0);
        return object;
}

uint64_t prop_u64(sd_bus *bus, const char *path, const char *name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *object = object_of(path);
        uint64_t v = 0;
        int r;

        r = sd_bus_get_property_trivial(bus, DEST, object, GROUP_IFACE, name, &error, 't', &v);
        if (r < 0)
                fprintf(stderr, "get %s.%s: %s\n", path, name, error.message);
        assert_true(r >= 0);
        sd_bus_error_free(&error);
        free(object);
        return v;
}

uint64_t sock_current(const char *path) {
        memacct *m = sock_open();
        memacct_group_info *g = NULL;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        v = g->current;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

bool bus_wait_for(sd_bus *bus, const bool *done) {
        uint64_t deadline = now_msec() + WAIT_MSEC;

        while (!*done && now_msec() < deadline) {
                int r = sd_bus_process(bus, NULL);

                assert_true(r >= 0);
                if (r == 0)
                        (void) sd_bus_wait(bus, 100 * 1000);
        }
        return *done;
}

bool current_becomes(sd_bus *bus, const char *path, uint64_t want) {
        uint64_t deadline = now_msec() + WAIT_MSEC;

        while (now_msec() < deadline) {
                if (prop_u64(bus, path, "MemoryCurrent") == want)
                        return true;
                sleep_msec(20);
        }
        fprintf(stderr, "current of %s is %" PRIu64 ", want %" PRIu64 "\n", path,
                prop_u64(bus, path, "MemoryCurrent"), want);
        return false;
}

void create_bus(sd_bus *bus, const char *path, uint64_t max) {
        Outcome o;

        if (max)
                bcall(bus, &o, NULL, "CreateGroup", "sa{st}u", path, 1, "max", max, NO_OWNER);
        else
                bcall(bus, &o, NULL, "CreateGroup", "sa{st}u", path, 0, NO_OWNER);
        assert_ok(path, &o);
}
