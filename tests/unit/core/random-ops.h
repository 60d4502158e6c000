/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The workers of core-concurrency-random: the shared state of one run and
 * the random operations each worker thread makes, with the exact records it
 * keeps of what succeeded (random-ops.c). The test itself, its phases and
 * the invariants checked against the records are in
 * test-concurrency-random.c.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

#define NWORKERS 4
#define NSESS 2
#define CHARGE_MAX_1 65536    /* phase 1: largest random charge */
#define CHARGE_MAX_2 32768    /* phase 2 */
#define SESSION_CAP (1 << 20) /* a session holds at most this */
#define KEPT_CAP (1 << 20)    /* a thread keeps at most this per group */
#define PHASE1_USEC 2000000
#define PHASE2_USEC 1500000
#define PHASE1_OPS 1000000 /* per thread */
/* Phase 1 alternates free windows with windows in which one subtree is
 * banned: nobody charges or moves into it and threads drain what they hold
 * there, so that removals (and re-creations) happen under load. */
#define BAN_WINDOW_USEC 40000
#define ROUND_OPS 200
#define MAX_ROUNDS 1000
/* Phase 2, between barriers: usage may pass max by what is in flight (a
 * try-charge adds before it compares), at most one operation per worker. */
#define INFLIGHT_SLACK ((int64_t) NWORKERS * MAX(CHARGE_MAX_2, SESSION_CAP))

/* The groups the workers use, and each one's parent (-1 for the root). */
#define NPOOL 8
extern const char *const pool[NPOOL];
extern const int pool_parent[NPOOL];

typedef struct Sess {
        MemSession *s;
        int path; /* index in pool, -1: not attached */
        int64_t held[_MEM_STAT_MAX];
} Sess;

typedef struct Stress Stress;

typedef struct Worker {
        pthread_t thread;
        Stress *st;
        unsigned idx;
        pid_t pid;
        uint64_t rng;
        int64_t kept[NPOOL][_MEM_STAT_MAX];
        Sess sess[NSESS];
        int banned; /* pool index whose subtree is banned now, or -1 */
        unsigned long ops, charged, refused, moved, removed, drained;
} Worker;

struct Stress {
        MemCore *core;
        int phase;
        uint64_t start, deadline;
        pthread_barrier_t barrier; /* phase 2: workers + checker */
        _Atomic unsigned arrived;
        _Atomic bool stop;
        unsigned long rounds, slack_checks;
        MemGroup *fixed[NPOOL]; /* phase 2: every pool group, referenced */
        /* Removing a group releases what is kept in it, whoever kept it:
         * kept charges and uncharges hold their group's lock shared, and a
         * removal holds its subtree's exclusively and only goes ahead when
         * nobody's books show anything kept there. */
        pthread_rwlock_t kept_lock[NPOOL];
        _Atomic int64_t kept_total[NPOOL];
        Worker w[NWORKERS];
};

/**
 * update_ban() - in phase 1, ban the subtree whose window the clock is in,
 * or none in a free window; in phase 2 never. Called by @w's thread.
 */
void update_ban(Worker *w);

/**
 * phase1_op() - one random operation of phase 1: the tree (create, drain
 * and remove), limits, kept and session charges and uncharges, moves and
 * new sessions. Called by @w's thread only; other workers run theirs at the
 * same time.
 */
void phase1_op(Worker *w);

/**
 * phase2_op() - one random operation of phase 2, in which the tree and the
 * limits stay fixed: charges, uncharges and moves only. Called by @w's
 * thread only.
 */
void phase2_op(Worker *w);
