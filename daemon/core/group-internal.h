/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Group helpers shared inside the core only. */

#include <stddef.h>

#include "group.h"

#define group_from_counter(c) ((MemGroup *) ((char *) (c) - offsetof(MemGroup, counter)))

int group_create_root(MemCore *core);
void group_free_tree(MemCore *core);

/**
 * group_attach() - count a session in @g and take a reference, unless @g
 * is being removed. Return: 0 or -ENOENT.
 */
int group_attach(MemGroup *g);
void group_detach(MemGroup *g);

/** group_common_ancestor() - the deepest group above or equal to both. */
MemGroup *group_common_ancestor(MemGroup *a, MemGroup *b);
