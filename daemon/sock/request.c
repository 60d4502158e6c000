/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request dispatch
 *
 * Each frame body is one memacct.v1.Request. Dispatch decodes it into a
 * per-thread arena (no malloc per request, and a hard cap on what a frame
 * may expand to), decides whether the peer may do it, makes one core
 * call, and encodes one Response straight into the connection's output
 * buffer. Identity is only what the kernel said at accept (SO_PEERCRED).
 *
 * Authorisation, lookups and the words of every refusal are authz.c's,
 * shared with the bus transport so that both answer alike.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authz.h"
#include "request.h"
#include "memacct.pb-c.h"
#include "session.h"
#include "status.h"
#include "wire.h"

#define STOCK_PAGE_SIZE 4096
/* A list response larger than this is refused: list a subtree instead. */
#define LIST_RESPONSE_MAX (16u << 20)

typedef struct UidCount {
        uid_t uid;
        unsigned n;
} UidCount;

typedef struct Subscription {
        DispatchConn *conn;
        struct cds_list_head link; /* Dispatch.subscriptions */
        char path[];
} Subscription;

/* The limits, read on every frame by every worker: one relaxed load each,
 * no lock (a mutex here was the one lock all workers shared per request).
 * A reload may change them one at a time; each is independent. */
typedef struct LiveLimits {
        _Atomic uint32_t max_frame;
        _Atomic uint64_t charge_batch;
        _Atomic unsigned max_sessions_per_uid;
        _Atomic int read_access;
} LiveLimits;

struct Dispatch {
        MemCore *core;
        pthread_mutex_t lock; /* uid counts */
        LiveLimits limits;
        UidCount *uids;
        size_t nuids;
        DispatchChangedFn changed;
        void *changed_userdata;

        pthread_mutex_t subs_lock;
        struct cds_list_head subscriptions;

        DispatchCgroupOps cgroup; /* set once, before the threads */

        MemEventHook sink; /* a second consumer of events (the bus) */
        void *sink_userdata;
        _Atomic unsigned nsessions;
};

struct DispatchConn {
        Dispatch *d;
        MemSession *session;
        pid_t pid;
        uid_t uid;
        gid_t gid;
        DispatchPushFn push;
        void *push_userdata;
        void *stock_page;
        unsigned nsubs;
};

static const char *const read_access_names[_READ_ACCESS_MAX] = {
        [READ_ACCESS_ALL] = "all",
        [READ_ACCESS_OWNER] = "owner",
        [READ_ACCESS_ROOT] = "root",
};

const char *read_access_to_string(ReadAccess a) {
        if (a < 0 || a >= _READ_ACCESS_MAX)
                return NULL;
        return read_access_names[a];
}

ReadAccess read_access_from_string(const char *s) {
        for (ReadAccess a = 0; a < _READ_ACCESS_MAX; a++)
                if (s && strcmp(s, read_access_names[a]) == 0)
                        return a;
        return _READ_ACCESS_INVALID;
}

/* ---- dispatch state ---- */

static void limits_set(Dispatch *d, const DispatchLimits *l) {
        atomic_store_explicit(&d->limits.max_frame, l->max_frame, memory_order_relaxed);
        atomic_store_explicit(&d->limits.charge_batch, l->charge_batch, memory_order_relaxed);
        atomic_store_explicit(&d->limits.max_sessions_per_uid, l->max_sessions_per_uid,
                              memory_order_relaxed);
        atomic_store_explicit(&d->limits.read_access, (int) l->read_access, memory_order_relaxed);
}

static void event_hook(MemGroup *g, MemEvent ev, uint64_t local, void *userdata);
static void state_changed(Dispatch *d);
static void move_hook(MemSession *s, MemGroup *dst, void *userdata);

int dispatch_new(MemCore *core, const DispatchLimits *limits, DispatchChangedFn changed,
                 void *changed_userdata, Dispatch **ret) {
        Dispatch *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        d->core = core;
        limits_set(d, limits);
        d->changed = changed;
        d->changed_userdata = changed_userdata;
        pthread_mutex_init(&d->lock, NULL);
        pthread_mutex_init(&d->subs_lock, NULL);
        CDS_INIT_LIST_HEAD(&d->subscriptions);
        core_set_event_hook(core, event_hook, d);
        core_set_move_hook(core, move_hook, d);
        *ret = d;
        return 0;
}

Dispatch *dispatch_free(Dispatch *d) {
        if (!d)
                return NULL;
        core_set_event_hook(d->core, NULL, NULL);
        core_set_move_hook(d->core, NULL, NULL);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->subs_lock);
        free(d->uids);
        free(d);
        return NULL;
}

void dispatch_set_limits(Dispatch *d, const DispatchLimits *limits) {
        limits_set(d, limits);
}

void dispatch_set_event_sink(Dispatch *d, MemEventHook sink, void *userdata) {
        d->sink = sink;
        d->sink_userdata = userdata;
}

void dispatch_set_cgroup_ops(Dispatch *d, const DispatchCgroupOps *ops) {
        d->cgroup = ops ? *ops : (DispatchCgroupOps) {};
}

int dispatch_cgroup_import(Dispatch *d, uid_t uid, const char *from, const char *under,
                           unsigned ret_counts[3], char *msg, size_t size) {
        int r;

        if (uid != 0) {
                snprintf(msg, size, "only root imports cgroups");
                return -EPERM;
        }
        if (!d->cgroup.import) {
                snprintf(msg, size, "no kernel cgroup mirror in this daemon");
                return -ENOENT;
        }
        r = d->cgroup.import(d->cgroup.userdata, from, under, ret_counts, msg, size);
        if (r > 0)
                state_changed(d);
        return r;
}

int dispatch_attach_path(Dispatch *d, pid_t pid, const char *path, char *buf, size_t buf_size,
                         const char **ret, char *msg, size_t size) {
        bool changed = false;
        int r;

        if (path && *path && strcmp(path, "auto") != 0) {
                *ret = path;
                return 0;
        }
        if (!d->cgroup.place) {
                snprintf(msg, size, "no group given, and no kernel cgroup mirror to place the session by");
                return -ENOENT;
        }
        r = d->cgroup.place(d->cgroup.userdata, pid, buf, buf_size, &changed, msg, size);
        if (changed)
                state_changed(d);
        if (r < 0)
                return r;
        *ret = buf;
        return 0;
}

unsigned dispatch_session_count(Dispatch *d) {
        return atomic_load_explicit(&d->nsessions, memory_order_relaxed);
}

static DispatchLimits limits_get(Dispatch *d) {
        return (DispatchLimits) {
                .max_frame = atomic_load_explicit(&d->limits.max_frame, memory_order_relaxed),
                .charge_batch = atomic_load_explicit(&d->limits.charge_batch, memory_order_relaxed),
                .max_sessions_per_uid =
                        atomic_load_explicit(&d->limits.max_sessions_per_uid, memory_order_relaxed),
                .read_access = (ReadAccess) atomic_load_explicit(&d->limits.read_access,
                                                                 memory_order_relaxed),
        };
}

ReadAccess dispatch_read_access(Dispatch *d) {
        return limits_get(d).read_access;
}

static void state_changed(Dispatch *d) {
        if (d->changed)
                d->changed(d->changed_userdata);
}

/* Sessions per uid; uid 0 is never limited. Caller holds d->lock. */
static UidCount *uid_find(Dispatch *d, uid_t uid) {
        for (size_t i = 0; i < d->nuids; i++)
                if (d->uids[i].uid == uid)
                        return &d->uids[i];
        return NULL;
}

static int uid_acquire(Dispatch *d, uid_t uid) {
        unsigned max_sessions;
        UidCount *u;
        int r = 0;

        if (uid == 0)
                return 0;
        max_sessions = limits_get(d).max_sessions_per_uid;
        pthread_mutex_lock(&d->lock);
        u = uid_find(d, uid);
        if (!u) {
                UidCount *n = realloc(d->uids, (d->nuids + 1) * sizeof(*n));

                if (!n) {
                        r = -ENOMEM;
                        goto out;
                }
                d->uids = n;
                u = &d->uids[d->nuids++];
                *u = (UidCount) { .uid = uid };
        }
        if (max_sessions && u->n >= max_sessions)
                r = -EUSERS;
        else
                u->n++;
out:
        pthread_mutex_unlock(&d->lock);
        return r;
}

static void uid_release(Dispatch *d, uid_t uid) {
        UidCount *u;

        if (uid == 0)
                return;
        pthread_mutex_lock(&d->lock);
        u = uid_find(d, uid);
        if (u && u->n > 0)
                u->n--;
        pthread_mutex_unlock(&d->lock);
}

int dispatch_conn_new(Dispatch *d, pid_t pid, uid_t uid, gid_t gid, DispatchPushFn push,
                      void *conn_userdata, DispatchConn **ret) {
        DispatchConn *c;
        int r;

        r = uid_acquire(d, uid);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c) {
                uid_release(d, uid);
                return -ENOMEM;
        }
        *c = (DispatchConn) {
                .d = d, .pid = pid, .uid = uid, .gid = gid,
                .push = push, .push_userdata = conn_userdata,
        };
        r = session_new(d->core, pid, uid, gid, &c->session);
        if (r < 0) {
                uid_release(d, uid);
                free(c);
                return r;
        }
        c->session->userdata = c;
        /* A count for STATUS=: relaxed, nothing is ordered by it. */
        atomic_fetch_add_explicit(&d->nsessions, 1, memory_order_relaxed);
        *ret = c;
        return 0;
}

MemSession *dispatch_conn_session(DispatchConn *c) {
        return c->session;
}

static void subscriptions_drop(DispatchConn *c) {
        Dispatch *d = c->d;
        Subscription *s, *tmp;

        if (c->nsubs == 0)
                return;
        pthread_mutex_lock(&d->subs_lock);
        cds_list_for_each_entry_safe(s, tmp, &d->subscriptions, link)
                if (s->conn == c) {
                        cds_list_del(&s->link);
                        free(s);
                }
        pthread_mutex_unlock(&d->subs_lock);
        c->nsubs = 0;
}

DispatchConn *dispatch_conn_free(DispatchConn *c) {
        if (!c)
                return NULL;
        /* Under subs_lock no push is running once this returns. */
        subscriptions_drop(c);
        /* Releases everything the session holds, and takes it off the
         * stock list before the page goes away. */
        session_free(c->session);
        if (c->stock_page)
                munmap(c->stock_page, STOCK_PAGE_SIZE);
        uid_release(c->d, c->uid);
        atomic_fetch_sub_explicit(&c->d->nsessions, 1, memory_order_relaxed);
        free(c);
        return NULL;
}

/* What a request handler produces: a status, a message, maybe a result. */
typedef struct Reply {
        Memacct__V1__Response resp;
        char message[512];
        char *refused_path;             /* owned */
        Memacct__V1__GroupList *groups; /* a list result to free */
        MemGroup **held;                /* references kept until encoded */
        size_t nheld;
} Reply;

static int fail(Reply *rep, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Reply *rep, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rep->message, sizeof(rep->message), fmt, ap);
        va_end(ap);
        rep->resp.has_status = true;
        rep->resp.status = (Memacct__V1__Status) status_from_errno(r);
        rep->resp.message = rep->message;
        return r;
}

/* The message is in rep->message already (an authz_*() call wrote it). */
static int fail_set(Reply *rep, int r) {
        _Static_assert(sizeof(rep->message) >= AUTHZ_MESSAGE_MAX, "authz messages fit a Reply");
        rep->resp.has_status = true;
        rep->resp.status = (Memacct__V1__Status) status_from_errno(r);
        rep->resp.message = rep->message;
        return r;
}

static int fail_path(Reply *rep, int r, const char *path) {
        return fail_set(rep, authz_path_message(r, path, rep->message, sizeof(rep->message)));
}

static int fail_denied(Reply *rep, const char *path) {
        return fail_set(rep, authz_denied_message(path, rep->message, sizeof(rep->message)));
}

static int fail_refused(Reply *rep, const char *path, MemChargeResult *res) {
        const char *by = res->refused ? res->refused->path : "?";

        rep->refused_path = strdup(by);
        rep->resp.refused_path = rep->refused_path;
        return fail_set(rep, authz_refused_message(path, res, rep->message, sizeof(rep->message)));
}

/* ---- authorisation (authz.c) ---- */

static bool may_read(DispatchConn *c, MemGroup *g) {
        return authz_may_read(limits_get(c->d).read_access, c->uid, g);
}

static bool may_modify(DispatchConn *c, MemGroup *g) {
        return authz_may_modify(c->uid, g);
}

/* Look @path up with a reference; fills the error on failure. */
static int lookup(DispatchConn *c, Reply *rep, const char *path, MemGroup **ret) {
        int r = authz_lookup(c->d->core, path, ret, rep->message, sizeof(rep->message));

        return r < 0 ? fail_set(rep, r) : 0;
}

/* Look @path up for charging, attaching or moving into; fills the error on failure. */
static int lookup_use(DispatchConn *c, Reply *rep, const char *path, MemGroup **ret) {
        int r = authz_lookup_use(c->d->core, c->uid, path, ret, rep->message, sizeof(rep->message));

        return r < 0 ? fail_set(rep, r) : 0;
}

static int parse_stat(Reply *rep, const char *s, MemStatItem *ret) {
        int r = authz_parse_stat(s, ret, rep->message, sizeof(rep->message));

        return r < 0 ? fail_set(rep, r) : 0;
}

/* ---- handlers ---- */

static int do_hello(DispatchConn *c, const Memacct__V1__Hello *h, Reply *rep,
                    Memacct__V1__HelloReply *hr) {
        if (h->has_version && h->version < 1)
                return fail(rep, -EINVAL, "protocol version %u is not supported", h->version);
        hr->has_version = true;
        hr->version = 1;
        hr->server = (char *) "memacctd " MEMACCT_VERSION;
        hr->has_pid = hr->has_uid = hr->has_max_frame = true;
        hr->pid = (uint32_t) c->pid;
        hr->uid = (uint32_t) c->uid;
        hr->max_frame = limits_get(c->d).max_frame;
        hr->has_charge_batch = true;
        hr->charge_batch = limits_get(c->d).charge_batch;
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_HELLO;
        rep->resp.hello = hr;
        return 0;
}

static int apply_limits(MemGroup *g, const Memacct__V1__Limits *l, bool force, Reply *rep) {
        AuthzLimits al;
        int r;

        if (!l)
                return 0;
        al = (AuthzLimits) {
                .has_max = l->has_max, .has_high = l->has_high, .has_low = l->has_low, .has_min = l->has_min,
                .max = l->max, .high = l->high, .low = l->low, .min = l->min,
        };
        r = authz_apply_limits(g, &al, force, rep->message, sizeof(rep->message));
        return r < 0 ? fail_set(rep, r) : 0;
}

static int do_create(DispatchConn *c, const Memacct__V1__CreateGroup *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        uid_t owner;
        int r;

        r = authz_check_create(c->d->core, c->uid, m->path, m->has_owner, (uid_t) m->owner, &owner,
                               rep->message, sizeof(rep->message));
        if (r < 0)
                return fail_set(rep, r);

        r = group_create(c->d->core, m->path, owner);
        if (r < 0)
                return fail_path(rep, r, m->path);
        state_changed(c->d);
        if (m->limits) {
                r = group_get(c->d->core, m->path, &g);
                if (r < 0)
                        return fail_path(rep, r, m->path);
                r = apply_limits(g, m->limits, false, rep);
                state_changed(c->d);
        }
        return r;
}

static int do_remove(DispatchConn *c, const Memacct__V1__RemoveGroup *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        r = lookup(c, rep, m->path, &g);
        if (r < 0)
                return r;
        if (!may_modify(c, g))
                return fail_denied(rep, m->path);
        r = group_remove(c->d->core, m->path);
        if (r == -EBUSY)
                return fail(rep, r, AUTHZ_MSG_REMOVE_BUSY, m->path);
        if (r < 0)
                return fail_path(rep, r, m->path);
        state_changed(c->d);
        return 0;
}

static int do_set_limits(DispatchConn *c, const Memacct__V1__SetLimits *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        r = lookup(c, rep, m->path, &g);
        if (r < 0)
                return r;
        if (!may_modify(c, g))
                return fail_denied(rep, m->path);
        r = apply_limits(g, m->limits, m->has_force && m->force, rep);
        state_changed(c->d);
        return r;
}

static int do_get_group(DispatchConn *c, const Memacct__V1__GetGroup *m, Reply *rep,
                        Memacct__V1__GroupInfo *gi) {
        _cleanup_(group_unrefp) MemGroup *g = NULL, *rr = NULL;
        MemGroupInfo info;
        int r;

        r = lookup(c, rep, m->path, &g);
        if (r < 0)
                return r;
        if (!may_read(c, g))
                return fail_denied(rep, m->path);
        if (m->reclaim_root && *m->reclaim_root) {
                r = lookup(c, rep, m->reclaim_root, &rr);
                if (r < 0)
                        return r;
                if (!group_is_descendant(g, rr))
                        return fail(rep, -EINVAL, "%s is not below the reclaim root %s", g->path,
                                    rr->path);
        }
        group_read(c->d->core, g, rr, m->has_exact && m->exact, &info);
        r = wire_group_info_fill(gi, g, &info);
        if (r < 0)
                return fail(rep, r, AUTHZ_MSG_OUT_OF_MEMORY);
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_GROUP;
        rep->resp.group = gi;
        return 0;
}

static int do_list(DispatchConn *c, const Memacct__V1__ListGroups *m, Reply *rep,
                   Memacct__V1__GroupList *gl) {
        _cleanup_(group_unrefp) MemGroup *top = NULL;
        const char *path = m->path && *m->path ? m->path : "/";
        int r;

        r = lookup(c, rep, path, &top);
        if (r < 0)
                return r;
        /* The GroupInfos point at the groups' paths: the references stay in
         * rep->held until the reply is encoded (dispatch_frame() drops them),
         * on failure too. */
        r = authz_list_collect(top, m->has_recursive && m->recursive, &rep->held, &rep->nheld);
        if (r < 0)
                return fail(rep, r, AUTHZ_MSG_OUT_OF_MEMORY);
        gl->groups = calloc(rep->nheld ? rep->nheld : 1, sizeof(*gl->groups));
        if (!gl->groups)
                return fail(rep, -ENOMEM, AUTHZ_MSG_OUT_OF_MEMORY);
        for (size_t i = 0; i < rep->nheld; i++) {
                MemGroup *g = rep->held[i];
                MemGroupInfo info;
                Memacct__V1__GroupInfo *gi;

                if (!may_read(c, g))
                        continue;
                gi = malloc(sizeof(*gi));
                if (!gi)
                        return fail(rep, -ENOMEM, AUTHZ_MSG_OUT_OF_MEMORY);
                group_read(c->d->core, g, NULL, m->has_exact && m->exact && i == 0, &info);
                if (wire_group_info_fill(gi, g, &info) < 0) {
                        free(gi);
                        return fail(rep, -ENOMEM, AUTHZ_MSG_OUT_OF_MEMORY);
                }
                gl->groups[gl->n_groups++] = gi;
        }
        if (memacct__v1__group_list__get_packed_size(gl) > LIST_RESPONSE_MAX)
                return fail(rep, -ENOSPC, AUTHZ_MSG_LIST_TOO_LARGE, path);
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_GROUPS;
        rep->resp.groups = gl;
        return 0;
}

static void fill_charge_reply(Memacct__V1__ChargeReply *cr, MemGroup *g, const MemChargeResult *res,
                              Reply *rep) {
        cr->has_over_high = cr->has_throttle_usec = cr->has_over_max = cr->has_margin = true;
        cr->over_high = res->over_high;
        cr->throttle_usec = res->throttle_usec;
        cr->over_max = res->over_max;
        cr->margin = group_margin(g);
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CHARGE;
        rep->resp.charge = cr;
}

/* The group a session charge goes to (authz_session_target()). */
static int session_target(DispatchConn *c, const char *path, Reply *rep, MemGroup **ret) {
        int r = authz_session_target(c->d->core, c->session, c->uid, path, ret, rep->message,
                                     sizeof(rep->message));

        return r < 0 ? fail_set(rep, r) : 0;
}

static int do_charge(DispatchConn *c, const Memacct__V1__Charge *m, Reply *rep,
                     Memacct__V1__ChargeReply *cr) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemChargeResult res = {};
        bool keep = m->has_keep && m->keep, force = m->has_force && m->force;
        bool stock = m->has_stock && m->stock;
        unsigned flags = MEM_CHARGE_DRAIN | (force ? MEM_CHARGE_FORCE : 0);

        /* Forcing past max overrides every max above, including the ones
         * whoever delegated the subtree set: only root may. */
        if (force && c->uid != 0)
                return fail(rep, -EPERM, "only root forces a charge past max");
        MemStatItem item = MEM_STAT_ANON;
        int r;

        r = parse_stat(rep, m->stat, &item);
        if (r < 0)
                return r;
        if (!m->has_bytes)
                return fail(rep, -EINVAL, "bytes is required");
        if (keep && stock)
                return fail(rep, -EINVAL, "a stock refill belongs to the session, not the group");
        if (keep) {
                r = lookup_use(c, rep, m->path, &g);
                if (r < 0)
                        return r;
                r = core_charge_kept(c->d->core, g, m->bytes, item, flags, &res);
                if (r == 0)
                        state_changed(c->d);
        } else {
                r = session_target(c, m->path, rep, &g);
                if (r < 0)
                        return r;
                if (stock)
                        r = session_charge_stock(c->session, m->bytes, item, &res);
                else
                        r = session_charge(c->session, m->bytes, item, flags, &res);
        }
        if (r == -EDQUOT)
                r = fail_refused(rep, g->path, &res);
        else if (r == -ENXIO)
                r = fail(rep, -EINVAL, "a stock refill needs StockSetup first");
        else if (r < 0)
                r = fail(rep, r, "%s: %s", g->path, authz_errno_text(r));
        else
                fill_charge_reply(cr, g, &res, rep);
        charge_result_done(&res);
        return r;
}

static int do_uncharge(DispatchConn *c, const Memacct__V1__Uncharge *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        bool keep = m->has_keep && m->keep;
        MemStatItem item = MEM_STAT_ANON;
        int r;

        r = parse_stat(rep, m->stat, &item);
        if (r < 0)
                return r;
        if (!m->has_bytes)
                return fail(rep, -EINVAL, "bytes is required");
        if (keep) {
                r = lookup_use(c, rep, m->path, &g);
                if (r < 0)
                        return r;
                r = group_uncharge_kept(c->d->core, g, m->bytes, item);
                if (r == 0)
                        state_changed(c->d);
        } else {
                r = session_target(c, m->path, rep, &g);
                if (r < 0)
                        return r;
                r = session_uncharge(c->session, m->bytes, item);
        }
        if (r == -ERANGE)
                return fail(rep, r, AUTHZ_MSG_UNCHARGE_RANGE, g->path,
                            (unsigned long long) m->bytes, mem_stat_item_to_string(item),
                            keep ? AUTHZ_MSG_HELD_BY_GROUP : AUTHZ_MSG_HELD_BY_SESSION);
        if (r < 0)
                return fail(rep, r, "%s: %s", g->path, authz_errno_text(r));
        return 0;
}

static int do_attach(DispatchConn *c, const Memacct__V1__Attach *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        char buf[MEM_PATH_MAX + 1];
        const char *path;
        int r;

        r = dispatch_attach_path(c->d, c->pid, m->path, buf, sizeof(buf), &path, rep->message,
                                 sizeof(rep->message));
        if (r < 0)
                return fail_set(rep, r);
        r = lookup_use(c, rep, path, &g);
        if (r < 0)
                return r;
        r = session_attach(c->session, g);
        if (r == -EBUSY)
                return fail(rep, r, AUTHZ_MSG_ATTACH_BUSY);
        if (r < 0)
                return fail_path(rep, r, path);
        return 0;
}

static int do_import_cgroups(DispatchConn *c, const Memacct__V1__ImportCgroups *m, Reply *rep,
                             Memacct__V1__ImportReply *ir) {
        unsigned counts[3] = {};
        int r;

        r = dispatch_cgroup_import(c->d, c->uid, m->from, m->under, counts, rep->message,
                                   sizeof(rep->message));
        if (r < 0)
                return fail_set(rep, r);
        ir->has_created = ir->has_updated = ir->has_unchanged = true;
        ir->created = counts[0];
        ir->updated = counts[1];
        ir->unchanged = counts[2];
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_IMPORT;
        rep->resp.import = ir;
        return 0;
}

static int do_move(DispatchConn *c, const Memacct__V1__Move *m, Reply *rep,
                   Memacct__V1__MoveReply *mr) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemChargeResult res = {};
        pid_t pid = m->has_pid ? (pid_t) m->pid : 0;
        int r;

        r = lookup_use(c, rep, m->path, &g);
        if (r < 0)
                return r;
        if (!authz_may_move(c->uid, c->pid, pid))
                return fail(rep, -EPERM, AUTHZ_MSG_MOVE_DENIED);
        if (pid == 0) {
                r = session_move(c->session, g, &res);
                if (r == 0)
                        r = 1;
        } else
                r = client_move(c->d->core, pid, g, &res);
        if (r == -EDQUOT)
                r = fail_refused(rep, g->path, &res);
        else if (r == -ESRCH)
                r = fail(rep, r, AUTHZ_MSG_NO_CLIENT, (int) pid);
        else if (r < 0)
                r = fail(rep, r, "%s: %s", g->path, authz_errno_text(r));
        else {
                mr->has_sessions = true;
                mr->sessions = (uint32_t) r;
                rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_MOVE;
                rep->resp.move = mr;
                r = 0;
        }
        charge_result_done(&res);
        return r;
}

static int do_get_client(DispatchConn *c, const Memacct__V1__GetClient *m, Reply *rep,
                         Memacct__V1__ClientInfo *ci) {
        pid_t pid = m->has_pid && m->pid ? (pid_t) m->pid : c->pid;
        int64_t rss[_MEM_RSS_MAX];
        int r;

        if (!authz_may_read_client(limits_get(c->d).read_access, c->uid, c->pid, pid))
                return fail(rep, -EPERM, AUTHZ_MSG_CLIENT_DENIED, (int) pid);
        r = client_read_rss(c->d->core, pid, m->has_exact && m->exact, rss);
        if (r < 0)
                return fail(rep, r, AUTHZ_MSG_NO_CLIENT, (int) pid);
        ci->has_pid = ci->has_file = ci->has_anon = ci->has_swap = ci->has_shmem = true;
        ci->pid = (uint32_t) pid;
        ci->file = (uint64_t) rss[MEM_RSS_FILE];
        ci->anon = (uint64_t) rss[MEM_RSS_ANON];
        ci->swap = (uint64_t) rss[MEM_RSS_SWAP];
        ci->shmem = (uint64_t) rss[MEM_RSS_SHMEM];
        rep->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CLIENT;
        rep->resp.client = ci;
        return 0;
}

static int do_reset_peak(DispatchConn *c, const Memacct__V1__ResetPeak *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        r = lookup(c, rep, m->path, &g);
        if (r < 0)
                return r;
        if (!authz_may_reset_peak(c->uid, g))
                return fail_denied(rep, g->path);
        group_reset_peak(g);
        return 0;
}

/* Subscriptions per connection: a bound, like every other input. */
#define SUBSCRIPTIONS_MAX 64

static int do_subscribe(DispatchConn *c, const Memacct__V1__Subscribe *m, Reply *rep) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        Subscription *s;
        int r;

        r = lookup(c, rep, m->path && *m->path ? m->path : "/", &g);
        if (r < 0)
                return r;
        if (!may_read(c, g))
                return fail_denied(rep, g->path);
        if (!c->push)
                return fail(rep, -EINVAL, "this transport cannot deliver events");
        if (c->nsubs >= SUBSCRIPTIONS_MAX)
                return fail(rep, -ENOSPC, "too many subscriptions on one connection");
        s = malloc(sizeof(*s) + strlen(g->path) + 1);
        if (!s)
                return fail(rep, -ENOMEM, AUTHZ_MSG_OUT_OF_MEMORY);
        s->conn = c;
        strcpy(s->path, g->path);
        pthread_mutex_lock(&c->d->subs_lock);
        cds_list_add_tail(&s->link, &c->d->subscriptions);
        pthread_mutex_unlock(&c->d->subs_lock);
        c->nsubs++;
        return 0;
}

static bool path_within(const char *path, const char *top) {
        size_t n = strlen(top);

        if (strcmp(top, "/") == 0)
                return true;
        return strncmp(path, top, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Core event hook: encode the event once and push it to every subscriber
 * of the group or an ancestor. subs_lock keeps each connection alive while
 * it is pushed to (dispatch_conn_free() takes it). Then the sink, outside
 * the lock: it has its own. */
static void event_hook(MemGroup *g, MemEvent ev, uint64_t local, void *userdata) {
        Dispatch *d = userdata;
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;
        Memacct__V1__Event e = MEMACCT__V1__EVENT__INIT;
        uint8_t *frame = NULL;
        size_t len = 0;
        Subscription *s;

        pthread_mutex_lock(&d->subs_lock);
        cds_list_for_each_entry(s, &d->subscriptions, link) {
                if (!path_within(g->path, s->path))
                        continue;
                if (!frame) {
                        e.path = g->path;
                        e.name = (char *) mem_event_to_string(ev);
                        e.has_count = true;
                        e.count = local;
                        resp.has_id = resp.has_status = true;
                        resp.id = 0;
                        resp.status = MEMACCT__V1__STATUS__OK;
                        resp.result_case = MEMACCT__V1__RESPONSE__RESULT_EVENT;
                        resp.event = &e;
                        frame = wire_frame_new(&resp, &len);
                        if (!frame)
                                break;
                }
                s->conn->push(s->conn->push_userdata, frame, len);
        }
        pthread_mutex_unlock(&d->subs_lock);
        free(frame);
        if (d->sink)
                d->sink(g, ev, local, d->sink_userdata);
}

/*
 * Core move hook: a moved session (by a Move with a pid, or its own) is told
 * where it is now, so a client that replays after a reconnect replays
 * there. The core holds its move locks: only encode and queue. The
 * connection is alive: its session is, and dispatch_conn_free() frees the
 * session (waiting for the move) before the connection.
 */
static void move_hook(MemSession *s, MemGroup *dst, void *userdata) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;
        Memacct__V1__Moved mv = MEMACCT__V1__MOVED__INIT;
        DispatchConn *c = s->userdata;
        uint8_t *frame;
        size_t len;

        (void) userdata;
        if (!c || !c->push)
                return;
        mv.path = dst->path;
        resp.has_id = resp.has_status = true;
        resp.id = 0;
        resp.status = MEMACCT__V1__STATUS__OK;
        resp.result_case = MEMACCT__V1__RESPONSE__RESULT_MOVED;
        resp.moved = &mv;
        frame = wire_frame_new(&resp, &len);
        if (!frame)
                return; /* a hint: the move itself stands */
        c->push(c->push_userdata, frame, len);
        free(frame);
}

static int do_stock_setup(DispatchConn *c, int fd, Reply *rep) {
        const int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
        struct stat st;
        void *page;
        int seals, r;

        if (fd < 0)
                return fail(rep, -EINVAL, "StockSetup needs a memfd sent with the frame (SCM_RIGHTS)");
        if (c->stock_page)
                return fail(rep, -EBUSY, "the session has a stock page already");
        /* A client that could shrink the file would make our next access
         * to the mapping a SIGBUS: only a sealed page is mapped. */
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || (seals & need) != need)
                return fail(rep, -EINVAL, "the stock memfd must be sealed against shrink, grow and seal");
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != STOCK_PAGE_SIZE)
                return fail(rep, -EINVAL, "the stock memfd must be exactly %d bytes", STOCK_PAGE_SIZE);
        page = mmap(NULL, STOCK_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED)
                return fail(rep, -errno, "cannot map the stock page: %m");
        r = session_set_stock(c->session, page);
        if (r < 0) {
                munmap(page, STOCK_PAGE_SIZE);
                return fail(rep, r, "the session has a stock page already");
        }
        c->stock_page = page;
        return 0;
}

/* ---- frames ---- */

static void reply_init(Reply *rep, uint64_t id) {
        memacct__v1__response__init(&rep->resp);
        rep->resp.has_id = rep->resp.has_status = true;
        rep->resp.id = id;
        rep->resp.status = MEMACCT__V1__STATUS__OK;
        rep->message[0] = 0;
        rep->refused_path = NULL;
        rep->groups = NULL;
        rep->held = NULL;
        rep->nheld = 0;
}

static void reply_done(Reply *rep) {
        if (rep->resp.result_case == MEMACCT__V1__RESPONSE__RESULT_GROUP)
                wire_group_info_free(rep->resp.group);
        if (rep->groups) {
                for (size_t i = 0; i < rep->groups->n_groups; i++) {
                        wire_group_info_free(rep->groups->groups[i]);
                        free(rep->groups->groups[i]);
                }
                free(rep->groups->groups);
        }
        for (size_t i = 0; i < rep->nheld; i++)
                group_unref(rep->held[i]);
        free(rep->held);
        free(rep->refused_path);
}

void dispatch_protocol_error(DispatchConn *c, const char *message, struct evbuffer *out) {
        Reply rep;

        (void) c;
        reply_init(&rep, 0);
        fail(&rep, -EPROTO, "%s", message);
        (void) wire_response_append(&rep.resp, out);
        reply_done(&rep);
}

int dispatch_frame(DispatchConn *c, const uint8_t *body, size_t len, int fd, struct evbuffer *out) {
        DispatchLimits limits = limits_get(c->d);
        ProtobufCAllocator alloc = wire_arena_allocator();
        Memacct__V1__Request *req;
        /* One result per request: initialised only by the case that uses
         * it, not all of them for every frame (a GroupInfo alone is 248
         * bytes to clear, on every charge). */
        union {
                Memacct__V1__HelloReply hr;
                Memacct__V1__GroupInfo gi;
                Memacct__V1__GroupList gl;
                Memacct__V1__ChargeReply cr;
                Memacct__V1__MoveReply mr;
                Memacct__V1__ClientInfo ci;
                Memacct__V1__ImportReply ir;
        } res;
        Reply rep;
        int r = 0;

        if (len > limits.max_frame || wire_arena_reset(limits.max_frame) < 0) {
                if (fd >= 0)
                        close(fd);
                dispatch_protocol_error(c, "frame too large", out);
                return -EPROTO;
        }
        req = memacct__v1__request__unpack(&alloc, len, body);
        if (!req) {
                if (fd >= 0)
                        close(fd);
                dispatch_protocol_error(c, "malformed request: not a memacct.v1.Request", out);
                return -EPROTO;
        }
        reply_init(&rep, req->has_id ? req->id : 0);

        switch (req->op_case) {
        case MEMACCT__V1__REQUEST__OP_HELLO:
                res.hr = (Memacct__V1__HelloReply) MEMACCT__V1__HELLO_REPLY__INIT;
                do_hello(c, req->hello, &rep, &res.hr);
                break;
        case MEMACCT__V1__REQUEST__OP_CREATE_GROUP:
                do_create(c, req->create_group, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_REMOVE_GROUP:
                do_remove(c, req->remove_group, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_SET_LIMITS:
                do_set_limits(c, req->set_limits, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_GET_GROUP:
                res.gi = (Memacct__V1__GroupInfo) MEMACCT__V1__GROUP_INFO__INIT;
                do_get_group(c, req->get_group, &rep, &res.gi);
                break;
        case MEMACCT__V1__REQUEST__OP_LIST_GROUPS:
                res.gl = (Memacct__V1__GroupList) MEMACCT__V1__GROUP_LIST__INIT;
                rep.groups = &res.gl;
                do_list(c, req->list_groups, &rep, &res.gl);
                break;
        case MEMACCT__V1__REQUEST__OP_CHARGE:
                res.cr = (Memacct__V1__ChargeReply) MEMACCT__V1__CHARGE_REPLY__INIT;
                do_charge(c, req->charge, &rep, &res.cr);
                break;
        case MEMACCT__V1__REQUEST__OP_UNCHARGE:
                do_uncharge(c, req->uncharge, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_ATTACH:
                do_attach(c, req->attach, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_MOVE:
                res.mr = (Memacct__V1__MoveReply) MEMACCT__V1__MOVE_REPLY__INIT;
                do_move(c, req->move, &rep, &res.mr);
                break;
        case MEMACCT__V1__REQUEST__OP_GET_CLIENT:
                res.ci = (Memacct__V1__ClientInfo) MEMACCT__V1__CLIENT_INFO__INIT;
                do_get_client(c, req->get_client, &rep, &res.ci);
                break;
        case MEMACCT__V1__REQUEST__OP_RESET_PEAK:
                do_reset_peak(c, req->reset_peak, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_SUBSCRIBE:
                do_subscribe(c, req->subscribe, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_STOCK_SETUP:
                do_stock_setup(c, fd, &rep);
                break;
        case MEMACCT__V1__REQUEST__OP_IMPORT_CGROUPS:
                res.ir = (Memacct__V1__ImportReply) MEMACCT__V1__IMPORT_REPLY__INIT;
                do_import_cgroups(c, req->import_cgroups, &rep, &res.ir);
                break;
        default:
                /* An operation this server does not know: a newer client,
                 * or garbage. Either way the session cannot go on safely. */
                fail(&rep, -EPROTO, "unknown operation");
                r = -EPROTO;
                break;
        }
        if (fd >= 0)
                close(fd);
        if (wire_response_append(&rep.resp, out) < 0)
                r = -EPROTO;
        reply_done(&rep);
        memacct__v1__request__free_unpacked(req, &alloc);
        return r;
}
