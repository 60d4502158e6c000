/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.memacct1 as an sd-bus client sees it, next to the socket.
 *
 * Run by test-bus.sh against its daemon: $MEMACCT_BUS_ADDRESS is the
 * private bus, $MEMACCT_SOCKET the same daemon's socket (driven with
 * libmemacct). What it checks:
 * - the same failure gives the same status over both transports (the D-Bus
 *   error name is status_to_dbus_error() of the socket's status) and the
 *   same message, word for word; a stat item the daemon does not know,
 *   which libmemacct cannot send, with a request of our own on the socket;
 * - the same group reads the same over both (every Group property against
 *   the socket's GetGroup), and lists the same;
 * - Event signals arrive for events raised by charges over either
 *   transport; PropertiesChanged for limits set over the bus;
 *   InterfacesAdded/Removed for groups made and removed over the bus;
 * - a peer's session charges end when it leaves the bus: closing its
 *   connection, or being killed; its kept charges stay;
 * - session semantics (attach on first charge, "" for the attached group,
 *   moves, client counters) match the socket's;
 * - with the bus daemon stopped ($MEMACCT_BUS_PID), socket clients are
 *   served as fast as ever;
 * - libmemacct's device memory region calls on a bus handle: every
 *   public region call and its argument checks, the regions of a group,
 *   and events by region.
 *
 * This file holds the comparisons of the two transports' answers and
 * main(); the signal tests are in bus-client-signals.c, the region tests
 * in bus-client-regions.c, the helpers they use in
 * tests/support/bus-test-util.c.
 */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-client-regions.h"
#include "bus-client-signals.h"
#include "bus-test-util.h"
#include "frame.h"
#include "memacct.pb-c.h"
#include "status.h"

/* The outcome of a libmemacct call, named as the bus names it. */
static void sock_outcome(memacct *m, int r, Outcome *o) {
        const char *msg = memacct_last_error(m);

        *o = (Outcome) { .r = r };
        if (r < 0) {
                snprintf(o->name, sizeof(o->name), "%s", status_to_dbus_error(status_from_errno(r)));
                snprintf(o->message, sizeof(o->message), "%s", msg ? msg : "");
        }
}

/*
 * A Charge (or Uncharge) of @stat sent as it is, in a frame of our own on
 * a connection of its own: libmemacct checks the stat item before it
 * sends, so only this way does the daemon's own check answer.
 */
static void raw_charge(bool uncharge, const char *path, uint64_t bytes, const char *stat, bool keep,
                       Outcome *o) {
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__Charge c = MEMACCT__V1__CHARGE__INIT;
        Memacct__V1__Uncharge u = MEMACCT__V1__UNCHARGE__INIT;
        Memacct__V1__Response *resp;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint8_t out[4096], in[4096];
        size_t n, body, prefix, got = 0;
        int fd;

        req.has_id = true;
        req.id = 1;
        if (uncharge) {
                u.path = (char *) path;
                u.has_bytes = true;
                u.bytes = bytes;
                u.stat = (char *) stat;
                u.has_keep = true;
                u.keep = keep;
                req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
                req.uncharge = &u;
        } else {
                c.path = (char *) path;
                c.has_bytes = true;
                c.bytes = bytes;
                c.stat = (char *) stat;
                c.has_keep = true;
                c.keep = keep;
                req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
                req.charge = &c;
        }
        n = memacct__v1__request__get_packed_size(&req);
        assert_true(n + FRAME_PREFIX_MAX <= sizeof(out));
        prefix = frame_prefix_encode((uint32_t) n, out);
        memacct__v1__request__pack(&req, out + prefix);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(write(fd, out, prefix + n), (ssize_t) (prefix + n));
        for (;;) {
                ssize_t k;

                if (got > 0 && frame_prefix_decode(in, got, sizeof(in), &body, &prefix) == 0 &&
                    got >= prefix + body)
                        break;
                k = read(fd, in + got, sizeof(in) - got);
                assert_true(k > 0);
                got += (size_t) k;
        }
        close(fd);
        resp = memacct__v1__response__unpack(NULL, body, in + prefix);
        assert_non_null(resp);
        *o = (Outcome) { .r = resp->status == 0 ? 0 : status_to_errno((MemStatus) resp->status) };
        if (o->r < 0) {
                snprintf(o->name, sizeof(o->name), "%s", status_to_dbus_error((MemStatus) resp->status));
                snprintf(o->message, sizeof(o->message), "%s", resp->message ? resp->message : "");
        }
        memacct__v1__response__free_unpacked(resp, NULL);
}

/* Both failed, with the same status and message (and that name, when given). */
static void assert_same_failure(const char *what, const Outcome *bus, const Outcome *sock, const char *name) {
        if (bus->r >= 0 || sock->r >= 0 || strcmp(bus->name, sock->name) != 0 ||
            strcmp(bus->message, sock->message) != 0 || (name && strcmp(bus->name, name) != 0)) {
                fprintf(stderr, "%s:\n  bus:    %d %s: %s\n  socket: %d %s: %s\n  wanted: %s\n", what, bus->r,
                        bus->name, bus->message, sock->r, sock->name, sock->message, name ? name : "(same)");
                fail();
        }
}

/* An a{st} property, in the order given, into @values (at most @n). Return: how many. */
static size_t prop_counters(sd_bus *bus, const char *path, const char *name, char names[][16],
                            uint64_t *values, size_t n) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char *object = object_of(path);
        const char *key;
        uint64_t v;
        size_t i = 0;
        int r;

        r = sd_bus_get_property(bus, DEST, object, GROUP_IFACE, name, &error, &reply, "a{st}");
        assert_true(r >= 0);
        assert_true(sd_bus_message_enter_container(reply, 'a', "{st}") >= 0);
        while ((r = sd_bus_message_read(reply, "{st}", &key, &v)) > 0) {
                assert_true(i < n);
                snprintf(names[i], 16, "%s", key);
                values[i++] = v;
        }
        assert_true(r >= 0);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        free(object);
        return i;
}

/* ---- the same failure, the same answer ---- */

static void test_errors_match_the_socket(void **state) {
        sd_bus *bus = sdbus_open();
        memacct *m = sock_open();
        memacct_limits max64 = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_limits max16 = { .set = MEMACCT_LIMIT_MAX, .max = 16 * K };
        memacct_group_info *info = NULL;
        memacct_group_list *list = NULL;
        memacct_client_info ci;
        memacct_charge_result res;
        Outcome b, s;
        unsigned n;

        (void) state;
        assert_int_equal(memacct_create_group(m, "/eq", &max64, MEMACCT_NO_OWNER), 0);
        create_bus(bus, "/eq/kid", 0);

        bcall(bus, &b, NULL, "GetGroup", "s", "/nope");
        sock_outcome(m, memacct_get_group(m, "/nope", NULL, 0, &info), &s);
        assert_same_failure("GetGroup of a missing group", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "CreateGroup", "sa{st}u", "/eq", 0, NO_OWNER);
        sock_outcome(m, memacct_create_group(m, "/eq", NULL, MEMACCT_NO_OWNER), &s);
        assert_same_failure("CreateGroup of an existing group", &b, &s, "org.memacct1.Error.Exists");

        bcall(bus, &b, NULL, "CreateGroup", "sa{st}u", "/nope/kid", 0, NO_OWNER);
        sock_outcome(m, memacct_create_group(m, "/nope/kid", NULL, MEMACCT_NO_OWNER), &s);
        assert_same_failure("CreateGroup without a parent", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "CreateGroup", "sa{st}u", "/", 0, NO_OWNER);
        sock_outcome(m, memacct_create_group(m, "/", NULL, MEMACCT_NO_OWNER), &s);
        assert_same_failure("CreateGroup of /", &b, &s, "org.memacct1.Error.Exists");

        bcall(bus, &b, NULL, "CreateGroup", "sa{st}u", "/eq//x", 0, NO_OWNER);
        sock_outcome(m, memacct_create_group(m, "/eq//x", NULL, MEMACCT_NO_OWNER), &s);
        assert_same_failure("CreateGroup of a malformed path", &b, &s, "org.memacct1.Error.InvalidArgument");

        bcall(bus, &b, NULL, "Charge", "stsb", "/eq", 128 * K, "", 1);
        sock_outcome(m, memacct_charge(m, "/eq", 128 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &res), &s);
        assert_same_failure("a kept charge over max", &b, &s, "org.memacct1.Error.LimitExceeded");
        assert_string_equal(b.message, "/eq: limit exceeded (max of /eq)");

        bcall(bus, &b, NULL, "Charge", "stsb", "/eq/kid", 128 * K, "file", 1);
        sock_outcome(m, memacct_charge(m, "/eq/kid", 128 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &res), &s);
        assert_same_failure("a kept charge over the parent's max", &b, &s,
                            "org.memacct1.Error.LimitExceeded");
        assert_string_equal(b.message, "/eq/kid: limit exceeded (max of /eq)");

        /* A stat item the daemon does not know: its own check, both ways. */
        bcall(bus, &b, NULL, "Charge", "stsb", "/eq", 4 * K, "bogus", 1);
        raw_charge(false, "/eq", 4 * K, "bogus", true, &s);
        assert_same_failure("a kept charge of an unknown stat item", &b, &s, "org.memacct1.Error.InvalidArgument");
        assert_string_equal(b.message, "unknown stat item 'bogus'");
        bcall(bus, &b, NULL, "Charge", "stsb", "/eq", 4 * K, "ANON", 0);
        raw_charge(false, "/eq", 4 * K, "ANON", false, &s);
        assert_same_failure("a session charge of an unknown stat item", &b, &s,
                            "org.memacct1.Error.InvalidArgument");
        bcall(bus, &b, NULL, "Uncharge", "stsb", "/eq", 4 * K, "nosuch", 1);
        raw_charge(true, "/eq", 4 * K, "nosuch", true, &s);
        assert_same_failure("an uncharge of an unknown stat item", &b, &s, "org.memacct1.Error.InvalidArgument");
        /* And one it knows, the same way: the raw request is a real one. */
        raw_charge(false, "/eq", 4 * K, "sock", true, &s);
        assert_ok("a raw kept charge", &s);
        raw_charge(true, "/eq", 4 * K, "sock", true, &s);
        assert_ok("a raw kept uncharge", &s);

        bcall(bus, &b, NULL, "Uncharge", "stsb", "/eq", UINT64_C(1), "file", 1);
        sock_outcome(m, memacct_uncharge(m, "/eq", 1, MEMACCT_STAT_FILE, MEMACCT_KEEP), &s);
        assert_same_failure("an uncharge of more than is kept", &b, &s, "org.memacct1.Error.Underflow");

        bcall(bus, &b, NULL, "RemoveGroup", "s", "/eq");
        sock_outcome(m, memacct_remove_group(m, "/eq"), &s);
        assert_same_failure("RemoveGroup of a group with children", &b, &s, "org.memacct1.Error.Busy");

        bcall(bus, &b, NULL, "RemoveGroup", "s", "/");
        sock_outcome(m, memacct_remove_group(m, "/"), &s);
        assert_same_failure("RemoveGroup of /", &b, &s, NULL);

        assert_int_equal(memacct_charge(m, "/eq", 32 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &res), 0);
        bcall(bus, &b, NULL, "SetLimits", "sa{st}b", "/eq", 1, "max", 16 * K, 0);
        sock_outcome(m, memacct_set_limits(m, "/eq", &max16, 0), &s);
        assert_same_failure("a max below usage", &b, &s, "org.memacct1.Error.Busy");
        assert_int_equal(memacct_uncharge(m, "/eq", 32 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);

        bcall(bus, &b, NULL, "ResetPeak", "s", "/nope");
        sock_outcome(m, memacct_reset_peak(m, "/nope"), &s);
        assert_same_failure("ResetPeak of a missing group", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "MoveProcess", "us", 999999, "/eq");
        sock_outcome(m, memacct_move(m, 999999, "/eq", &n), &s);
        assert_same_failure("MoveProcess of a pid without a session", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "GetClient", "ub", 999999, 0);
        sock_outcome(m, memacct_get_client(m, 999999, 0, &ci), &s);
        assert_same_failure("GetClient of a pid without a session", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "Attach", "s", "/nope");
        sock_outcome(m, memacct_attach(m, "/nope"), &s);
        assert_same_failure("Attach to a missing group", &b, &s, "org.memacct1.Error.NotFound");

        bcall(bus, &b, NULL, "ListGroups", "sb", "/nope", 0);
        sock_outcome(m, memacct_list_groups(m, "/nope", 0, &list), &s);
        assert_same_failure("ListGroups of a missing group", &b, &s, "org.memacct1.Error.NotFound");

        /* A fresh session is not attached, on either transport. */
        bcall(bus, &b, NULL, "Uncharge", "stsb", "", 4 * K, "", 0);
        sock_outcome(m, memacct_uncharge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0), &s);
        assert_same_failure("a session uncharge before any attach", &b, &s, "org.memacct1.Error.NotAttached");

        bcall(bus, &b, NULL, "RemoveGroup", "s", "/eq/kid");
        assert_ok("RemoveGroup /eq/kid", &b);
        assert_int_equal(memacct_remove_group(m, "/eq"), 0);
        memacct_close(m);
        sd_bus_flush_close_unref(bus);
}

/* ---- the same group, the same numbers ---- */

typedef struct Counters {
        size_t n;
        char names[16][16];
        uint64_t values[16];
} Counters;

static bool counters_equal(const Counters *bus, const memacct_counter *c, size_t n) {
        if (bus->n != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (strcmp(bus->names[i], c[i].name) != 0 || bus->values[i] != c[i].value)
                        return false;
        return true;
}

/* Every property of @path against the socket's GetGroup. Return: equal.
 * Statistics are as of the last flush on both, which may fall between the
 * two reads: the caller retries. */
static bool group_reads_equal(sd_bus *bus, memacct *m, const char *path, bool verbose) {
        static const struct {
                const char *property;
                size_t offset;
        } fields[] = {
                { "MemoryCurrent", offsetof(memacct_group_info, current) },
                { "MemoryPeak", offsetof(memacct_group_info, peak) },
                { "MemoryMax", offsetof(memacct_group_info, max) },
                { "MemoryHigh", offsetof(memacct_group_info, high) },
                { "MemoryLow", offsetof(memacct_group_info, low) },
                { "MemoryMin", offsetof(memacct_group_info, min) },
                { "EffectiveMemoryMin", offsetof(memacct_group_info, effective_min) },
                { "EffectiveMemoryLow", offsetof(memacct_group_info, effective_low) },
                { "FailCount", offsetof(memacct_group_info, failcnt) },
        };
        memacct_group_info *g = NULL;
        Counters events, local, stats;
        bool equal = true;

        assert_int_equal(memacct_get_group(m, path, NULL, 0, &g), 0);
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                uint64_t want = *(const uint64_t *) ((const char *) g + fields[i].offset);
                uint64_t got = prop_u64(bus, path, fields[i].property);

                if (got != want) {
                        if (verbose)
                                fprintf(stderr, "%s %s: bus %" PRIu64 ", socket %" PRIu64 "\n", path,
                                        fields[i].property, got, want);
                        equal = false;
                }
        }
        events.n = prop_counters(bus, path, "Events", events.names, events.values, 16);
        local.n = prop_counters(bus, path, "EventsLocal", local.names, local.values, 16);
        stats.n = prop_counters(bus, path, "Stats", stats.names, stats.values, 16);
        if (!counters_equal(&events, g->events, g->n_events) ||
            !counters_equal(&local, g->events_local, g->n_events_local) ||
            !counters_equal(&stats, g->stat, g->n_stat)) {
                if (verbose)
                        fprintf(stderr, "%s: the events or stats differ\n", path);
                equal = false;
        }
        memacct_group_info_free(g);
        return equal;
}

static void assert_group_reads_equal(sd_bus *bus, memacct *m, const char *path) {
        uint64_t deadline = now_msec() + WAIT_MSEC;

        while (!group_reads_equal(bus, m, path, false)) {
                if (now_msec() > deadline) {
                        group_reads_equal(bus, m, path, true);
                        fail_msg("%s reads differently over the bus and the socket", path);
                }
                sleep_msec(50);
        }
}

static void test_values_match_the_socket(void **state) {
        sd_bus *bus = sdbus_open();
        memacct *m = sock_open();
        memacct_limits low = { .set = MEMACCT_LIMIT_LOW, .low = 256 * K };
        memacct_charge_result res;
        memacct_group_list *list = NULL;
        sd_bus_message *reply = NULL;
        const char *p, *o;
        size_t listed = 0;
        Outcome b;

        (void) state;
        bcall(bus, &b, NULL, "CreateGroup", "sa{st}u", "/val", 4, "max", 8 * M, "high", 1 * M, "low", 512 * K,
              "min", 256 * K, NO_OWNER);
        assert_ok("CreateGroup /val", &b);
        assert_int_equal(memacct_create_group(m, "/val/x", &low, MEMACCT_NO_OWNER), 0);
        /* Over /val's high: a high event; then a refusal: max and oom. */
        assert_int_equal(memacct_charge(m, "/val/x", 3 * M, MEMACCT_STAT_FILE, MEMACCT_KEEP, &res), 0);
        assert_true(res.over_high > 0);
        bcall(bus, &b, NULL, "Charge", "stsb", "/val", 1 * M, "shmem", 1);
        assert_ok("Charge /val", &b);
        bcall(bus, &b, NULL, "Charge", "stsb", "/val/x", 16 * M, "", 1);
        assert_int_equal(b.r < 0, 1);

        assert_group_reads_equal(bus, m, "/val");
        assert_group_reads_equal(bus, m, "/val/x");
        assert_group_reads_equal(bus, m, "/");
        assert_int_equal(prop_u64(bus, "/val", "MemoryCurrent"), 4 * M);

        /* ListGroups lists what the socket lists, each with its object. */
        assert_int_equal(memacct_list_groups(m, "/val", MEMACCT_RECURSIVE, &list), 0);
        bcall(bus, &b, &reply, "ListGroups", "sb", "/val", 1);
        assert_ok("ListGroups", &b);
        assert_true(sd_bus_message_enter_container(reply, 'a', "(so)") >= 0);
        while (sd_bus_message_read(reply, "(so)", &p, &o) > 0) {
                char *want = object_of(p);

                assert_true(listed < memacct_group_list_size(list));
                assert_string_equal(p, memacct_group_list_get(list, listed)->path);
                assert_string_equal(o, want);
                free(want);
                listed++;
        }
        assert_int_equal(listed, memacct_group_list_size(list));
        assert_int_equal(listed, 2);
        sd_bus_message_unref(reply);
        memacct_group_list_free(list);

        assert_int_equal(memacct_uncharge(m, "/val/x", 3 * M, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        bcall(bus, &b, NULL, "Uncharge", "stsb", "/val", 1 * M, "shmem", 1);
        assert_ok("Uncharge /val", &b);
        assert_int_equal(memacct_remove_group(m, "/val/x"), 0);
        bcall(bus, &b, NULL, "RemoveGroup", "s", "/val");
        assert_ok("RemoveGroup /val", &b);
        memacct_close(m);
        sd_bus_flush_close_unref(bus);
}

/* ---- sessions of one process on both transports ---- */

static uint64_t rss_of(sd_bus_message *reply, const char *key) {
        const char *k;
        uint64_t v, found = UINT64_MAX;

        assert_true(sd_bus_message_rewind(reply, true) >= 0);
        assert_true(sd_bus_message_enter_container(reply, 'a', "{st}") >= 0);
        while (sd_bus_message_read(reply, "{st}", &k, &v) > 0)
                if (strcmp(k, key) == 0)
                        found = v;
        return found;
}

static void test_moves_and_clients_span_both_transports(void **state) {
        sd_bus *bus = sdbus_open();
        memacct *m = sock_open();
        memacct_charge_result res;
        memacct_client_info ci;
        sd_bus_message *reply = NULL;
        unsigned n = 0;
        uint32_t moved = 0;
        Outcome b;

        (void) state;
        create_bus(bus, "/mv1", 0);
        create_bus(bus, "/mv2", 0);
        /* Both sessions of this process: one per transport. */
        assert_int_equal(memacct_charge(m, "/mv1", 64 * K, MEMACCT_STAT_ANON, 0, &res), 0);
        bcall(bus, &b, NULL, "Charge", "stsb", "/mv1", 32 * K, "file", 0);
        assert_ok("a bus session charge", &b);
        assert_int_equal(prop_u64(bus, "/mv1", "MemoryCurrent"), 96 * K);

        /* One client: the counters of both, whoever asks. */
        assert_int_equal(memacct_get_client(m, getpid(), MEMACCT_EXACT, &ci), 0);
        bcall(bus, &b, &reply, "GetClient", "ub", (uint32_t) getpid(), 1);
        assert_ok("GetClient", &b);
        assert_int_equal(rss_of(reply, "anon"), ci.anon);
        assert_int_equal(rss_of(reply, "file"), ci.file);
        assert_int_equal(rss_of(reply, "swap"), ci.swap);
        assert_int_equal(rss_of(reply, "shmem"), ci.shmem);
        assert_int_equal(ci.anon, 64 * K);
        assert_int_equal(ci.file, 32 * K);
        reply = sd_bus_message_unref(reply);
        bcall(bus, &b, &reply, "GetClient", "ub", 0, 1);
        assert_ok("GetClient of the caller", &b);
        assert_int_equal(rss_of(reply, "anon"), 64 * K);
        reply = sd_bus_message_unref(reply);

        /* MoveProcess moves every session of the pid, as the socket's move does. */
        bcall(bus, &b, &reply, "MoveProcess", "us", (uint32_t) getpid(), "/mv2");
        assert_ok("MoveProcess", &b);
        assert_true(sd_bus_message_read(reply, "u", &moved) > 0);
        reply = sd_bus_message_unref(reply);
        assert_int_equal(moved, 2);
        assert_int_equal(prop_u64(bus, "/mv2", "MemoryCurrent"), 96 * K);
        assert_int_equal(prop_u64(bus, "/mv1", "MemoryCurrent"), 0);
        assert_int_equal(memacct_move(m, getpid(), "/mv1", &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(current("/mv1"), 96 * K);

        /* pid 0: the caller's own bus session only. */
        bcall(bus, &b, &reply, "MoveProcess", "us", 0, "/mv2");
        assert_ok("MoveProcess of the caller", &b);
        assert_true(sd_bus_message_read(reply, "u", &moved) > 0);
        reply = sd_bus_message_unref(reply);
        assert_int_equal(moved, 1);
        assert_int_equal(prop_u64(bus, "/mv2", "MemoryCurrent"), 32 * K);

        /* "" is the attached group; and the uncharge releases it. */
        bcall(bus, &b, NULL, "Uncharge", "stsb", "", 32 * K, "file", 0);
        assert_ok("Uncharge from the attached group", &b);
        assert_int_equal(prop_u64(bus, "/mv2", "MemoryCurrent"), 0);
        bcall(bus, &b, NULL, "Uncharge", "stsb", "", UINT64_C(1), "file", 0);
        assert_string_equal(b.name, "org.memacct1.Error.Underflow");
        assert_string_equal(b.message, "/mv2: uncharge of 1 file bytes is more than the session holds");

        memacct_close(m);
        sd_bus_flush_close_unref(bus);
        /* Both sessions ended: nothing is left anywhere. */
        bus = sdbus_open();
        assert_true(current_becomes(bus, "/mv1", 0));
        assert_true(current_becomes(bus, "/mv2", 0));
        bcall(bus, &b, NULL, "RemoveGroup", "s", "/mv1");
        assert_ok("RemoveGroup /mv1", &b);
        bcall(bus, &b, NULL, "RemoveGroup", "s", "/mv2");
        assert_ok("RemoveGroup /mv2", &b);
        sd_bus_flush_close_unref(bus);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors_match_the_socket),
                cmocka_unit_test(test_values_match_the_socket),
                cmocka_unit_test(test_event_signal),
                cmocka_unit_test(test_properties_changed_and_object_manager),
                cmocka_unit_test(test_peer_leaving_releases_its_charges),
                cmocka_unit_test(test_moves_and_clients_span_both_transports),
                cmocka_unit_test(test_regions_over_the_bus_handle),
                cmocka_unit_test(test_region_events_over_the_bus_handle),
                /* Last: it leaves the bus daemon busy with a backlog. */
                cmocka_unit_test(test_a_stopped_bus_stalls_no_socket_client),
        };

        bus_address = getenv("MEMACCT_BUS_ADDRESS");
        socket_path = getenv("MEMACCT_SOCKET");
        if (!bus_address || !socket_path) {
                fprintf(stderr, "MEMACCT_BUS_ADDRESS and MEMACCT_SOCKET must be set (test-bus.sh does)\n");
                return 2;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
