/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Who may do what to which group: delegation, as pure functions of who
 * asks (AuthzWho) and the group. It follows cgroup delegation: root may
 * do everything; a uid owning a group (its delegate) may charge in that
 * subtree, and create, remove and set limits strictly inside it, never
 * on the delegated group itself, whose budget belongs to whoever
 * delegated it. Reads are open to all unless the configuration says
 * otherwise (ReadAccess).
 *
 * Confinement: a peer whose kernel cgroup lies under a confining
 * placement rule's cgroup (a container's, as the OCI hook adds it) is
 * confined to that rule's group, whatever its uid: it is the delegate of
 * that group and of nothing else, and never root. So a container's root
 * charges, attaches and creates inside its group, changes limits only
 * strictly inside it (a container cannot raise its own max, as with a
 * delegated cgroup), forces nothing, places and imports nothing, and
 * reads outside its group only as [access] confined-read allows
 * (ConfinedRead). A confined peer whose group is gone may do nothing.
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

/* Who asks: what authorisation looks at. */
typedef struct AuthzWho {
        uid_t uid;       /* as the kernel (SO_PEERCRED) or the bus daemon vouched for it */
        pid_t pid;
        bool confined;   /* only inside @scope, whatever @uid */
        MemGroup *scope; /* with confined: its group (a reference, the peer's); NULL: gone, nothing */
} AuthzWho;

/** authz_is_root() - does @who have root's rights: uid 0, not confined? */
static inline bool authz_is_root(const AuthzWho *who) {
        return who->uid == 0 && !who->confined;
}

/** authz_may_read() - may @who read @g (show, list, properties, events)? */
bool authz_may_read(ReadAccess access, ConfinedRead confined, const AuthzWho *who, MemGroup *g);

/** authz_may_use() - may @who charge @g, attach to it, move into it: the delegated group and below. */
bool authz_may_use(const AuthzWho *who, MemGroup *g);

/** authz_may_modify() - may @who remove @g or set its limits: strictly below a delegated group. */
bool authz_may_modify(const AuthzWho *who, MemGroup *g);

/** authz_may_create_in() - may @who create a child of @parent: @parent is delegated to it. */
bool authz_may_create_in(const AuthzWho *who, MemGroup *parent);

/**
 * authz_may_give() - may @who make @owner the owner of a group it creates:
 * only root delegates to others, and a confined peer to nobody (its
 * groups are its account's, service_account()).
 */
bool authz_may_give(const AuthzWho *who, uid_t owner);

/** authz_may_reset_peak() - may @who reset @g's peak: modify rights, or @g delegated to @who itself. */
bool authz_may_reset_peak(const AuthzWho *who, MemGroup *g);

/** authz_may_read_client() - may @who read the counters of pid @pid? */
bool authz_may_read_client(ReadAccess access, const AuthzWho *who, pid_t pid);

/** authz_may_move() - may @who move the sessions of pid @pid (0: its own)? */
bool authz_may_move(const AuthzWho *who, pid_t pid);

/**
 * authz_may_force() - may @who force a charge past max? Forcing overrides
 * every max above, including those whoever delegated the subtree set:
 * only root may.
 */
bool authz_may_force(const AuthzWho *who);

/** authz_may_import() - may @who mirror kernel cgroups (it creates groups anywhere): root only. */
bool authz_may_import(const AuthzWho *who);

/** authz_may_place() - may @who add or remove placement rules (they steer anyone's sessions): root only. */
bool authz_may_place(const AuthzWho *who);
