/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the core's test programs share: a fresh MemCore for each test, group
 * lookups that fail the test or report NULL, random numbers, a clock, and
 * CHECK, the assertion for threads that must not call cmocka.
 *
 * Functions that use cmocka's assertions fail the test from the main thread
 * only; the ones marked "any thread" never call cmocka.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "group.h"
#include "test-support.h"

#define KiB ((uint64_t) 1 << 10)
#define MiB ((uint64_t) 1 << 20)
#define PAGE 4096

/* ---- fixtures ------------------------------------------------------------ */

/**
 * setup_core_with() - cmocka setup: a new core made from @config in *@state,
 * with the calling thread registered in it, and no CHECK failure recorded.
 * Return: 0, -1 if the core cannot be made.
 */
int setup_core_with(void **state, MemCoreConfig config);

/** setup_core() - setup_core_with() the default configuration. */
int setup_core(void **state);

/** teardown_core() - cmocka teardown: unregister the thread, free the core. */
int teardown_core(void **state);

/* A test that gets a default core from setup_core() as its *state. */
#define CORE_TEST(f) cmocka_unit_test_setup_teardown(f, setup_core, teardown_core)

/* ---- groups -------------------------------------------------------------- */

/**
 * take_group() - a reference to the group at @path, which must exist; the
 * caller drops it with group_unref(). Main thread only: fails the test if
 * there is no such group.
 */
MemGroup *take_group(MemCore *core, const char *path);

/**
 * find_group() - a reference to the group at @path, or NULL when there is
 * none (now). Any thread.
 */
MemGroup *find_group(MemCore *core, const char *path);

/**
 * make_group() - create @path unless it exists (its parent must), and
 * return a reference to it. Main thread only.
 */
MemGroup *make_group(MemCore *core, const char *path);

/**
 * read_info() - group_read() of @g with the core's root as reclaim root,
 * into a struct poisoned first so that a field it fails to write shows.
 * Any thread.
 */
MemGroupInfo read_info(MemCore *core, MemGroup *g, bool exact);

/** read_usage() - @g's current usage as group_read() reports it. Any thread. */
uint64_t read_usage(MemCore *core, MemGroup *g);

/** usage_of() - @g's counter usage, read directly. Any thread. */
uint64_t usage_of(MemGroup *g);

/** refs_of() - @g's reference count now. Any thread. */
unsigned refs_of(MemGroup *g);

/**
 * deep_path() - "/l1/l2/.../l<depth>" into @buf of @size bytes. Main thread
 * only: fails the test if it does not fit.
 */
void deep_path(char *buf, size_t size, unsigned depth);

/* ---- random numbers (the clock: test-support.h) -------------------------- */

/**
 * rnd() - the next xorshift64* number from *@state, which belongs to one
 * thread (never 0). Any thread, each with its own state.
 */
uint64_t rnd(uint64_t *state);

/**
 * seed_base() - $MEMACCT_TEST_SEED if set, to replay a run, else the
 * clock; never 0. The test prints it. Any thread.
 */
uint64_t seed_base(void);

/* ---- failures recorded off the main thread -------------------------------- */

/**
 * check_failed() - record a broken invariant at @file:@line; the first
 * message is kept for assert_no_failures(). Any thread, through CHECK.
 */
void check_failed(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Worker threads never call cmocka: they CHECK, and the main thread calls
 * assert_no_failures() after joining them. */
#define CHECK(cond, ...)                                              \
        do {                                                          \
                if (!(cond))                                          \
                        check_failed(__FILE__, __LINE__, __VA_ARGS__); \
        } while (0)

/** check_reset() - forget the failures recorded so far. Main thread only. */
void check_reset(void);

/**
 * assert_no_failures() - fail the test with the count and the first message
 * if any CHECK failed since the last reset. Main thread only.
 */
void assert_no_failures(void);
