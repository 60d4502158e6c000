/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request rules shared by the transports
 *
 * Authorisation follows cgroup delegation: root may do everything; a uid
 * owning a group (its delegate) may charge in that subtree, and create,
 * remove and set limits strictly inside it, never on the delegated group
 * itself, whose budget belongs to whoever delegated it. Reads are open to
 * all unless the configuration says otherwise.
 *
 * Identity is whatever the transport's kernel or bus daemon vouched for
 * (SO_PEERCRED on the socket, GetConnectionCredentials on the bus); these
 * functions only see the uid and pid it produced.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"

static int message(char *msg, size_t size, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int message(char *msg, size_t size, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
        return r;
}

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

bool authz_may_reset_peak(uid_t uid, MemGroup *g) {
        return authz_may_modify(uid, g) || (uid != 0 && group_is_delegated_to(g, uid));
}

bool authz_may_read_client(ReadAccess access, uid_t uid, pid_t self, pid_t pid) {
        return pid == self || uid == 0 || access == READ_ACCESS_ALL;
}

bool authz_may_move(uid_t uid, pid_t self, pid_t pid) {
        return pid == 0 || pid == self || uid == 0;
}

const char *authz_errno_text(int r) {
        switch (r) {
        case -ENOENT: return "no such group";
        case -EEXIST: return "group exists";
        case -EBUSY: return "group is in use";
        case -EDQUOT: return "limit exceeded";
        case -ERANGE: return "more than is held";
        case -ENOSPC: return "group limit reached";
        case -EMLINK: return "too deep";
        case -ENOTCONN: return "session not attached to a group";
        case -EOVERFLOW: return "size too large";
        case -EPERM: return "permission denied";
        case -ESRCH: return "no such client";
        default: return strerror(-r);
        }
}

int authz_path_message(int r, const char *path, char *msg, size_t size) {
        MemPathError why = MEM_PATH_OK;

        if (r == -EINVAL || r == -ENAMETOOLONG || r == -EMLINK) {
                if (group_path_check(path, UINT32_MAX, &why) < 0 || why != MEM_PATH_OK)
                        return message(msg, size, r, "%s: %s", path ? path : "(none)",
                                       mem_path_error_to_string(why));
        }
        return message(msg, size, r, "%s: %s", path ? path : "(none)", authz_errno_text(r));
}

int authz_denied_message(const char *path, char *msg, size_t size) {
        return message(msg, size, -EPERM, "%s: permission denied", path);
}

int authz_refused_message(const char *path, const MemChargeResult *res, char *msg, size_t size) {
        return message(msg, size, -EDQUOT, "%s: limit exceeded (max of %s)", path,
                       res->refused ? res->refused->path : "?");
}

int authz_lookup(MemCore *core, const char *path, MemGroup **ret, char *msg, size_t size) {
        int r;

        if (!path || !*path)
                return message(msg, size, -EINVAL, "a group path is required");
        r = group_path_check(path, core->config.max_depth, NULL);
        if (r < 0)
                return authz_path_message(r, path, msg, size);
        r = group_get(core, path, ret);
        if (r < 0)
                return authz_path_message(r, path, msg, size);
        return 0;
}

int authz_lookup_use(MemCore *core, uid_t uid, const char *path, MemGroup **ret, char *msg, size_t size) {
        MemGroup *g = NULL;
        int r;

        r = authz_lookup(core, path, &g, msg, size);
        if (r < 0)
                return r;
        if (!authz_may_use(uid, g)) {
                r = authz_denied_message(g->path, msg, size);
                group_unref(g);
                return r;
        }
        *ret = g;
        return 0;
}

int authz_parse_stat(const char *s, MemStatItem *ret, char *msg, size_t size) {
        MemStatItem i;

        if (!s || !*s) {
                *ret = MEM_STAT_ANON;
                return 0;
        }
        i = mem_stat_item_from_string(s);
        if (i < 0)
                return message(msg, size, -EINVAL, "unknown stat item '%s'", s);
        *ret = i;
        return 0;
}

/* The parent of a valid path other than "/", with a reference; NULL if none. */
static MemGroup *parent_of(MemCore *core, const char *path) {
        char buf[MEM_PATH_MAX + 1];
        const char *slash = strrchr(path, '/');
        MemGroup *p = NULL;

        if (!slash || (size_t) (slash - path) > MEM_PATH_MAX)
                return NULL;
        if (slash == path)
                strcpy(buf, "/");
        else {
                memcpy(buf, path, (size_t) (slash - path));
                buf[slash - path] = 0;
        }
        (void) group_get(core, buf, &p);
        return p;
}

int authz_check_create(MemCore *core, uid_t uid, const char *path, bool has_owner, uid_t owner,
                       uid_t *ret_owner, char *msg, size_t size) {
        _cleanup_(group_unrefp) MemGroup *parent = NULL;
        int r;

        if (!path)
                return message(msg, size, -EINVAL, "a group path is required");
        r = group_path_check(path, core->config.max_depth, NULL);
        if (r < 0)
                return authz_path_message(r, path, msg, size);
        if (r == 0)
                return message(msg, size, -EEXIST, "/: the root always exists");
        parent = parent_of(core, path);
        if (!parent)
                return message(msg, size, -ENOENT, "%s: parent group does not exist", path);
        if (uid != 0 && !group_is_delegated_to(parent, uid))
                return message(msg, size, -EPERM, "%s: not delegated to uid %u", path, (unsigned) uid);
        if (has_owner && uid != 0 && owner != uid)
                return message(msg, size, -EPERM, "only root delegates to another uid");
        *ret_owner = has_owner ? owner : (uid == 0 ? 0 : uid);
        return 0;
}

int authz_apply_limits(MemGroup *g, const AuthzLimits *l, bool force, char *msg, size_t size) {
        int r;

        if (l->has_max) {
                r = group_set_max(g, l->max, force);
                if (r < 0)
                        return message(msg, size, r, AUTHZ_MSG_MAX_BELOW_USAGE, g->path);
        }
        if (l->has_high)
                group_set_high(g, l->high);
        if (l->has_low)
                group_set_low(g, l->low);
        if (l->has_min)
                group_set_min(g, l->min);
        return 0;
}

int authz_session_target(MemCore *core, MemSession *s, uid_t uid, const char *path, MemGroup **ret,
                         char *msg, size_t size) {
        MemGroup *attached = atomic_load(&s->group);
        MemGroup *g = NULL;
        int r;

        if (!path || !*path) {
                if (!attached)
                        return message(msg, size, -ENOTCONN, "session not attached to a group");
                *ret = group_ref(attached);
                return 0;
        }
        r = authz_lookup(core, path, &g, msg, size);
        if (r < 0)
                return r;
        if (attached && attached != g) {
                r = message(msg, size, -EINVAL, "%s: the session is attached to %s; move it first", path,
                            attached->path);
                group_unref(g);
                return r;
        }
        if (!attached) {
                if (!authz_may_use(uid, g)) {
                        group_unref(g);
                        return authz_denied_message(path, msg, size);
                }
                r = session_attach(s, g);
                if (r < 0) {
                        group_unref(g);
                        return authz_path_message(r, path, msg, size);
                }
        }
        *ret = g;
        return 0;
}

typedef struct Collect {
        MemGroup **v;
        size_t n, cap;
        MemGroup *top;
        bool recursive;
        int r;
} Collect;

static int collect_cb(MemGroup *g, void *userdata) {
        Collect *col = userdata;

        if (g == col->top && !col->recursive)
                return 0; /* the children only: visit them, not the top */
        if (col->n == col->cap) {
                size_t cap = col->cap ? col->cap * 2 : 16;
                MemGroup **v = realloc(col->v, cap * sizeof(*v));

                if (!v)
                        return col->r = -ENOMEM;
                col->v = v;
                col->cap = cap;
        }
        /* Found under RCU: it may be going away; then leave it out. */
        if (!group_tryget(g))
                return 1;
        col->v[col->n++] = g;
        /* Not recursive: the top's children, but not theirs. */
        return (!col->recursive && g != col->top) ? 1 : 0;
}

int authz_list_collect(MemGroup *top, bool recursive, MemGroup ***ret, size_t *ret_n) {
        Collect col = { .top = top, .recursive = recursive };

        core_read_lock();
        group_walk(top, collect_cb, &col);
        core_read_unlock();
        if (col.r < 0) {
                /* A partial list is no list: drop it here, so that the
                 * callers' error paths have nothing to free. */
                for (size_t i = 0; i < col.n; i++)
                        group_unref(col.v[i]);
                free(col.v);
                *ret = NULL;
                *ret_n = 0;
                return col.r;
        }
        *ret = col.v;
        *ret_n = col.n;
        return 0;
}
