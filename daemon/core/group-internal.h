/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Group helpers shared inside the core only. */

#include <stddef.h>

#include "group.h"
#include "rcu-tsan.h"

/*
 * Iterate over the children of @g under RCU (or tree_lock). Not
 * cds_list_for_each_entry_rcu(): its end test forms a MemGroup pointer
 * from the list head, which lies in no MemGroup: undefined behaviour, and
 * misaligned for this 64-byte-aligned type.
 */
static inline MemGroup *group_child_of(struct cds_list_head *it) {
        MemGroup *c = caa_container_of(it, MemGroup, siblings);

        rcu_tsan_consume(c);
        return c;
}

#define group_for_each_child(c, g, it)                                                       \
        for (struct cds_list_head *it = rcu_list_next(&(g)->children);                        \
             it != &(g)->children && ((c) = group_child_of(it));                               \
             it = rcu_list_next(it))

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
