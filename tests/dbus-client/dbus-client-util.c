/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test-dbus-client's tests share: the daemon's two addresses, a
 * handle on each, groups made and read over a socket connection of their
 * own (usage is always checked that way), and the comparison of one call's
 * results both ways. Every helper fails the running test (cmocka) rather
 * than return an error.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <memacct.h>

#include "dbus-client-util.h"

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

memacct *sock_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(socket_path, &m), 0);
        return m;
}

memacct *bus_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect_bus(bus_address, &m), 0);
        return m;
}

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

/* Wait until current(@path) is @want. Return: the last value read. */
uint64_t current_soon(const char *path, uint64_t want) {
        uint64_t deadline = now_msec() + WAIT_MSEC, v;

        while ((v = current(path)) != want && now_msec() < deadline)
                sleep_msec(20);
        return v;
}

/* The results of @what on the socket (@rs, message @es) and the bus (@rb,
 * @eb): both @want, and for an error the same message. (The messages are
 * copied as each call returns: memacct_last_error() keeps only the last
 * failure of a thread.) */
void assert_same(const char *what, int rs, const char *es, int rb, const char *eb, int want) {
        if (rs == want && rb == want && (want >= 0 || strcmp(es, eb) == 0))
                return;
        fprintf(stderr, "%s: socket %d (%s), bus %d (%s), want %d\n", what, rs, es, rb, eb, want);
        fail();
}

/* Copy @m's last error and refused path (or "-") after a call that returned @r. */
void last_error(memacct *m, int r, char *buf, size_t size, char *refused, size_t rsize) {
        const char *e = r < 0 ? memacct_last_error(m) : NULL;
        const char *p = r < 0 ? memacct_refused_path(m) : NULL;

        snprintf(buf, size, "%s", e ? e : "-");
        snprintf(refused, rsize, "%s", p ? p : "-");
}
