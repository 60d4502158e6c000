/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Session and client helpers shared inside the core only (session.c, move.c). */

#include <stdatomic.h>
#include <stdint.h>

#include "session.h"

static inline int64_t load64(_Atomic int64_t *v) {
        return atomic_load_explicit(v, memory_order_relaxed);
}

/* A single writer's update: the atomics only make concurrent readers
 * well-defined, and compile to a plain load and store. */
static inline void store64(_Atomic int64_t *v, int64_t x) {
        atomic_store_explicit(v, x, memory_order_relaxed);
}

/**
 * client_lookup() - the client of process @pid instance @instance, or
 * NULL. The caller is in an RCU read-side section.
 */
MemClient *client_lookup(MemCore *core, pid_t pid, uint64_t instance);
