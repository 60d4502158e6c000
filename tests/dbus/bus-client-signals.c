/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-bus-client's tests of signals, both ways: the daemon's own (Event
 * for events raised by charges over either transport, PropertiesChanged
 * for limits set over the bus, InterfacesAdded/Removed for groups made and
 * removed over the bus), the bus's word that a peer left (its session
 * charges end, its kept charges stay), and a bus daemon that reads none of
 * the daemon's signals, which must not slow a socket client.
 */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-client-signals.h"
#include "bus-test-util.h"

/* ---- signals ---- */

typedef struct EventSeen {
        const char *path, *name;
        uint64_t count;
        bool seen;
} EventSeen;

static int on_event(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        EventSeen *want = userdata;
        const char *path, *name;
        uint64_t count;

        (void) error;
        if (sd_bus_message_read(msg, "sst", &path, &name, &count) < 0)
                return 0;
        for (; want->path; want++)
                if (strcmp(path, want->path) == 0 && strcmp(name, want->name) == 0 && count == want->count)
                        want->seen = true;
        return 0;
}

static bool all_seen(const EventSeen *e) {
        for (; e->path; e++)
                if (!e->seen)
                        return false;
        return true;
}

static void wait_all_seen(sd_bus *bus, EventSeen *e) {
        uint64_t deadline = now_msec() + WAIT_MSEC;

        while (!all_seen(e) && now_msec() < deadline) {
                int r = sd_bus_process(bus, NULL);

                assert_true(r >= 0);
                if (r == 0)
                        (void) sd_bus_wait(bus, 100 * 1000);
        }
        for (; e->path; e++)
                if (!e->seen)
                        fail_msg("no Event(%s, %s, %" PRIu64 ")", e->path, e->name, e->count);
}

void test_event_signal(void **state) {
        sd_bus *bus = sdbus_open(), *other = sdbus_open();
        sd_bus_slot *slot = NULL;
        memacct *m = sock_open();
        memacct_charge_result res;
        EventSeen socket_events[] = {
                { "/evt", "max", 1 }, { "/evt", "oom", 1 }, {},
        };
        EventSeen bus_events[] = {
                { "/evt", "max", 2 }, { "/evt", "oom", 2 }, { "/evt", "high", 1 }, {},
        };
        Outcome b;

        (void) state;
        create_bus(bus, "/evt", 64 * K);

        /* Refused over the socket, seen on the bus. */
        assert_true(sd_bus_match_signal(bus, &slot, DEST, MANAGER_PATH, MANAGER_IFACE, "Event", on_event,
                                        socket_events) >= 0);
        assert_int_equal(memacct_charge(m, "/evt", 128 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &res), -EDQUOT);
        wait_all_seen(bus, socket_events);
        slot = sd_bus_slot_unref(slot);

        /* Refused over the bus (from another connection), and a high event. */
        assert_true(sd_bus_match_signal(bus, &slot, DEST, MANAGER_PATH, MANAGER_IFACE, "Event", on_event,
                                        bus_events) >= 0);
        bcall(other, &b, NULL, "Charge", "stsb", "/evt", 128 * K, "", 1);
        assert_string_equal(b.name, "org.memacct1.Error.LimitExceeded");
        bcall(other, &b, NULL, "SetLimits", "sa{st}b", "/evt", 1, "high", 16 * K, 0);
        assert_ok("SetLimits high", &b);
        bcall(other, &b, NULL, "Charge", "stsb", "/evt", 32 * K, "", 1);
        assert_ok("Charge over high", &b);
        wait_all_seen(bus, bus_events);
        slot = sd_bus_slot_unref(slot);

        bcall(other, &b, NULL, "Uncharge", "stsb", "/evt", 32 * K, "", 1);
        assert_ok("Uncharge", &b);
        bcall(other, &b, NULL, "RemoveGroup", "s", "/evt");
        assert_ok("RemoveGroup", &b);
        memacct_close(m);
        sd_bus_flush_close_unref(other);
        sd_bus_flush_close_unref(bus);
}

typedef struct Changed {
        const char *property;
        uint64_t value;
        bool seen;
} Changed;

static int on_properties_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Changed *want = userdata;
        const char *iface, *name;
        uint64_t v;

        (void) error;
        if (sd_bus_message_read(msg, "s", &iface) < 0 || strcmp(iface, GROUP_IFACE) != 0)
                return 0;
        if (sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
                return 0;
        while (sd_bus_message_enter_container(msg, 'e', "sv") > 0) {
                if (sd_bus_message_read(msg, "s", &name) < 0)
                        return 0;
                if (strcmp(name, want->property) == 0 && sd_bus_message_read(msg, "v", "t", &v) > 0) {
                        if (v == want->value)
                                want->seen = true;
                } else if (sd_bus_message_skip(msg, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(msg) < 0)
                        return 0;
        }
        return 0;
}

typedef struct ObjectSeen {
        const char *object;
        bool added, removed;
} ObjectSeen;

static int on_interfaces_added(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ObjectSeen *o = userdata;
        const char *object;

        (void) error;
        if (sd_bus_message_read(msg, "o", &object) > 0 && strcmp(object, o->object) == 0)
                o->added = true;
        return 0;
}

static int on_interfaces_removed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ObjectSeen *o = userdata;
        const char *object;

        (void) error;
        if (sd_bus_message_read(msg, "o", &object) > 0 && strcmp(object, o->object) == 0)
                o->removed = true;
        return 0;
}

void test_properties_changed_and_object_manager(void **state) {
        sd_bus *bus = sdbus_open(), *other = sdbus_open();
        sd_bus_slot *s1 = NULL, *s2 = NULL, *s3 = NULL;
        char *object = object_of("/pc");
        Changed changed = { "MemoryMax", 2 * M, false };
        ObjectSeen seen = { .object = object };
        Outcome b;

        (void) state;
        assert_true(sd_bus_match_signal(bus, &s1, DEST, MANAGER_PATH, "org.freedesktop.DBus.ObjectManager",
                                        "InterfacesAdded", on_interfaces_added, &seen) >= 0);
        assert_true(sd_bus_match_signal(bus, &s2, DEST, MANAGER_PATH, "org.freedesktop.DBus.ObjectManager",
                                        "InterfacesRemoved", on_interfaces_removed, &seen) >= 0);
        assert_true(sd_bus_match_signal(bus, &s3, DEST, object, "org.freedesktop.DBus.Properties",
                                        "PropertiesChanged", on_properties_changed, &changed) >= 0);

        /* CreateGroup: the object, then the limits it was given. */
        create_bus(other, "/pc", 2 * M);
        assert_true(bus_wait_for(bus, &seen.added));
        assert_true(bus_wait_for(bus, &changed.seen));
        changed = (Changed) { "MemoryMax", 3 * M, false };
        bcall(other, &b, NULL, "SetLimits", "sa{st}b", "/pc", 1, "max", 3 * M, 0);
        assert_ok("SetLimits", &b);
        assert_true(bus_wait_for(bus, &changed.seen));
        assert_int_equal(prop_u64(bus, "/pc", "MemoryMax"), 3 * M);
        bcall(other, &b, NULL, "RemoveGroup", "s", "/pc");
        assert_ok("RemoveGroup", &b);
        assert_true(bus_wait_for(bus, &seen.removed));

        sd_bus_slot_unref(s1);
        sd_bus_slot_unref(s2);
        sd_bus_slot_unref(s3);
        free(object);
        sd_bus_flush_close_unref(other);
        sd_bus_flush_close_unref(bus);
}

/* ---- a peer's charges end with it ---- */

void test_peer_leaving_releases_its_charges(void **state) {
        sd_bus *bus = sdbus_open(), *peer = sdbus_open();
        int ready[2];
        pid_t child;
        Outcome b;
        char c;

        (void) state;
        create_bus(bus, "/dc", 0);
        create_bus(bus, "/dc2", 0);

        /* Closing the connection. */
        bcall(peer, &b, NULL, "Charge", "stsb", "/dc", 1 * M, "", 0);
        assert_ok("a session charge", &b);
        bcall(peer, &b, NULL, "Charge", "stsb", "", 4 * K, "file", 0);
        assert_ok("a session charge to the attached group", &b);
        bcall(peer, &b, NULL, "Charge", "stsb", "/dc2", 4 * K, "", 0);
        assert_string_equal(b.name, "org.memacct1.Error.InvalidArgument");
        assert_string_equal(b.message, "/dc2: the session is attached to /dc; move it first");
        bcall(peer, &b, NULL, "Charge", "stsb", "/dc", 8 * K, "", 1);
        assert_ok("a kept charge", &b);
        assert_int_equal(prop_u64(bus, "/dc", "MemoryCurrent"), 1 * M + 12 * K);
        assert_int_equal(current("/dc"), 1 * M + 12 * K);
        peer = sd_bus_flush_close_unref(peer);
        /* The kept charge stays: it belongs to the group. */
        assert_true(current_becomes(bus, "/dc", 8 * K));
        assert_int_equal(current("/dc"), 8 * K);
        bcall(bus, &b, NULL, "Uncharge", "stsb", "/dc", 8 * K, "", 1);
        assert_ok("Uncharge of the kept charge", &b);

        /* Being killed. */
        assert_int_equal(pipe(ready), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                sd_bus *mine = NULL;
                Outcome o;

                close(ready[0]);
                if (sd_bus_new(&mine) < 0 || sd_bus_set_address(mine, bus_address) < 0 ||
                    sd_bus_set_bus_client(mine, 1) < 0 || sd_bus_start(mine) < 0)
                        _exit(1);
                if (bcall(mine, &o, NULL, "Charge", "stsb", "/dc", 2 * M, "", 0) < 0)
                        _exit(2);
                if (write(ready[1], "x", 1) != 1)
                        _exit(3);
                pause();
                _exit(0);
        }
        close(ready[1]);
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        assert_int_equal(prop_u64(bus, "/dc", "MemoryCurrent"), 2 * M);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        assert_true(current_becomes(bus, "/dc", 0));
        assert_int_equal(current("/dc"), 0);

        bcall(bus, &b, NULL, "RemoveGroup", "s", "/dc");
        assert_ok("RemoveGroup /dc", &b);
        bcall(bus, &b, NULL, "RemoveGroup", "s", "/dc2");
        assert_ok("RemoveGroup /dc2", &b);
        sd_bus_flush_close_unref(bus);
}

/* ---- a bus that does not read ---- */

#define STORM_CHARGES 40000

/*
 * The bus daemon stopped (SIGSTOP): every refused charge over the socket
 * raises two events for the bus, which cannot take them. The socket must
 * not notice: the charges are answered at the socket's speed, the bus
 * thread drops what it cannot send (memacctd logs it; test-bus.sh
 * checks), and once the bus daemon runs again the bus answers again.
 */
void test_a_stopped_bus_stalls_no_socket_client(void **state) {
        const char *pid_env = getenv("MEMACCT_BUS_PID");
        memacct_limits max = { .set = MEMACCT_LIMIT_MAX, .max = 4 * K };
        memacct_charge_result res;
        memacct *m = sock_open();
        pid_t bus_pid = pid_env ? (pid_t) atoi(pid_env) : 0;
        uint64_t t0, elapsed;
        sd_bus *bus;
        Outcome b;

        (void) state;
        if (bus_pid <= 0)
                skip();
        assert_int_equal(memacct_create_group(m, "/storm", &max, MEMACCT_NO_OWNER), 0);
        assert_int_equal(kill(bus_pid, SIGSTOP), 0);
        t0 = now_msec();
        for (unsigned i = 0; i < STORM_CHARGES; i++) {
                int r = memacct_charge(m, "/storm", 8 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &res);

                if (r != -EDQUOT) {
                        kill(bus_pid, SIGCONT);
                        fail_msg("charge %u: %d, want -EDQUOT", i, r);
                }
        }
        elapsed = now_msec() - t0;
        assert_int_equal(kill(bus_pid, SIGCONT), 0);
        fprintf(stderr, "%u refused charges (%u events) with the bus daemon stopped: %" PRIu64 " ms\n",
                STORM_CHARGES, 2 * STORM_CHARGES, elapsed);
        /* Generous for sanitizers; a worker waiting on the bus would hang. */
        assert_true(elapsed < 60000);

        bus = sdbus_open();
        bcall(bus, &b, NULL, "GetGroup", "s", "/storm");
        assert_ok("the bus answers again", &b);
        assert_int_equal(prop_u64(bus, "/storm", "FailCount"), STORM_CHARGES);
        sd_bus_flush_close_unref(bus);
        assert_int_equal(memacct_remove_group(m, "/storm"), 0);
        memacct_close(m);
}
