/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Effective memory protection (effective min and low), the kernel's
 * page_counter_calculate_protection() / effective_protection().
 */

#include <stdbool.h>
#include <stdint.h>

#include "counter.h"

/**
 * effective_protection() - one level of the kernel's computation.
 * @usage: the child's usage
 * @parent_usage: the parent's usage
 * @setting: the child's min (or low)
 * @parent_effective: the parent's effective min (or low)
 * @siblings_protected: the parent's children_min_usage (or _low_)
 * @recursive: the memory_recursiveprot mode
 *
 * Pure integer arithmetic, multiply before divide, every division guarded.
 */
int64_t effective_protection(int64_t usage, int64_t parent_usage, int64_t setting,
                             int64_t parent_effective, int64_t siblings_protected,
                             bool recursive);

/**
 * counter_effective_protection() - effective min and low of @c when
 * reclaim targets @root (NULL: the tree's root).
 *
 * The kernel computes this statefully in a top-down walk and caches it in
 * the counter. Here it is a pure function of the path from @root to @c
 * (O(depth)), so concurrent readers with different reclaim roots never
 * disturb each other. As in the kernel, @root itself reads 0 (reclaim of a
 * target never protects the target), and so does a counter with no usage
 * (the kernel leaves a stale value there; nothing is left to protect).
 * @c must be @root or below it.
 */
void counter_effective_protection(const MemCounter *root, const MemCounter *c, bool recursive,
                                  int64_t *ret_emin, int64_t *ret_elow);
