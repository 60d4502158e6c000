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

bool authz_may_read(ReadAccess access, uid_t uid, MemGroup *g) {
        switch (access) {
        case READ_ACCESS_ROOT:
                return uid == 0;
        case READ_ACCESS_OWNER:
                return uid == 0 || group_is_delegated_to(g, uid);
        default:
                return true;
        }
}

bool authz_may_use(uid_t uid, MemGroup *g) {
        return uid == 0 || group_is_delegated_to(g, uid);
}

bool authz_may_modify(uid_t uid, MemGroup *g) {
        return uid == 0 || (g->parent && group_is_delegated_to(g->parent, uid));
}

bool authz_may_create_in(uid_t uid, MemGroup *parent) {
        return authz_may_use(uid, parent);
}

bool authz_may_give(uid_t uid, uid_t owner) {
        return uid == 0 || owner == uid;
}

bool authz_may_reset_peak(uid_t uid, MemGroup *g) {
        return authz_may_modify(uid, g) || (uid != 0 && group_is_delegated_to(g, uid));
}

bool authz_may_read_client(ReadAccess access, uid_t uid, pid_t self, pid_t pid) {
        return pid == self || uid == 0 || access == READ_ACCESS_ALL;
}

bool authz_may_move(uid_t uid, pid_t self, pid_t pid) {
        return pid == 0 || pid == self || uid == 0;
}

bool authz_may_force(uid_t uid) {
        return uid == 0;
}

bool authz_may_import(uid_t uid) {
        return uid == 0;
}

bool authz_may_place(uid_t uid) {
        return uid == 0;
}
