/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pressure: the time a group's charges spend waiting for reclaim, as the
 * kernel's PSI (kernel/sched/psi.c) measures the time a cgroup's tasks
 * stall on memory: "some" while at least one charge of the subtree waits,
 * "full" while every session attached in the subtree waits, each as a
 * total and as running averages over 10, 60 and 300 s (docs/reclaim.md,
 * "Pressure").
 *
 * The service says when a stall begins and ends; the core keeps the
 * figures, with the time the caller gives (µs, one monotonic clock for
 * every call), so that tests drive it by hand. No timer: the averages are
 * rolled forward when a figure is read or a stall begins or ends, so
 * groups nobody reads cost nothing while idle. A group's record is
 * allocated at its first stall (a group that never stalls pays for a
 * pointer only) and freed with the group.
 */

#include <stdint.h>

#include "model.h"

typedef struct MemCore MemCore;
typedef struct MemGroup MemGroup;
typedef struct MemPressure MemPressure;

/* The kernel's averaging period, psi_period (PSI_FREQ: 2 s). */
#define PRESSURE_PERIOD_USEC (2 * UINT64_C(1000000))

/**
 * pressure_stall_begin() - a charge of @g starts waiting at @now_usec: it
 * counts as a stall in @g and in every ancestor, psi_group_change() of a
 * task entering a memory stall. The sessions attached in each one's
 * subtree are counted again now, for full (the tree is walked: a slow
 * path). References are taken on @g and its ancestors until
 * pressure_stall_end(). Any registered thread, outside core_read_lock().
 *
 * Return: 0; -ENOENT (@g or an ancestor is being removed: nothing is
 * counted); -ENOMEM (nothing is counted).
 */
int pressure_stall_begin(MemCore *core, MemGroup *g, uint64_t now_usec);

/**
 * pressure_stall_end() - the charge pressure_stall_begin(@g) counted stops
 * waiting at @now_usec; the references taken then are dropped. Once per
 * successful begin, from any registered thread, outside core_read_lock().
 */
void pressure_stall_end(MemCore *core, MemGroup *g, uint64_t now_usec);

/**
 * pressure_read() - @g's memory.pressure at @now_usec into @ret (zeros for
 * a group that never stalled), after rolling its averages forward
 * (psi_show()). @g is held by the caller (a reference or the read lock).
 * Any thread, inside core_read_lock() or not: nobody waits for a grace
 * period while holding the pressure lock.
 */
void pressure_read(MemCore *core, MemGroup *g, uint64_t now_usec, MemPressureFigures ret[_MEM_PRESSURE_MAX]);

/** pressure_free() - free a group's record, when the group is freed. Accepts NULL. Return: NULL. */
MemPressure *pressure_free(MemPressure *pr);
