/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the tests of device regions in the state share (region-test.c):
 * cores one thread switches between, a region's figures read and set by
 * name, and state directories restored into a fresh core. Every helper
 * fails the test on an error it does not return.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "core/group.h"
#include "core/model.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

#define GPU "gpu0"
#define VRAM "drm/0000:03:00.0/vram0"
#define DOTS "nv.0:a@b+c-d" /* dots in a name: a key is split at its last one */

/** rt_use() - register the calling thread with @core (and with no other). */
void rt_use(MemCore *core);

/** rt_core_new() - a core with the default configuration, the thread registered with it. */
MemCore *rt_core_new(void);

/** rt_core_free() - unregister from @core and free it. */
void rt_core_free(MemCore *core);

/** rt_group() - the group at @path, referenced; it must exist. */
MemGroup *rt_group(MemCore *core, const char *path);

/** rt_key() - the key of the registered @region. */
int rt_key(MemCore *core, const char *region);

/** rt_set_limits() - region_set_limits(), forced, of @path in @region. Return: its result. */
int rt_set_limits(MemCore *core, const char *path, const char *region, MemLimits l);

/** rt_kept() - region_charge_kept() of @bytes on @path in @region with @flags. Return: its result. */
int rt_kept(MemCore *core, const char *path, const char *region, uint64_t bytes, unsigned flags);

/** rt_info() - @path's counters in @region. */
MemRegionInfo rt_info(MemCore *core, const char *path, const char *region);

/** rt_delegator() - the delegator's part of @path's kept charges in @region. */
uint64_t rt_delegator(MemCore *core, const char *path, const char *region);

/** rt_assert_same_regions() - @path has the same counters with the same figures in @a and @b. */
void rt_assert_same_regions(MemCore *a, MemCore *b, const char *path);

/** rt_assert_same_region_list() - @a and @b have the same regions, capacities and usage. */
void rt_assert_same_region_list(MemCore *a, MemCore *b);

/** rt_dir_new() - a new temporary directory (free with rt_dir_free()). */
char *rt_dir_new(void);

/** rt_dir_free() - remove @dir with what is in it, and free the name. */
void rt_dir_free(char *dir);

/** rt_file_write() - @dir/@name holds the @n bytes at @data. */
void rt_file_write(const char *dir, const char *name, const char *data, size_t n);

/** rt_file_exists() - is there a @dir/@name? */
bool rt_file_exists(const char *dir, const char *name);

/**
 * rt_restored() - a fresh core (the thread registered with it) restored
 * from a directory holding the state @state and, unless NULL, the journal
 * @journal.
 */
MemCore *rt_restored(const char *state, size_t n, const char *journal, size_t jn);
