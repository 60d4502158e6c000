/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test-bus-client's tests share (bus-client-util.c): the names of
 * org.memacct1, the two connections to one daemon, a Manager call and
 * its outcome, and reads of a group's properties. Each helper fails the
 * running test (cmocka) rather than return an error; none may be called
 * outside a test, nor from two threads at once.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#define K UINT64_C(1024)
#define M (K * K)
#define WAIT_MSEC 10000
#define NO_OWNER UINT32_MAX
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define DEST "org.memacct1"
#define MANAGER_PATH "/org/memacct1"
#define MANAGER_IFACE "org.memacct1.Manager"
#define GROUP_IFACE "org.memacct1.Group"

/* The daemon under test: $MEMACCT_BUS_ADDRESS and $MEMACCT_SOCKET, set by
 * main() before any test runs. */
extern const char *bus_address;
extern const char *socket_path;

/* What came of a call over either transport. */
typedef struct Outcome {
        int r;            /* < 0: failed */
        char name[128];   /* the D-Bus error name ("" on success) */
        char message[512];
} Outcome;

/** now_msec() - CLOCK_MONOTONIC. Return: milliseconds. */
uint64_t now_msec(void);

/** sleep_msec() - sleep for @msec milliseconds. */
void sleep_msec(unsigned msec);

/** bus_open() - a new client connection to bus_address. Return: the connection. */
sd_bus *bus_open(void);

/** sock_open() - a new libmemacct connection to socket_path. Return: the handle. */
memacct *sock_open(void);

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

/** sock_current() - current usage of @path as the socket reads it, on a connection of its own.
 * Return: bytes. */
uint64_t sock_current(const char *path);

/** bus_wait_for() - process @bus until *@done or WAIT_MSEC pass. Return: *@done. */
bool bus_wait_for(sd_bus *bus, const bool *done);

/** current_becomes() - wait up to WAIT_MSEC for MemoryCurrent of @path to read @want over @bus.
 * Return: whether it did (saying what it read when not). */
bool current_becomes(sd_bus *bus, const char *path, uint64_t want);

/** create_bus() - CreateGroup @path over @bus, with MemoryMax @max unless 0; fail the test if
 * refused. */
void create_bus(sd_bus *bus, const char *path, uint64_t max);
