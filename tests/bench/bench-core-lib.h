/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The harness of bench-core: options, clocks, pinning, fresh cores, the
 * timed charge loops and a crew of registered threads. The scenarios
 * (bench-core.c, bench-core-scale.c) build on it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

#define MAX_WORKERS 8
#define PAGE 4096u
/* Calls a worker makes between two looks at the clock. */
#define CALLS_PER_CHECK 384u
/* Attempts at a measurement whose workers had to share their CPUs, and
 * the share of wall time on the CPU below which an attempt is retried. */
#define RUN_ATTEMPTS 2
#define RUN_ON_CPU_MIN 0.9

/* Options (bench-core.c parses them). */
extern uint64_t arg_duration_ns;
extern uint64_t arg_warmup_ns;
extern unsigned arg_mem_groups;
extern unsigned arg_million_groups;
extern unsigned arg_million_sec;
extern bool arg_quick;
extern bool arg_verbose;
extern bool arg_wall;
extern bool arg_fifo;

/* An item that feeds no RSS member: fast path 4 stays out of the way. */
extern MemStatItem item_plain;

/** bench_init() - the affinity mask and item_plain; once, before anything else. */
void bench_init(void);

/** die() - print "bench-core: @what: <errno @r>" and exit with a failure. */
_Noreturn void die(const char *what, int r);
/** check() - die() when @r < 0. */
void check(const char *what, int r);

/** clock_ns() - @id's time in ns. */
uint64_t clock_ns(clockid_t id);
/** now_ns() - CLOCK_MONOTONIC in ns. */
uint64_t now_ns(void);

/** pin_to() - pin the calling thread to the @i-th CPU of the mask (modulo its size). */
void pin_to(unsigned i);
/** fifo_enter() - with --fifo, the calling thread under SCHED_FIFO (a warning once if refused). */
void fifo_enter(void);

/**
 * core_make() - a fresh core for @max_groups groups, the caller registered;
 * room for the main thread and every worker of every attempt.
 */
MemCore *core_make(unsigned max_groups);

/* core_make()'s cores keep a charge stock per thread (stock.h) while set. */
extern bool bench_charge_stock;
/** core_done() - free @core made by core_make(), then unregister the caller. */
void core_done(MemCore *core);
/** group_make() - create @path (an existing one is fine) and return a reference. */
MemGroup *group_make(MemCore *core, const char *path);

/** median_u64() - sort @v (@n > 0 values) and return the median. */
double median_u64(uint64_t *v, size_t n);
/** heap_in_use() - bytes malloc has handed out, every arena and mmapped block. */
size_t heap_in_use(void);

/* ---- timed loops ---- */

typedef enum LoopKind {
        LOOP_SESSION,      /* session_charge + session_uncharge of bytes */
        LOOP_KEPT,         /* group_charge_kept + group_uncharge_kept of bytes */
        LOOP_SESSION_WAVE, /* charge 4 pages one by one, uncharge 1, 1, 2 */
        LOOP_SESSION_REGION, /* session_charge_region + session_uncharge_region in run->region */
} LoopKind;

typedef struct Run Run;

typedef struct Worker {
        Run *run;
        unsigned idx;
        pthread_t tid;
        MemGroup *g;
        MemSession *s;
        uint64_t calls;
        uint64_t ns;
        uint64_t cpu_ns; /* CPU time of the thread over the same span */
        long nivcsw;     /* and its involuntary context switches */
} Worker;

struct Run {
        const char *name;
        unsigned nthreads;
        MemCore *core;
        LoopKind kind;
        MemStatItem item;
        int region; /* LOOP_SESSION_REGION: the region's key */
        uint64_t bytes;
        pid_t pids[MAX_WORKERS];
        char paths[MAX_WORKERS][64];
        pthread_barrier_t barrier;
        Worker workers[MAX_WORKERS];
};

/* One measurement's figures per operation and thread. */
typedef struct RunResult {
        double value;   /* what the line reports: cpu_ns, or wall_ns with --wall */
        double wall_ns; /* elapsed time per operation */
        double cpu_ns;  /* the thread's CPU time per operation */
} RunResult;

/**
 * run_execute() - start run->nthreads workers on run->paths, measure, and
 * print "<name> <threads> <value> wall=<ns> cpu=<ns>". An attempt whose
 * workers were off their CPUs is repeated; the best is kept and a warning
 * goes to stderr if even it was disturbed. Return: the figures printed.
 */
RunResult run_execute(Run *run);

/* ---- a crew of registered threads ---- */

typedef void (*CrewJob)(MemCore *core, unsigned idx, unsigned n, void *userdata);

typedef struct Crew Crew;

typedef struct CrewMember {
        Crew *crew;
        unsigned idx;
        pthread_t tid;
} CrewMember;

struct Crew {
        MemCore *core;
        unsigned n; /* threads in all, the caller (index 0) included */
        CrewMember members[MAX_WORKERS];
        pthread_barrier_t go, done;
        CrewJob job; /* NULL: leave */
        void *userdata;
};

/**
 * crew_start() - @n - 1 threads registered with @core (pinned to CPUs 1..),
 * which with the calling thread (registered, index 0) make a crew of @n.
 */
void crew_start(Crew *c, MemCore *core, unsigned n);
/** crew_run() - every member runs @job(core, idx, n, @userdata) once; returns when all did. */
void crew_run(Crew *c, CrewJob job, void *userdata);
/** crew_stop() - the threads unregister and end. */
void crew_stop(Crew *c);

/* ---- the scenarios of bench-core-scale.c ---- */

void bench_mem_all(void);
void bench_flush_all(void);
void bench_million(void);
