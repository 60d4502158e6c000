/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the D-Bus test programs share: the daemon's two addresses, a
 * connection each way, a Manager call over sd-bus with its outcome, a
 * group's properties read over the bus, groups made and their usage read
 * over a socket connection of their own (so that what one handle believes
 * is compared with what the daemon counts), and the comparison of one
 * libmemacct call's results both ways. Every helper asserts (cmocka)
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
#include <string.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-test-util.h"

const char *bus_address;
const char *socket_path;

/* ---- connections ---- */

sd_bus *sdbus_open(void) {
        sd_bus *bus = NULL;

        assert_true(sd_bus_new(&bus) >= 0);
        assert_true(sd_bus_set_address(bus, bus_address) >= 0);
        assert_true(sd_bus_set_bus_client(bus, 1) >= 0);
        assert_true(sd_bus_start(bus) >= 0);
        return bus;
}

memacct *bus_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect_bus(bus_address, &m), 0);
        return m;
}

memacct *sock_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(socket_path, &m), 0);
        return m;
}

/* ---- calls over sd-bus, and what came of them ---- */

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

char *object_of(const char *path) {
        char *object = NULL;

        assert_true(sd_bus_path_encode(GROUP_PREFIX, path, &object) >= 0);
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

/* ---- over the socket ---- */

void create(const char *path, unsigned set, uint64_t max, uint64_t high) {
        memacct *m = sock_open();
        memacct_limits l = { .set = set, .max = max, .high = high };

        assert_int_equal(memacct_create_group(m, path, &l, MEMACCT_NO_OWNER), 0);
        memacct_close(m);
}

uint64_t current(const char *path) {
        memacct *m = sock_open();
        memacct_group_info *g = NULL;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, MEMACCT_EXACT, &g), 0);
        v = g->current;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

uint64_t current_soon(const char *path, uint64_t want) {
        uint64_t deadline = now_msec() + WAIT_MSEC, v;

        while ((v = current(path)) != want && now_msec() < deadline)
                sleep_msec(20);
        return v;
}

/* ---- libmemacct both ways ---- */

/* (The messages are copied as each call returns: memacct_last_error()
 * keeps only the last failure of a thread.) */
void assert_same(const char *what, int rs, const char *es, int rb, const char *eb, int want) {
        if (rs == want && rb == want && (want >= 0 || strcmp(es, eb) == 0))
                return;
        fprintf(stderr, "%s: socket %d (%s), bus %d (%s), want %d\n", what, rs, es, rb, eb, want);
        fail();
}

void last_error(memacct *m, int r, char *buf, size_t size, char *refused, size_t rsize) {
        const char *e = r < 0 ? memacct_last_error(m) : NULL;
        const char *p = r < 0 ? memacct_refused_path(m) : NULL;

        snprintf(buf, size, "%s", e ? e : "-");
        snprintf(refused, rsize, "%s", p ? p : "-");
}
