/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the D-Bus test programs share (bus-test-util.c: test-bus-client,
 * test-bus-signals, test-dbus-client): the names of org.memacct1, the
 * daemon's two addresses, a connection each way (a raw sd-bus one, a
 * libmemacct handle on the bus, one on the socket), a Manager call and its
 * outcome, groups made and read, at once or once they settle, and one
 * call's results compared both ways. Each helper fails the running test
 * (cmocka) rather than return an error; none may be called outside a
 * test, nor from two threads at once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "test-support.h"

#define K UINT64_C(1024)
#define M (K * K)
#define WAIT_MSEC 10000
#define NO_OWNER UINT32_MAX
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define DEST "org.memacct1"
#define MANAGER_PATH "/org/memacct1"
#define MANAGER_IFACE "org.memacct1.Manager"
#define GROUP_IFACE "org.memacct1.Group"
#define GROUP_PREFIX "/org/memacct1/group"

/* The daemon under test: its bus address and its socket, set by each
 * program's main() from its environment before any test runs. */
extern const char *bus_address;
extern const char *socket_path;

/* What came of a call over either transport. */
typedef struct Outcome {
        int r;            /* < 0: failed */
        char name[128];   /* the D-Bus error name ("" on success) */
        char message[512];
} Outcome;

/* ---- connections ---- */

/** sdbus_open() - a new sd-bus client connection to bus_address. Return: the connection. */
sd_bus *sdbus_open(void);

/** bus_open() - a new libmemacct handle on bus_address. Return: the handle. */
memacct *bus_open(void);

/** sock_open() - a new libmemacct handle on socket_path. Return: the handle. */
memacct *sock_open(void);

/* ---- calls over sd-bus ---- */

/**
 * bcall() - call the Manager method @member over @bus.
 * @o: what came of it: the D-Bus error name and message on failure.
 * @ret_reply: the reply, for the caller to unref; NULL to drop it.
 * @types: the signature of the arguments that follow.
 * Return: sd_bus_call_method()'s, a negative errno on failure.
 */
int bcall(sd_bus *bus, Outcome *o, sd_bus_message **ret_reply, const char *member, const char *types, ...);

/** assert_ok() - fail the test, saying @what, unless @o succeeded. */
void assert_ok(const char *what, const Outcome *o);

/** object_of() - the object path of group @path. Return: a string to free(). */
char *object_of(const char *path);

/** prop_u64() - the u64 property @name of group @path, read over @bus. Return: its value. */
uint64_t prop_u64(sd_bus *bus, const char *path, const char *name);

/** bus_wait_for() - process @bus until *@done or WAIT_MSEC pass. Return: *@done. */
bool bus_wait_for(sd_bus *bus, const bool *done);

/** current_becomes() - wait up to WAIT_MSEC for MemoryCurrent of @path to read @want over @bus.
 * Return: whether it did (saying what it read when not). */
bool current_becomes(sd_bus *bus, const char *path, uint64_t want);

/** create_bus() - CreateGroup @path over @bus, with MemoryMax @max unless 0; fail the test if
 * refused. */
void create_bus(sd_bus *bus, const char *path, uint64_t max);

/* ---- over the socket, on a connection of its own ---- */

/** create() - create group @path over the socket, with the limits of @set (MEMACCT_LIMIT_*)
 * among @max and @high, and no owner. */
void create(const char *path, unsigned set, uint64_t max, uint64_t high);

/** current() - the current usage of @path (statistics flushed first), read over a socket
 * connection of its own. Return: bytes. */
uint64_t current(const char *path);

/** current_soon() - wait up to WAIT_MSEC until current(@path) is @want. Return: the last value
 * read. */
uint64_t current_soon(const char *path, uint64_t want);

/* ---- libmemacct both ways ---- */

/**
 * assert_same() - fail the test unless the socket's result @rs (message @es) and the bus's @rb
 * (message @eb) are both @want and, for an error, the messages are the same.
 * @what: the call, for the failure's words.
 */
void assert_same(const char *what, int rs, const char *es, int rb, const char *eb, int want);

/** last_error() - copy @m's last error into @buf and its refused path into @refused ("-" for
 * none) after a call that returned @r: memacct_last_error() keeps only a thread's last. */
void last_error(memacct *m, int r, char *buf, size_t size, char *refused, size_t rsize);
