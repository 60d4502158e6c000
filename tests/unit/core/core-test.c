/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers the core's test programs share (core-test.h).
 *
 * Each test owns one core for its duration, made by its setup and freed by
 * its teardown. Failures CHECKed by worker threads are collected under one
 * mutex for the whole program: a program runs one test at a time, and the
 * setup forgets what the previous test left.
 */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core-test.h"

/* ---- fixtures ------------------------------------------------------------ */

int setup_core_with(void **state, MemCoreConfig config) {
        MemCore *core = NULL;

        if (core_new(&config, &core) < 0)
                return -1;
        if (core_thread_register(core) < 0) {
                core_free(core);
                return -1;
        }
        check_reset();
        *state = core;
        return 0;
}

int setup_core(void **state) {
        return setup_core_with(state, MEM_CORE_CONFIG_DEFAULT);
}

int teardown_core(void **state) {
        MemCore *core = *state;

        core_thread_unregister(core);
        core_free(core);
        return 0;
}

/* ---- groups -------------------------------------------------------------- */

MemGroup *take_group(MemCore *core, const char *path) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        assert_non_null(g);
        assert_string_equal(g->path, path);
        return g;
}

MemGroup *find_group(MemCore *core, const char *path) {
        MemGroup *g = NULL;

        return group_get(core, path, &g) == 0 ? g : NULL;
}

MemGroup *make_group(MemCore *core, const char *path) {
        int r = group_create(core, path, 0);

        if (r != -EEXIST)
                assert_int_equal(r, 0);
        return find_group(core, path);
}

MemGroupInfo read_info(MemCore *core, MemGroup *g, bool exact) {
        MemGroupInfo info;

        memset(&info, 0xa5, sizeof(info)); /* every field must be written */
        group_read(core, g, NULL, exact, &info);
        return info;
}

uint64_t read_usage(MemCore *core, MemGroup *g) {
        return read_info(core, g, false).current;
}

uint64_t usage_of(MemGroup *g) {
        return (uint64_t) counter_read(&g->counter);
}

unsigned refs_of(MemGroup *g) {
        return atomic_load(&g->refs);
}

void deep_path(char *buf, size_t size, unsigned depth) {
        size_t n = 0;

        buf[0] = 0;
        for (unsigned i = 1; i <= depth; i++) {
                int k = snprintf(buf + n, size - n, "/l%u", i);

                assert_true(k > 0 && (size_t) k < size - n);
                n += (size_t) k;
        }
}

/* ---- random numbers ------------------------------------------------------- */

uint64_t rnd(uint64_t *state) {
        uint64_t x = *state;

        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        return x * 0x2545F4914F6CDD1DULL;
}

uint64_t seed_base(void) {
        const char *e = getenv("MEMACCT_TEST_SEED");
        uint64_t s = e ? strtoull(e, NULL, 0) : now_usec();

        return s ? s : 1;
}

/* ---- failures recorded off the main thread -------------------------------- */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned fail_count;
static char fail_first[512];

void check_failed(const char *file, int line, const char *fmt, ...) {
        va_list ap;

        pthread_mutex_lock(&fail_lock);
        if (fail_count++ == 0) {
                const char *base = strrchr(file, '/');
                int n = snprintf(fail_first, sizeof(fail_first), "%s:%d: ",
                                 base ? base + 1 : file, line);

                if (n > 0 && (size_t) n < sizeof(fail_first)) {
                        va_start(ap, fmt);
                        vsnprintf(fail_first + n, sizeof(fail_first) - (size_t) n, fmt, ap);
                        va_end(ap);
                }
        }
        pthread_mutex_unlock(&fail_lock);
}

void check_reset(void) {
        pthread_mutex_lock(&fail_lock);
        fail_count = 0;
        fail_first[0] = 0;
        pthread_mutex_unlock(&fail_lock);
}

void assert_no_failures(void) {
        char msg[sizeof(fail_first)];
        unsigned n;

        pthread_mutex_lock(&fail_lock);
        n = fail_count;
        memcpy(msg, fail_first, sizeof(msg));
        pthread_mutex_unlock(&fail_lock);
        if (n > 0)
                fail_msg("%u broken invariant(s); first: %s", n, msg);
}
