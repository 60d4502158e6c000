/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * org.memacct1.Group: one bus object per group, served by a fallback
 * vtable and a node enumerator (groups.c), so that groups need no
 * registration of their own.
 */

#include "core/model.h"

typedef struct BusManager BusManager;

/* What the Group property getters read: the group the last find callback
 * resolved, copied, so that no reference outlives the message. */
typedef struct BusGroupView {
        char path[MEM_PATH_MAX + 1];
        MemGroupInfo info;
} BusGroupView;

/** bus_group_register() - the Group fallback vtable and the node enumerator on @m->bus. */
int bus_group_register(BusManager *m);
