/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket requests
 *
 * Each frame body is decoded into a per-thread arena (no malloc per
 * request, and a hard cap on what a frame may expand to), turned into
 * one service call with the peer the connection was opened for (its
 * identity is what the kernel said at accept), and answered with one
 * Response encoded straight into the connection's output buffer. A
 * refusal is the service's: its errno becomes the status
 * (proto/status.c), its words the message, its refusing group
 * refused_path. Nothing is decided here but the encoding. The operations
 * on device memory regions have their handlers in request-regions.c; the
 * one switch below calls them as it calls the others.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "memacct.pb-c.h"
#include "base/selfstats.h"
#include "sock/request-internal.h"
#include "sock/wire.h"
#include "status.h"

static void reply_status(Memacct__V1__Response *resp, int r, const char *message) {
        resp->has_status = true;
        resp->status = (Memacct__V1__Status) status_from_errno(r);
        resp->message = (char *) message;
}

static MemLimits limits_from_wire(const Memacct__V1__Limits *l) {
        MemLimits m = {};

        if (!l)
                return m;
        if (l->has_max)
                m.set |= MEM_LIMIT_MAX, m.max = l->max;
        if (l->has_high)
                m.set |= MEM_LIMIT_HIGH, m.high = l->high;
        if (l->has_low)
                m.set |= MEM_LIMIT_LOW, m.low = l->low;
        if (l->has_min)
                m.set |= MEM_LIMIT_MIN, m.min = l->min;
        return m;
}

static int on_hello(Request *x, const Memacct__V1__Hello *m) {
        Memacct__V1__HelloReply *hr = &x->res.hr;
        ServiceHello h;
        int r;

        r = service_hello(x->svc, x->peer, m->has_version ? &m->version : NULL, &h, &x->rf);
        if (r < 0)
                return r;
        *hr = (Memacct__V1__HelloReply) MEMACCT__V1__HELLO_REPLY__INIT;
        hr->has_version = hr->has_pid = hr->has_uid = hr->has_max_frame = hr->has_charge_batch = true;
        hr->version = h.version;
        hr->server = (char *) "memacctd " MEMACCT_VERSION;
        hr->pid = (uint32_t) h.pid;
        hr->uid = (uint32_t) h.uid;
        hr->max_frame = h.max_frame;
        hr->charge_batch = h.charge_batch;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_HELLO;
        x->resp.hello = hr;
        return 0;
}

static int on_create(Request *x, const Memacct__V1__CreateGroup *m) {
        MemLimits l = limits_from_wire(m->limits);

        return (m->transient ? service_create_transient_group : service_create_group)(
                x->svc, x->peer, m->path, &l, m->has_owner, (uid_t) m->owner, &x->rf);
}

static int on_set_limits(Request *x, const Memacct__V1__SetLimits *m) {
        MemLimits l = limits_from_wire(m->limits);

        return service_set_region_limits(x->svc, x->peer, m->path, m->region, &l,
                                         (m->force ? SERVICE_LIMITS_FORCE : 0) | SERVICE_LIMITS_WAIT |
                                                 (m->no_reclaim ? SERVICE_LIMITS_NO_RECLAIM : 0),
                                         &x->rf);
}

static int on_set_owner(Request *x, const Memacct__V1__SetOwner *m) {
        if (!m->has_owner)
                return refusal_set(&x->rf, -EINVAL, "SetOwner: an owner is required");
        return service_set_owner(x->svc, x->peer, m->path, (uid_t) m->owner, &x->rf);
}

static int on_get_info(Request *x) {
        Memacct__V1__ServerInfo *si = &x->res.info.si;
        ServiceInfo *info = &x->res.info.info;
        int r;

        r = service_get_info(x->svc, x->peer, info, &x->rf);
        if (r < 0)
                return r;
        *si = (Memacct__V1__ServerInfo) MEMACCT__V1__SERVER_INFO__INIT;
        si->version = (char *) info->version;
        si->state = (char *) info->state;
        si->state_cause = info->state_cause;
        si->has_uptime_usec = si->has_requests = si->has_sessions = si->has_groups = true;
        si->has_saves = si->has_last_save_usec = true;
        si->uptime_usec = info->uptime_usec;
        si->requests = info->requests;
        si->sessions = info->sessions;
        si->groups = info->groups;
        si->saves = info->saves;
        si->last_save_usec = info->last_save_usec;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_INFO;
        x->resp.info = si;
        return 0;
}

/* ServiceGroupFn of GetGroup: the one GroupInfo of the reply. */
static int got_group(void *userdata, const char *path, const MemGroupInfo *info) {
        Request *x = userdata;
        int r;

        snprintf(x->path, sizeof(x->path), "%s", path);
        r = wire_group_info_fill(&x->res.gi, x->path, info);
        if (r < 0)
                return r;
        x->has_group = true;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_GROUP;
        x->resp.group = &x->res.gi;
        return 0;
}

static int on_get_group(Request *x, const Memacct__V1__GetGroup *m) {
        return service_get_group_region(x->svc, x->peer, m->path, m->reclaim_root, m->region,
                                        m->exact ? SERVICE_READ_EXACT : 0, got_group, x, &x->rf);
}

/* The bytes a length-delimited field of @n bytes takes: tag, varint length, body. */
static size_t field_size(size_t n) {
        size_t k = 1;

        /* The length's varint bytes, counted on a copy: the body is n. */
        for (size_t v = n; v >= 0x80 && k < 10; v >>= 7)
                k++;
        return 1 + k + n;
}

/*
 * What a page of ListGroups leaves for the rest of its Response beside
 * its groups and its cursor: the id, the status, GroupList.more and
 * .restarted, and the prefixes of the result field (64 is over twice that).
 */
#define LIST_REPLY_RESERVE 64

/* ServiceGroupFn of ListGroups: one more GroupInfo, its path copied, unless
 * the frame is full without it (> 0: it starts the next page). */
static int listed_group(void *userdata, const char *path, const MemGroupInfo *info) {
        Request *x = userdata;
        Memacct__V1__GroupList *gl = &x->res.gl;
        Memacct__V1__GroupInfo *gi, **v;
        char *copy;
        size_t n;

        v = realloc(gl->groups, (gl->n_groups + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        gl->groups = v;
        gi = malloc(sizeof(*gi));
        copy = strdup(path);
        if (!gi || !copy || wire_group_info_fill(gi, copy, info) < 0) {
                free(gi);
                free(copy);
                return -ENOMEM;
        }
        n = field_size(memacct__v1__group_info__get_packed_size(gi));
        /* With room for the cursor, should the page end with this group. */
        if (x->list_bytes + n + field_size(strlen(path)) > x->list_cap) {
                free(gi->path);
                wire_group_info_free(gi);
                free(gi);
                /* Not even one: the frame is smaller than a group's info. */
                return gl->n_groups == 0 ? -ENOSPC : 1;
        }
        gl->groups[gl->n_groups++] = gi;
        x->list_bytes += n;
        return 0;
}

static int on_list(Request *x, const Memacct__V1__ListGroups *m) {
        unsigned flags = (m->recursive ? SERVICE_READ_RECURSIVE : 0) | (m->exact ? SERVICE_READ_EXACT : 0);
        ServiceListPage page = { .after = m->after, .limit = m->has_limit ? m->limit : 0 };
        uint32_t frame = service_max_frame(x->svc);
        int r;

        /* No reply bigger than a frame, however the client asks. */
        x->list_cap = MIN((size_t) frame, (size_t) SERVICE_LIST_REPLY_MAX);
        x->list_cap = x->list_cap > LIST_REPLY_RESERVE ? x->list_cap - LIST_REPLY_RESERVE : 0;
        x->res.gl = (Memacct__V1__GroupList) MEMACCT__V1__GROUP_LIST__INIT;
        x->has_list = true;
        r = service_list_groups_page_region(x->svc, x->peer, m->path, m->region, flags, &page, listed_group, x,
                                            &x->rf);
        if (r < 0)
                return r;
        if (page.more) {
                x->res.gl.has_more = x->res.gl.more = true;
                snprintf(x->path, sizeof(x->path), "%s", page.next);
                x->res.gl.next = x->path;
        }
        if (page.restarted)
                x->res.gl.has_restarted = x->res.gl.restarted = true;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_GROUPS;
        x->resp.groups = &x->res.gl;
        return 0;
}

static ServiceCharge charge_from_wire(const char *path, bool has_bytes, uint64_t bytes, const char *stat,
                                      bool keep, const char *region) {
        return (ServiceCharge) {
                .path = path, .has_bytes = has_bytes, .bytes = bytes, .stat = stat, .keep = keep,
                .region = region,
        };
}

static int on_charge(Request *x, const Memacct__V1__Charge *m) {
        ServiceCharge c = charge_from_wire(m->path, m->has_bytes, m->bytes, m->stat, m->keep, m->region);
        Memacct__V1__ChargeReply *cr = &x->res.cr;
        ServiceChargeResult res;
        int r;

        c.force = m->force;
        c.stock = m->stock;
        c.can_wait = true;
        c.no_wait = m->no_wait;
        r = service_charge(x->svc, x->peer, &c, &res, &x->rf);
        if (r < 0)
                return r;
        *cr = (Memacct__V1__ChargeReply) MEMACCT__V1__CHARGE_REPLY__INIT;
        cr->has_over_high = cr->has_throttle_usec = cr->has_over_max = cr->has_margin = true;
        cr->over_high = res.over_high;
        cr->throttle_usec = res.throttle_usec;
        cr->over_max = res.over_max;
        cr->margin = res.margin;
        cr->has_stock_index = res.stock_index != 0;
        cr->stock_index = res.stock_index;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CHARGE;
        x->resp.charge = cr;
        return 0;
}

static int on_uncharge(Request *x, const Memacct__V1__Uncharge *m) {
        ServiceCharge c = charge_from_wire(m->path, m->has_bytes, m->bytes, m->stat, m->keep, m->region);

        return service_uncharge(x->svc, x->peer, &c, &x->rf);
}

static int on_move(Request *x, const Memacct__V1__Move *m) {
        Memacct__V1__MoveReply *mr = &x->res.mr;
        int r;

        r = service_move(x->svc, x->peer, (pid_t) m->pid, m->path, &x->rf);
        if (r < 0)
                return r;
        *mr = (Memacct__V1__MoveReply) MEMACCT__V1__MOVE_REPLY__INIT;
        mr->has_sessions = true;
        mr->sessions = (uint32_t) r;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_MOVE_REPLY;
        x->resp.move_reply = mr;
        return 0;
}

static int on_attach(Request *x, const Memacct__V1__Attach *m) {
        Memacct__V1__AttachReply *ar = &x->res.ar;
        int r;

        r = service_attach_to(x->svc, x->peer, m->path, x->path, sizeof(x->path), &x->rf);
        if (r < 0)
                return r;
        *ar = (Memacct__V1__AttachReply) MEMACCT__V1__ATTACH_REPLY__INIT;
        ar->path = x->path;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_ATTACHED;
        x->resp.attached = ar;
        return 0;
}

static int on_get_client(Request *x, const Memacct__V1__GetClient *m) {
        Memacct__V1__ClientInfo *ci = &x->res.ci;
        uint64_t rss[_MEM_RSS_MAX];
        pid_t pid;
        int r;

        r = service_get_client(x->svc, x->peer, (pid_t) m->pid, m->exact, &pid, rss, &x->rf);
        if (r < 0)
                return r;
        *ci = (Memacct__V1__ClientInfo) MEMACCT__V1__CLIENT_INFO__INIT;
        ci->has_pid = ci->has_file = ci->has_anon = ci->has_swap = ci->has_shmem = true;
        ci->pid = (uint32_t) pid;
        ci->file = rss[MEM_RSS_FILE];
        ci->anon = rss[MEM_RSS_ANON];
        ci->swap = rss[MEM_RSS_SWAP];
        ci->shmem = rss[MEM_RSS_SHMEM];
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CLIENT;
        x->resp.client = ci;
        return 0;
}

static void limits_to_wire(const MemLimits *m, Memacct__V1__Limits *l) {
        *l = (Memacct__V1__Limits) MEMACCT__V1__LIMITS__INIT;
        l->has_max = !!(m->set & MEM_LIMIT_MAX), l->max = m->max;
        l->has_high = !!(m->set & MEM_LIMIT_HIGH), l->high = m->high;
        l->has_low = !!(m->set & MEM_LIMIT_LOW), l->low = m->low;
        l->has_min = !!(m->set & MEM_LIMIT_MIN), l->min = m->min;
}

/* One KeptLimits and what it points at, in one allocation. */
typedef struct WireKept {
        Memacct__V1__KeptLimits k;
        Memacct__V1__Limits ours, kernel;
        char group[];
} WireKept;

/* ServiceKeptFn of ImportCgroups: one more KeptLimits (a failed
 * allocation drops the entry; the count still says how many). */
static void kept_limits(void *userdata, const char *group, unsigned kept, const MemLimits *ours,
                        const MemLimits *kernel) {
        Memacct__V1__ImportReply *ir = userdata;
        Memacct__V1__KeptLimits **v;
        WireKept *w;

        (void) kept; /* ours->set names them */
        v = realloc(ir->kept_limits, (ir->n_kept_limits + 1) * sizeof(*v));
        if (!v)
                return;
        ir->kept_limits = v;
        w = malloc(sizeof(*w) + strlen(group) + 1);
        if (!w)
                return;
        strcpy(w->group, group);
        w->k = (Memacct__V1__KeptLimits) MEMACCT__V1__KEPT_LIMITS__INIT;
        limits_to_wire(ours, &w->ours);
        limits_to_wire(kernel, &w->kernel);
        w->k.group = w->group;
        w->k.ours = &w->ours;
        w->k.kernel = &w->kernel;
        v[ir->n_kept_limits++] = &w->k; /* k is first: freeing it frees w */
}

static int on_import(Request *x, const Memacct__V1__ImportCgroups *m) {
        Memacct__V1__ImportReply *ir = &x->res.ir;
        ServiceImportCounts n;
        int r;

        *ir = (Memacct__V1__ImportReply) MEMACCT__V1__IMPORT_REPLY__INIT;
        x->has_kept = true;
        r = service_import_cgroups_with(x->svc, x->peer, m->from_cgroup, m->under,
                                        m->reset_limits ? SERVICE_IMPORT_RESET_LIMITS : 0, kept_limits, ir,
                                        &n, &x->rf);
        if (r < 0)
                return r;
        ir->has_created = ir->has_updated = ir->has_unchanged = true;
        ir->has_kept = ir->has_kernel_owned = true;
        ir->created = n.created;
        ir->updated = n.updated;
        ir->unchanged = n.unchanged;
        ir->kept = n.kept;
        ir->kernel_owned = n.kernel_owned;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_IMPORT_REPLY;
        x->resp.import_reply = ir;
        return 0;
}

/* ServiceRuleFn of ListRules: one more Rule, its strings copied (the
 * table may change once the service lets go of it). */
static int listed_rule(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags) {
        Request *x = userdata;
        Memacct__V1__RuleList *rl = &x->res.rl;
        Memacct__V1__Rule *ru, **v;

        v = realloc(rl->rules, (rl->n_rules + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        rl->rules = v;
        ru = malloc(sizeof(*ru));
        if (!ru)
                return -ENOMEM;
        memacct__v1__rule__init(ru);
        ru->cgroup = strdup(cgroup);
        ru->group = strdup(group);
        ru->has_mirror = mirror;
        ru->mirror = mirror;
        ru->has_confine = (flags & SERVICE_RULE_CONFINE) != 0;
        ru->confine = ru->has_confine;
        rl->rules[rl->n_rules++] = ru;
        if (!ru->cgroup || !ru->group)
                return -ENOMEM;
        x->list_bytes += field_size(memacct__v1__rule__get_packed_size(ru));
        return x->list_bytes > SERVICE_LIST_REPLY_MAX ? -ENOSPC : 0;
}

static int on_list_rules(Request *x, const Memacct__V1__ListRules *m) {
        int r;

        x->res.rl = (Memacct__V1__RuleList) MEMACCT__V1__RULE_LIST__INIT;
        x->has_rules = true;
        r = service_list_rules(x->svc, x->peer, m && m->with_mirrors, listed_rule, x, &x->rf);
        if (r < 0)
                return r;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_RULES;
        x->resp.rules = &x->res.rl;
        return 0;
}

/* ServiceSessionFn of ListSessions: one more Session, its strings copied. */
static int listed_session(void *userdata, const ServiceSession *s) {
        Request *x = userdata;
        Memacct__V1__SessionList *sl = &x->res.sl;
        Memacct__V1__Session *se, **v;

        v = realloc(sl->sessions, (sl->n_sessions + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        sl->sessions = v;
        se = malloc(sizeof(*se));
        if (!se)
                return -ENOMEM;
        memacct__v1__session__init(se);
        se->has_pid = se->has_uid = se->has_bytes = se->has_stock = true;
        se->pid = (uint32_t) s->pid;
        se->uid = (uint32_t) s->uid;
        se->bytes = s->bytes;
        se->stock = s->stock;
        se->has_reclaimable = se->has_reclaim_asked = se->has_reclaim_released = se->has_reclaim_late = true;
        se->reclaimable = s->reclaimable;
        se->reclaim_asked = s->reclaim_asked;
        se->reclaim_released = s->reclaim_released;
        se->reclaim_late = s->reclaim_late;
        se->comm = strdup(s->comm);
        se->transport = strdup(s->transport);
        se->group = strdup(s->group);
        sl->sessions[sl->n_sessions++] = se;
        if (!se->comm || !se->transport || !se->group)
                return -ENOMEM;
        x->list_bytes += field_size(memacct__v1__session__get_packed_size(se));
        return x->list_bytes > SERVICE_LIST_REPLY_MAX ? -ENOSPC : 0;
}

static int on_list_sessions(Request *x, const Memacct__V1__ListSessions *m) {
        int r;

        x->res.sl = (Memacct__V1__SessionList) MEMACCT__V1__SESSION_LIST__INIT;
        x->has_sessions = true;
        r = service_list_sessions(x->svc, x->peer, m->path, listed_session, x, &x->rf);
        if (r < 0)
                return r;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_SESSIONS;
        x->resp.sessions = &x->res.sl;
        return 0;
}

/* ServicePruneFn of PruneMirrors: one more removed or kept group, copied.
 * The prune goes on whatever happens here (it cannot be undone), so a
 * copy that fails only marks the reply to be refused afterwards. */
static void pruned_mirror(void *userdata, const char *group, const char *why) {
        Request *x = userdata;
        Memacct__V1__PruneReply *pr = &x->res.pr;
        Memacct__V1__PruneKept *k, **kv;
        char **v;

        if (!why) {
                v = realloc(pr->removed, (pr->n_removed + 1) * sizeof(*v));
                if (!v || !(v[pr->n_removed] = strdup(group))) {
                        if (v)
                                pr->removed = v;
                        x->pruned_oom = true;
                        return;
                }
                pr->removed = v;
                pr->n_removed++;
                return;
        }
        kv = realloc(pr->kept, (pr->n_kept + 1) * sizeof(*kv));
        if (!kv) {
                x->pruned_oom = true;
                return;
        }
        pr->kept = kv;
        k = malloc(sizeof(*k));
        if (!k) {
                x->pruned_oom = true;
                return;
        }
        memacct__v1__prune_kept__init(k);
        k->group = strdup(group);
        k->why = strdup(why);
        pr->kept[pr->n_kept++] = k;
        if (!k->group || !k->why)
                x->pruned_oom = true;
}

static int on_prune(Request *x) {
        int r;

        x->res.pr = (Memacct__V1__PruneReply) MEMACCT__V1__PRUNE_REPLY__INIT;
        x->has_pruned = true;
        r = service_prune_mirrors(x->svc, x->peer, pruned_mirror, x, &x->rf);
        if (r < 0)
                return r;
        if (x->pruned_oom)
                return refusal_set(&x->rf, -ENOMEM, "pruned, but out of memory listing the groups");
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_PRUNED;
        x->resp.pruned = &x->res.pr;
        return 0;
}

/*
 * The one switch from operation to handler; each case is one call. An
 * operation this server does not know is a newer client or garbage:
 * either way the session cannot go on safely.
 */
static int request_handle(Request *x, const Memacct__V1__Request *req, int fd) {
        switch (req->op_case) {
        case MEMACCT__V1__REQUEST__OP_HELLO:
                return on_hello(x, req->hello);
        case MEMACCT__V1__REQUEST__OP_CREATE_GROUP:
                return on_create(x, req->create_group);
        case MEMACCT__V1__REQUEST__OP_REMOVE_GROUP:
                return service_remove_group(x->svc, x->peer, req->remove_group->path, &x->rf);
        case MEMACCT__V1__REQUEST__OP_SET_LIMITS:
                return on_set_limits(x, req->set_limits);
        case MEMACCT__V1__REQUEST__OP_GET_GROUP:
                return on_get_group(x, req->get_group);
        case MEMACCT__V1__REQUEST__OP_LIST_GROUPS:
                return on_list(x, req->list_groups);
        case MEMACCT__V1__REQUEST__OP_CHARGE:
                return on_charge(x, req->charge);
        case MEMACCT__V1__REQUEST__OP_UNCHARGE:
                return on_uncharge(x, req->uncharge);
        case MEMACCT__V1__REQUEST__OP_ATTACH:
                return on_attach(x, req->attach);
        case MEMACCT__V1__REQUEST__OP_MOVE_SESSION:
                return on_move(x, req->move_session);
        case MEMACCT__V1__REQUEST__OP_GET_CLIENT:
                return on_get_client(x, req->get_client);
        case MEMACCT__V1__REQUEST__OP_RESET_PEAK:
                return service_reset_region_peak(x->svc, x->peer, req->reset_peak->path, req->reset_peak->region,
                                                 &x->rf);
        case MEMACCT__V1__REQUEST__OP_SUBSCRIBE:
                return service_subscribe_region(x->svc, x->peer, req->subscribe->path, req->subscribe->region,
                                                &x->rf);
        case MEMACCT__V1__REQUEST__OP_STOCK_SETUP:
                return service_stock_setup(x->svc, x->peer, fd, &x->rf);
        case MEMACCT__V1__REQUEST__OP_IMPORT_CGROUPS:
                return on_import(x, req->import_cgroups);
        case MEMACCT__V1__REQUEST__OP_ADD_RULE:
                return service_add_rule(x->svc, x->peer, req->add_rule->cgroup, req->add_rule->group,
                                        req->add_rule->confine ? SERVICE_RULE_CONFINE : 0, &x->rf);
        case MEMACCT__V1__REQUEST__OP_REMOVE_RULE:
                return service_remove_rule(x->svc, x->peer, req->remove_rule->cgroup, &x->rf);
        case MEMACCT__V1__REQUEST__OP_LIST_RULES:
                return on_list_rules(x, req->list_rules);
        case MEMACCT__V1__REQUEST__OP_SET_OWNER:
                return on_set_owner(x, req->set_owner);
        case MEMACCT__V1__REQUEST__OP_GET_INFO:
                return on_get_info(x);
        case MEMACCT__V1__REQUEST__OP_LIST_SESSIONS:
                return on_list_sessions(x, req->list_sessions);
        case MEMACCT__V1__REQUEST__OP_PRUNE_MIRRORS:
                return on_prune(x);
        case MEMACCT__V1__REQUEST__OP_ADD_REGION:
                return request_on_add_region(x, req->add_region);
        case MEMACCT__V1__REQUEST__OP_SET_RECLAIMABLE:
                return request_on_set_reclaimable(x, req->set_reclaimable);
        case MEMACCT__V1__REQUEST__OP_RECLAIM_DONE:
                return request_on_reclaim_done(x, req->reclaim_done);
        case MEMACCT__V1__REQUEST__OP_RECLAIM:
                return request_on_reclaim(x, req->reclaim);
        case MEMACCT__V1__REQUEST__OP_REMOVE_REGION:
                return request_on_remove_region(x, req->remove_region);
        case MEMACCT__V1__REQUEST__OP_LIST_REGIONS:
                return request_on_list_regions(x);
        case MEMACCT__V1__REQUEST__OP_TRANSFER:
                return request_on_transfer(x, req->transfer);
        case MEMACCT__V1__REQUEST__OP_EVICT_VALUABLE:
                return request_on_evict_valuable(x, req->evict_valuable);
        default:
                return refusal_set(&x->rf, -EPROTO, "unknown operation");
        }
}

/* The operation of @c for the request counts (the switch above names them all). */
static ServiceOp request_op(Memacct__V1__Request__OpCase c) {
        switch (c) {
        case MEMACCT__V1__REQUEST__OP_HELLO: return SERVICE_OP_HELLO;
        case MEMACCT__V1__REQUEST__OP_CREATE_GROUP: return SERVICE_OP_CREATE_GROUP;
        case MEMACCT__V1__REQUEST__OP_REMOVE_GROUP: return SERVICE_OP_REMOVE_GROUP;
        case MEMACCT__V1__REQUEST__OP_SET_LIMITS: return SERVICE_OP_SET_LIMITS;
        case MEMACCT__V1__REQUEST__OP_GET_GROUP: return SERVICE_OP_GET_GROUP;
        case MEMACCT__V1__REQUEST__OP_LIST_GROUPS: return SERVICE_OP_LIST_GROUPS;
        case MEMACCT__V1__REQUEST__OP_CHARGE: return SERVICE_OP_CHARGE;
        case MEMACCT__V1__REQUEST__OP_UNCHARGE: return SERVICE_OP_UNCHARGE;
        case MEMACCT__V1__REQUEST__OP_ATTACH: return SERVICE_OP_ATTACH;
        case MEMACCT__V1__REQUEST__OP_MOVE_SESSION: return SERVICE_OP_MOVE;
        case MEMACCT__V1__REQUEST__OP_GET_CLIENT: return SERVICE_OP_GET_CLIENT;
        case MEMACCT__V1__REQUEST__OP_RESET_PEAK: return SERVICE_OP_RESET_PEAK;
        case MEMACCT__V1__REQUEST__OP_SUBSCRIBE: return SERVICE_OP_SUBSCRIBE;
        case MEMACCT__V1__REQUEST__OP_STOCK_SETUP: return SERVICE_OP_STOCK_SETUP;
        case MEMACCT__V1__REQUEST__OP_IMPORT_CGROUPS: return SERVICE_OP_IMPORT_CGROUPS;
        case MEMACCT__V1__REQUEST__OP_ADD_RULE: return SERVICE_OP_ADD_RULE;
        case MEMACCT__V1__REQUEST__OP_REMOVE_RULE: return SERVICE_OP_REMOVE_RULE;
        case MEMACCT__V1__REQUEST__OP_LIST_RULES: return SERVICE_OP_LIST_RULES;
        case MEMACCT__V1__REQUEST__OP_SET_OWNER: return SERVICE_OP_SET_OWNER;
        case MEMACCT__V1__REQUEST__OP_GET_INFO: return SERVICE_OP_GET_INFO;
        case MEMACCT__V1__REQUEST__OP_LIST_SESSIONS: return SERVICE_OP_LIST_SESSIONS;
        case MEMACCT__V1__REQUEST__OP_PRUNE_MIRRORS: return SERVICE_OP_PRUNE_MIRRORS;
        case MEMACCT__V1__REQUEST__OP_ADD_REGION: return SERVICE_OP_ADD_REGION;
        case MEMACCT__V1__REQUEST__OP_REMOVE_REGION: return SERVICE_OP_REMOVE_REGION;
        case MEMACCT__V1__REQUEST__OP_LIST_REGIONS: return SERVICE_OP_LIST_REGIONS;
        case MEMACCT__V1__REQUEST__OP_TRANSFER: return SERVICE_OP_TRANSFER;
        case MEMACCT__V1__REQUEST__OP_EVICT_VALUABLE: return SERVICE_OP_EVICT_VALUABLE;
        case MEMACCT__V1__REQUEST__OP_SET_RECLAIMABLE: return SERVICE_OP_SET_RECLAIMABLE;
        case MEMACCT__V1__REQUEST__OP_RECLAIM_DONE: return SERVICE_OP_RECLAIM_DONE;
        case MEMACCT__V1__REQUEST__OP_RECLAIM: return SERVICE_OP_RECLAIM;
        default: return SERVICE_OP_OTHER;
        }
}

/*
 * Every string of the request as the client sent it: one with a NUL
 * byte would be cut there by every C function after the decoder, and the
 * daemon act on another path than the one it was sent. Return: 0, or
 * -EINVAL with the refusal naming the field.
 */
static int request_strings_check(Request *x, const uint8_t *body, size_t len) {
        char field[128];
        int r;

        r = wire_find_nul_string(&memacct__v1__request__descriptor, body, len, field, sizeof(field));
        if (r > 0)
                return refusal_set(&x->rf, -EINVAL, "%s: a string must not hold a NUL byte", field);
        if (r < 0)
                return refusal_set(&x->rf, -EPROTO, "malformed request: not a memacct.v1.Request");
        return 0;
}

static void request_done(Request *x) {
        if (x->has_group)
                wire_group_info_free(&x->res.gi);
        if (x->has_list) {
                for (size_t i = 0; i < x->res.gl.n_groups; i++) {
                        Memacct__V1__GroupInfo *gi = x->res.gl.groups[i];

                        free(gi->path);
                        wire_group_info_free(gi);
                        free(gi);
                }
                free(x->res.gl.groups);
        }
        if (x->has_kept) {
                for (size_t i = 0; i < x->res.ir.n_kept_limits; i++)
                        free(x->res.ir.kept_limits[i]);
                free(x->res.ir.kept_limits);
        }
        if (x->has_rules) {
                for (size_t i = 0; i < x->res.rl.n_rules; i++) {
                        free(x->res.rl.rules[i]->cgroup);
                        free(x->res.rl.rules[i]->group);
                        free(x->res.rl.rules[i]);
                }
                free(x->res.rl.rules);
        }
        if (x->has_sessions) {
                for (size_t i = 0; i < x->res.sl.n_sessions; i++) {
                        free(x->res.sl.sessions[i]->comm);
                        free(x->res.sl.sessions[i]->transport);
                        free(x->res.sl.sessions[i]->group);
                        free(x->res.sl.sessions[i]);
                }
                free(x->res.sl.sessions);
        }
        if (x->has_pruned) {
                for (size_t i = 0; i < x->res.pr.n_removed; i++)
                        free(x->res.pr.removed[i]);
                free(x->res.pr.removed);
                for (size_t i = 0; i < x->res.pr.n_kept; i++) {
                        free(x->res.pr.kept[i]->group);
                        free(x->res.pr.kept[i]->why);
                        free(x->res.pr.kept[i]);
                }
                free(x->res.pr.kept);
        }
        free(x->regions);
}

int request_status_append(int r, const char *message, struct evbuffer *out) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;

        resp.has_id = true;
        resp.id = 0;
        reply_status(&resp, r, message);
        return wire_response_append(&resp, out);
}

int request_refusal_append(uint64_t id, const Refusal *rf, struct evbuffer *out) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;

        resp.has_id = true;
        resp.id = id;
        reply_status(&resp, rf->error, rf->message);
        return wire_response_append(&resp, out);
}

int request_serve(Service *svc, Peer *p, const uint8_t *body, size_t len, int fd, struct evbuffer *out,
                  uint64_t *ret_id) {
        uint32_t max_frame = service_max_frame(svc);
        ProtobufCAllocator alloc = wire_arena_allocator();
        Memacct__V1__Request *req = NULL;
        uint64_t start_nsec;
        Request x;
        int r;

        if (ret_id)
                *ret_id = 0;
        if (len > max_frame || wire_arena_reset(max_frame) < 0)
                r = request_status_append(-EPROTO, "frame too large", out);
        else if (!(req = memacct__v1__request__unpack(&alloc, len, body)))
                r = request_status_append(-EPROTO, "malformed request: not a memacct.v1.Request", out);
        if (!req) {
                if (fd >= 0)
                        close(fd);
                return -EPROTO;
        }

        x.svc = svc;
        x.peer = p;
        memacct__v1__response__init(&x.resp);
        x.resp.has_id = x.resp.has_status = true;
        x.resp.id = req->id;
        if (ret_id)
                *ret_id = req->id;
        x.resp.status = MEMACCT__V1__STATUS__STATUS_OK;
        x.has_group = x.has_list = x.has_rules = x.has_sessions = x.has_pruned = x.pruned_oom = false;
        x.has_kept = false;
        x.regions = NULL;
        x.list_bytes = 0;
        refusal_init(&x.rf);

        service_request_served(x.svc);
        /* The one clock read of the request's start; its end is in selfstats_request(). */
        start_nsec = selfstats_clock_nsec();
        r = request_strings_check(&x, body, len);
        if (r == 0)
                r = request_handle(&x, req, fd);
        if (fd >= 0)
                close(fd);
        if (r == -EINPROGRESS) {
                /* Held while reclaim runs: no reply yet; it is served again. */
                request_done(&x);
                memacct__v1__request__free_unpacked(req, &alloc);
                return REQUEST_WAIT;
        }
        selfstats_request(SERVICE_TRANSPORT_SOCKET, request_op(req->op_case), status_from_errno(r < 0 ? r : 0),
                          start_nsec);
        if (r < 0) {
                /* A refusal carries no result, whatever a handler began. */
                x.resp.result_case = MEMACCT__V1__RESPONSE__RESULT__NOT_SET;
                reply_status(&x.resp, r, x.rf.message);
                if (x.rf.refused_by[0])
                        x.resp.refused_path = x.rf.refused_by;
        }
        r = r == -EPROTO ? -EPROTO : 0;
        if (wire_response_append(&x.resp, out) < 0)
                r = -EPROTO;
        request_done(&x);
        memacct__v1__request__free_unpacked(req, &alloc);
        return r;
}
