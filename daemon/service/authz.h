/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Who may do what to which group: the rules, as pure functions of the
 * caller's uid (and pid) and the group. They follow cgroup delegation:
 * root may do everything; a uid owning a group (its delegate) may charge
 * in that subtree, and create, remove and set limits strictly inside it,
 * never on the delegated group itself, whose budget belongs to whoever
 * delegated it. Reads are open to all unless the configuration says
 * otherwise (ReadAccess).
 *
 * Nothing here keeps state or looks anything up: the service operations
 * (service-*.c) look the groups up and call these. Any thread, under the
 * caller's references to the groups it passes.
 */

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/config.h"

typedef struct MemGroup MemGroup;

/** authz_may_read() - may @uid read @g (show, list, properties, events)? */
bool authz_may_read(ReadAccess access, uid_t uid, MemGroup *g);

/** authz_may_use() - may @uid charge @g, attach to it, move into it: the delegated group and below. */
bool authz_may_use(uid_t uid, MemGroup *g);

/** authz_may_modify() - may @uid remove @g or set its limits: strictly below a delegated group. */
bool authz_may_modify(uid_t uid, MemGroup *g);

/** authz_may_create_in() - may @uid create a child of @parent: @parent is delegated to it. */
bool authz_may_create_in(uid_t uid, MemGroup *parent);

/** authz_may_give() - may @uid make @owner the owner of a group it creates: only root delegates to others. */
bool authz_may_give(uid_t uid, uid_t owner);

/** authz_may_reset_peak() - may @uid reset @g's peak: modify rights, or @g delegated to @uid itself. */
bool authz_may_reset_peak(uid_t uid, MemGroup *g);

/** authz_may_read_client() - may @uid (of pid @self) read the counters of pid @pid? */
bool authz_may_read_client(ReadAccess access, uid_t uid, pid_t self, pid_t pid);

/** authz_may_move() - may @uid (of pid @self) move the sessions of pid @pid (0: its own)? */
bool authz_may_move(uid_t uid, pid_t self, pid_t pid);

/**
 * authz_may_force() - may @uid force a charge past max? Forcing overrides
 * every max above, including those whoever delegated the subtree set:
 * only root may.
 */
bool authz_may_force(uid_t uid);

/** authz_may_import() - may @uid mirror kernel cgroups (it creates groups anywhere): root only. */
bool authz_may_import(uid_t uid);

/** authz_may_place() - may @uid add or remove placement rules (they steer anyone's sessions): root only. */
bool authz_may_place(uid_t uid);
