/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test-dbus-client's tests share (dbus-client-util.c): the daemon's
 * addresses, a handle on each transport, groups made and read over a
 * socket connection of their own, and one call's results compared both
 * ways. Each helper fails the running test (cmocka) rather than return an
 * error; none may be called outside a test.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memacct.h>

#define K UINT64_C(1024)
#define WAIT_MSEC 10000

/* The daemon under test: $MEMACCT_TEST_BUS and $MEMACCT_TEST_SOCKET, set
 * by main() before any test runs. */
extern const char *bus_address;
extern const char *socket_path;

/** now_msec() - CLOCK_MONOTONIC. Return: milliseconds. */
uint64_t now_msec(void);

/** sleep_msec() - sleep for @msec milliseconds. */
void sleep_msec(unsigned msec);

/** sock_open() - a new socket handle on socket_path. Return: the handle. */
memacct *sock_open(void);

/** bus_open() - a new bus handle on bus_address. Return: the handle. */
memacct *bus_open(void);

/** create() - create group @path over the socket, with the limits of @set (MEMACCT_LIMIT_*)
 * among @max and @high, and no owner. */
void create(const char *path, unsigned set, uint64_t max, uint64_t high);

/** current() - the exact current usage of @path, read over a socket connection of its own.
 * Return: bytes. */
uint64_t current(const char *path);

/** current_soon() - wait up to WAIT_MSEC until current(@path) is @want. Return: the last value
 * read. */
uint64_t current_soon(const char *path, uint64_t want);

/**
 * assert_same() - fail the test unless the socket's result @rs (message @es) and the bus's @rb
 * (message @eb) are both @want and, for an error, the messages are the same.
 * @what: the call, for the failure's words.
 */
void assert_same(const char *what, int rs, const char *es, int rb, const char *eb, int want);

/** last_error() - copy @m's last error into @buf and its refused path into @refused ("-" for
 * none) after a call that returned @r: memacct_last_error() keeps only a thread's last. */
void last_error(memacct *m, int r, char *buf, size_t size, char *refused, size_t rsize);
