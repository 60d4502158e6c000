/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules of authz.h. Identity is whatever the transport's kernel or
 * bus daemon vouched for (SO_PEERCRED on the socket,
 * GetConnectionCredentials on the bus); these functions only see the uid
 * and pid it produced.
 */

#include <string.h>

#include "core/group.h"
#include "service/authz.h"

/* Is @g inside what a confined @who may touch (its group and below)? */
static bool in_scope(const AuthzWho *who, MemGroup *g) {
        return who->scope && group_is_descendant(g, who->scope);
}

/* Strictly below a group delegated to @who: a confined peer's group, or one @who owns above. */
static bool below_delegated(const AuthzWho *who, MemGroup *g) {
        if (who->confined)
                return g->parent && in_scope(who, g->parent);
        return g->parent && group_is_delegated_to(g->parent, who->uid);
}

bool authz_may_read(ReadAccess access, ConfinedRead confined, const AuthzWho *who, MemGroup *g) {
        if (who->confined) {
                if (in_scope(who, g))
                        return true;
                if (confined == CONFINED_READ_SUBTREE)
                        return false;
                /* Otherwise as any other unprivileged uid, never as root. */
                return access == READ_ACCESS_ALL;
        }
        switch (access) {
        case READ_ACCESS_ROOT:
                return who->uid == 0;
        case READ_ACCESS_OWNER:
                return who->uid == 0 || group_is_delegated_to(g, who->uid);
        default:
                return true;
        }
}

bool authz_may_use(const AuthzWho *who, MemGroup *g) {
        if (who->confined)
                return in_scope(who, g);
        return who->uid == 0 || group_is_delegated_to(g, who->uid);
}

bool authz_may_modify(const AuthzWho *who, MemGroup *g) {
        return authz_is_root(who) || below_delegated(who, g);
}

bool authz_may_create_in(const AuthzWho *who, MemGroup *parent) {
        return authz_may_use(who, parent);
}

bool authz_may_give(const AuthzWho *who, uid_t owner) {
        if (who->confined)
                return false;
        return who->uid == 0 || owner == who->uid;
}

bool authz_may_reset_peak(const AuthzWho *who, MemGroup *g) {
        if (who->confined)
                return in_scope(who, g);
        return authz_may_modify(who, g) || (who->uid != 0 && group_is_delegated_to(g, who->uid));
}

bool authz_may_read_client(ReadAccess access, const AuthzWho *who, pid_t pid) {
        if (who->confined)
                return pid == who->pid;
        return pid == who->pid || who->uid == 0 || access == READ_ACCESS_ALL;
}

bool authz_may_move(const AuthzWho *who, pid_t pid) {
        return pid == 0 || pid == who->pid || authz_is_root(who);
}

bool authz_may_force(const AuthzWho *who) {
        return authz_is_root(who);
}

bool authz_may_import(const AuthzWho *who) {
        return authz_is_root(who);
}

bool authz_may_place(const AuthzWho *who) {
        return authz_is_root(who);
}
