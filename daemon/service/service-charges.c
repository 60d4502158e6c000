/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations on sessions and charges: hello, charge, uncharge,
 * attach, move, client counters, subscriptions and the stock page.
 *
 * Policy that is decided here and nowhere else:
 * - every charge refused by a max first drains the stock of the sessions
 *   under the refusing group and tries once more (MEM_CHARGE_DRAIN, the
 *   kernel's drain_all_stock() before it gives up), whichever transport
 *   asked;
 * - only root forces a charge past max;
 * - a stock refill belongs to a session, so it is never kept;
 * - a session charge of a peer that is not attached attaches it to the
 *   group it names; a bus peer's session is opened on its first use.
 */

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "core/charge.h"
#include "core/region.h"
#include "core/session.h"
#include "macro.h"
#include "cgroup/mirror.h"
#include "base/procid.h"
#include "service/message-ids.h"
#include "service/service-internal.h"

int service_hello(Service *svc, Peer *p, const uint32_t *version, ServiceHello *ret, Refusal *rf) {
        ServiceSettings s = service_settings(svc);

        if (version && *version < 1)
                return refusal_set(rf, -EINVAL, "protocol version %u is not supported", *version);
        *ret = (ServiceHello) {
                .version = SERVICE_PROTOCOL_VERSION,
                .max_frame = s.max_frame,
                .charge_batch = s.charge_batch,
                .pid = p->creds.pid,
                .uid = p->creds.uid,
        };
        return 0;
}

static int parse_stat(const char *s, MemStatItem *ret, Refusal *rf) {
        MemStatItem item;

        if (!s || !*s) {
                *ret = MEM_STAT_ANON;
                return 0;
        }
        item = mem_stat_item_from_string(s);
        if (item < 0)
                return refusal_set(rf, -EINVAL, "unknown stat item '%s'", s);
        *ret = item;
        return 0;
}

/* @p's session, opened now if it has none; the test inline, as every
 * session charge asks. */
static int open_session_slow(Peer *p, Refusal *rf);

static inline int open_session(Peer *p, Refusal *rf) {
        return _likely_(p->session) ? 0 : open_session_slow(p, rf);
}

static int open_session_slow(Peer *p, Refusal *rf) {
        int r;

        /* The daemon's own peer acts on groups; a session of its own
         * would outlive every client. */
        if (p->internal)
                return refusal_set(rf, -EINVAL, "the daemon's own requests have no session");
        r = peer_open_session(p);

        if (r == -EUSERS)
                return refusal_set(rf, r, "too many sessions for uid %u", (unsigned) p->creds.account);
        if (r < 0)
                return refusal_set(rf, r, "cannot open a session: %s", refusal_errno_text(r));
        return 0;
}

/*
 * The group @p's session is attached to, with a reference, or NULL. The
 * session's reference keeps it alive only until a move from another
 * thread replaces it; groups are freed after a grace period, so under
 * the read lock it can be looked at, and kept if it is not going away.
 */
static MemGroup *attached_group(MemSession *s) {
        MemGroup *g;

        core_read_lock();
        g = atomic_load(&s->group);
        if (g && !group_tryget(g))
                g = NULL;
        core_read_unlock();
        return g;
}

/*
 * The group a session charge of @p goes to: the one its session is
 * attached to, or, when it is not attached yet, @path, to which the
 * session attaches when @attach (a charge) and does not otherwise (an
 * uncharge: a session that is not attached holds nothing to release).
 * @path NULL or "" means "the attached group". *@ret_attached says
 * whether the session is attached to the group returned.
 */
static int session_target(Service *svc, Peer *p, const char *path, bool attach, MemGroup **ret,
                          bool *ret_attached, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *attached = NULL;
        MemGroup *g;
        int r;

        r = open_session(p, rf);
        if (r < 0)
                return r;
        attached = attached_group(p->session);
        *ret_attached = attached != NULL;
        if (!path || !*path) {
                if (!attached)
                        return refusal_set(rf, -ENOTCONN, "session not attached to a group");
                *ret = TAKE_PTR(attached);
                return 0;
        }
        r = service_lookup(svc, path, &g, rf);
        if (r < 0)
                return r;
        if (attached && attached != g) {
                r = refusal_set(rf, -EINVAL, "%s: the session is attached to %s; move it first", path,
                                attached->path);
                group_unref(g);
                return r;
        }
        if (!attached) {
                if (!authz_may_use(&p->who, g)) {
                        group_unref(g);
                        return refusal_denied(rf, path);
                }
                r = attach ? session_attach(p->session, g) : 0;
                if (r < 0) {
                        group_unref(g);
                        return refusal_path(rf, r, path);
                }
                *ret_attached = attach;
        }
        *ret = g;
        return 0;
}

/*
 * The checks a charge (@charging) and an uncharge share; the target,
 * with a reference, and whether the session is attached to it (kept:
 * true). Force and stock are a charge's only: an uncharge ignores them.
 */
static int charge_begin(Service *svc, Peer *p, const ServiceCharge *c, bool charging, MemStatItem *ret_item,
                        int *ret_key, MemGroup **ret, bool *ret_attached, Refusal *rf) {
        int r;

        r = service_peer_region_key(svc, p, c->region, ret_key, rf);
        if (r < 0)
                return r;
        if (*ret_key != MEM_REGION_MEMORY && c->stat && *c->stat)
                return refusal_set(rf, -EINVAL, "stat items are memory's; region %s has none", c->region);
        r = parse_stat(c->stat, ret_item, rf);
        if (r < 0)
                return r;
        if (!c->has_bytes)
                return refusal_set(rf, -EINVAL, "bytes is required");
        if (charging && c->keep && c->stock)
                return refusal_set(rf, -EINVAL, "a stock refill belongs to the session, not the group");
        *ret_attached = true;
        if (c->keep)
                return service_lookup_for(svc, p, c->path, authz_may_use, ret, rf);
        return session_target(svc, p, c->path, charging, ret, ret_attached, rf);
}

/*
 * A delegation root is a group delegated to its owner by itself, not by
 * an ancestor. As in cgroup delegation, its own settings belong to whoever
 * delegated it: those who may modify it (root, or a uid its parent is
 * delegated to). Their kept charges on it are a reservation its delegate
 * may not undo.
 */
static bool delegation_root(MemGroup *g) {
        return g->parent && g->owner != 0 && !group_is_delegated_to(g->parent, g->owner);
}

bool service_kept_by_delegator(const AuthzWho *who, MemGroup *g) {
        return delegation_root(g) && authz_may_modify(who, g);
}

/* The delegate's side: whoever may use the delegation root but not modify it. */
bool service_kept_by_delegate(const AuthzWho *who, MemGroup *g) {
        return delegation_root(g) && !authz_may_modify(who, g);
}

/* The events an operation raises are its caller's: set for its length. */
static Peer *requester_begin(Peer *p) {
        events_requester_set(p->creds.pid, p->creds.uid);
        return p;
}

static void requester_endp(Peer **p) {
        (void) p;
        events_requester_set(0, 0);
}

/* One try of service_charge(); @may_reclaim: a refusal asks the holders below the refusing group first. */
static _always_inline_ int service_charge_once(Service *svc, Peer *p, const ServiceCharge *c, bool may_reclaim,
                               ServiceChargeResult *ret, Refusal *rf) {
        _cleanup_(requester_endp) _unused_ Peer *requester = requester_begin(p);
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        unsigned flags = MEM_CHARGE_DRAIN | (may_reclaim ? MEM_CHARGE_NO_OOM : 0), stock_index = 0;
        MemChargeResult res = {};
        MemStatItem item;
        bool attached;
        int key = MEM_REGION_MEMORY, r;

        if (c->force) {
                if (!authz_may_force(&p->who))
                        return refusal_set(rf, -EPERM, "only root forces a charge past max");
                flags |= MEM_CHARGE_FORCE;
        }
        r = charge_begin(svc, p, c, true, &item, &key, &g, &attached, rf);
        if (r < 0)
                return r;
        if (c->keep) {
                r = service_admit(svc, rf);
                if (r < 0)
                        return r;
                if (service_kept_by_delegator(&p->who, g))
                        flags |= MEM_CHARGE_DELEGATOR;
                r = core_charge_kept_in(svc->core, g, key, c->bytes, item, flags, &res);
                if (r == 0) {
                        service_committed(svc, p, g->path);
                        service_audit(p, MESSAGE_KEPT_CHARGED, g->path, "Kept charge of %llu %s bytes on %s%s",
                                      (unsigned long long) c->bytes,
                                      key == MEM_REGION_MEMORY ? mem_stat_item_to_string(item) : c->region, g->path,
                                      c->force ? " (forced)" : "");
                }
        } else if (key != MEM_REGION_MEMORY && c->stock)
                r = session_charge_region_stock(p->session, key, c->bytes, &res, &stock_index);
        else if (key != MEM_REGION_MEMORY)
                r = session_charge_region(p->session, key, c->bytes, flags, &res);
        else if (c->stock)
                r = session_charge_stock(p->session, c->bytes, item, &res);
        else
                r = session_charge(p->session, c->bytes, item, flags, &res);

        if (r == -EDQUOT && may_reclaim && res.refused) {
                if (service_reclaim_start(svc, p, g, res.refused, key, c->bytes) == -EINPROGRESS) {
                        charge_result_done(&res);
                        return -EINPROGRESS;
                }
                /* Nothing to ask: the refusal stands, with the oom event
                 * the try did not raise. */
                if (key == MEM_REGION_MEMORY)
                        group_event_raise(res.refused, MEM_EVENT_OOM);
                else
                        region_group_event(svc->core, res.refused, key, MEM_EVENT_OOM);
        }
        if (r == -EDQUOT && key != MEM_REGION_MEMORY)
                r = refusal_region_limit(rf, g->path, res.refused ? res.refused->path : NULL, c->region,
                                         res.refused && !res.refused->parent);
        else if (r == -EDQUOT)
                r = refusal_limit(rf, g->path, res.refused ? res.refused->path : NULL);
        else if (r == -ENXIO)
                r = refusal_set(rf, -EINVAL, "a stock refill needs StockSetup first");
        else if (r == -ENOENT && key != MEM_REGION_MEMORY && !c->keep)
                r = refusal_set(rf, r, "no region '%s'", c->region);
        else if (r < 0)
                r = refusal_set(rf, r, "%s: %s", g->path, refusal_errno_text(r));
        else {
                /* high means reclaim: the charge stands, the holders below
                 * the groups it took above high are asked for the overage. */
                if (_unlikely_(res.over_high > 0))
                        service_reclaim_high(svc, p, g, key);
                *ret = (ServiceChargeResult) {
                        .over_high = res.over_high,
                        .throttle_usec = res.throttle_usec,
                        .over_max = res.over_max,
                        /* A session's region charge read its margin as it went;
                         * a kept one in a region did not. */
                        .margin = key == MEM_REGION_MEMORY ? group_margin(g) :
                                  !c->keep                 ? res.margin :
                                                             region_group_margin(svc->core, g, key),
                        .stock_index = stock_index,
                };
        }
        charge_result_done(&res);
        return r;
}

int service_charge(Service *svc, Peer *p, const ServiceCharge *c, ServiceChargeResult *ret, Refusal *rf) {
        bool may_reclaim;
        int r;

        /* Served again after a round of reclaim: one try more. */
        if (_unlikely_(p->reclaim.waiting) && service_reclaim_end(svc, p, NULL))
                p->reclaim.tries++;
        may_reclaim = c->can_wait && !c->no_wait && !c->stock && p->reclaim.tries < SERVICE_RECLAIM_TRIES;
        r = service_charge_once(svc, p, c, may_reclaim, ret, rf);
        if (_unlikely_(p->reclaim.tries > 0) && r != -EINPROGRESS)
                p->reclaim.tries = 0;
        return r;
}

/* What @g keeps of @item (in @key) now: only for the words of a refusal. */
static uint64_t group_info_kept(MemCore *core, MemGroup *g, int key, MemStatItem item) {
        MemRegionInfo ri;
        MemGroupInfo info;

        if (key != MEM_REGION_MEMORY)
                return region_read_one(core, g, key, NULL, &ri) == 0 ? ri.kept : 0;
        group_read(core, g, NULL, false, &info);
        return info.kept[item];
}

int service_uncharge(Service *svc, Peer *p, const ServiceCharge *c, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemStatItem item;
        bool attached, delegate = false;
        int key = MEM_REGION_MEMORY, r;

        r = charge_begin(svc, p, c, false, &item, &key, &g, &attached, rf);
        if (r < 0)
                return r;
        if (c->keep) {
                r = service_admit(svc, rf);
                if (r < 0)
                        return r;
                delegate = service_kept_by_delegate(&p->who, g);
                r = key == MEM_REGION_MEMORY ? group_uncharge_kept_as(svc->core, g, c->bytes, item, delegate) :
                                               region_uncharge_kept_as(svc->core, g, key, c->bytes, delegate);
                if (r == 0) {
                        service_committed(svc, p, g->path);
                        service_audit(p, MESSAGE_KEPT_RELEASED, g->path, "Kept charge of %llu %s bytes released from %s",
                                      (unsigned long long) c->bytes,
                                      key == MEM_REGION_MEMORY ? mem_stat_item_to_string(item) : c->region, g->path);
                }
        } else if (!attached)
                r = c->bytes > 0 ? -ERANGE : 0; /* it holds nothing */
        else if (key != MEM_REGION_MEMORY)
                r = session_uncharge_region(p->session, key, c->bytes);
        else
                r = session_uncharge(p->session, c->bytes, item);
        if (r == -ERANGE && delegate) {
                uint64_t kept = group_info_kept(svc->core, g, key, item),
                         theirs = key == MEM_REGION_MEMORY ? group_kept_delegator(g, item) :
                                                             region_kept_delegator(svc->core, g, key);

                if (kept >= c->bytes)
                        return refusal_set(rf, -EPERM,
                                           "%s: %llu of the %llu %s bytes it keeps were kept by whoever "
                                           "delegated it, which its delegate may not release; %llu are "
                                           "the delegate's",
                                           g->path, (unsigned long long) theirs, (unsigned long long) kept,
                                           key == MEM_REGION_MEMORY ? mem_stat_item_to_string(item) : c->region,
                                           (unsigned long long) (kept - theirs));
        }
        if (r == -ERANGE)
                return refusal_set(rf, r, "%s: uncharge of %llu %s bytes is more than %s", g->path,
                                   (unsigned long long) c->bytes,
                                   key == MEM_REGION_MEMORY ? mem_stat_item_to_string(item) : c->region,
                                   c->keep ? "the group keeps" : "the session holds");
        if (r < 0)
                return refusal_set(rf, r, "%s: %s", g->path, refusal_errno_text(r));
        return 0;
}

/* The group an Attach of @path means: @path, or for "" and "auto" the
 * placement's answer (service_place()). */
static int attach_path(Service *svc, Peer *p, const char *path, char *buf, size_t size, const char **ret,
                       Refusal *rf) {
        int r;

        if (path && *path && strcmp(path, "auto") != 0) {
                *ret = path;
                return 0;
        }
        r = service_place(svc, p, buf, size, rf);
        if (r < 0)
                return r;
        *ret = buf;
        return 0;
}

int service_attach(Service *svc, Peer *p, const char *path, Refusal *rf) {
        return service_attach_to(svc, p, path, NULL, 0, rf);
}

int service_attach_to(Service *svc, Peer *p, const char *path, char *ret_path, size_t size, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        char buf[MEM_PATH_MAX + 1];
        int r;

        r = attach_path(svc, p, path, buf, sizeof(buf), &path, rf);
        if (r < 0)
                return r;
        r = service_lookup_for(svc, p, path, authz_may_use, &g, rf);
        if (r < 0)
                return r;
        r = open_session(p, rf);
        if (r < 0)
                return r;
        r = session_attach(p->session, g);
        if (r == -EBUSY)
                return refusal_set(rf, r, "the session holds charges; move it instead");
        if (r < 0)
                return refusal_path(rf, r, path);
        /* The group's own path, not the request's: "auto" and a path
         * spelt with a trailing slash both answer what the group is. */
        if (ret_path && size > 0)
                snprintf(ret_path, size, "%s", g->path);
        return 0;
}

/*
 * The process instance a request naming @pid means, and whose sessions of
 * it the caller may move (*@ret_uid). Root means the process that has
 * @pid now, every uid of it; anyone else may name only its own pid, and
 * means its own process, and only as long as that process still has the
 * pid: a connection kept open by a child after its opener exited has no
 * process behind it, and a process that got the pid since is another.
 * Sessions opened with no instance (in-process peers) go by the pid.
 */
static int move_instance(Peer *p, pid_t pid, uint64_t *ret, uid_t *ret_uid, Refusal *rf) {
        uint64_t now = 0;
        int r;

        bool root = authz_is_root(&p->who);

        *ret_uid = root ? MEM_UID_ANY : p->creds.uid;
        if (!root && p->creds.instance == 0) {
                *ret = 0;
                return 0;
        }
        r = proc_instance_of_pid(pid, &now);
        if (r == -ESRCH)
                now = proc_instance_gone(); /* no live process: only instance-less sessions */
        else if (r < 0)
                return refusal_set(rf, r, "pid %d: cannot tell which process it is: %s", (int) pid,
                                   refusal_errno_text(r));
        if (!root && now != p->creds.instance)
                return refusal_set(rf, -ESRCH,
                                   "pid %d: the process that opened this connection has exited; "
                                   "move its session as pid 0", (int) pid);
        *ret = now;
        return 0;
}

int service_move(Service *svc, Peer *p, pid_t pid, const char *path, Refusal *rf) {
        _cleanup_(requester_endp) _unused_ Peer *requester = requester_begin(p);
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemChargeResult res = {};
        uint64_t instance = 0;
        uid_t uid = MEM_UID_ANY;
        int r;

        r = service_lookup_for(svc, p, path, authz_may_use, &g, rf);
        if (r < 0)
                return r;
        if (!authz_may_move(&p->who, pid))
                return refusal_set(rf, -EPERM, "only root moves other processes");
        if (pid == 0) {
                /* Its own session; one that was never opened (a bus peer
                 * that never charged) is not attached either. */
                r = p->session ? session_move(p->session, g, &res) : -ENOTCONN;
                if (r == 0)
                        r = 1;
        } else {
                r = move_instance(p, pid, &instance, &uid, rf);
                if (r < 0)
                        return r;
                r = client_move_process(svc->core, pid, instance, uid, g, &res);
        }
        if (r == -EDQUOT)
                r = refusal_limit(rf, g->path, res.refused ? res.refused->path : NULL);
        else if (r == -ESRCH)
                r = refusal_set(rf, r, "pid %d has no session", (int) pid);
        else if (r < 0)
                r = refusal_set(rf, r, "%s: %s", g->path, refusal_errno_text(r));
        charge_result_done(&res);
        return r;
}

int service_get_client(Service *svc, Peer *p, pid_t pid, bool exact, pid_t *ret_pid,
                       uint64_t ret[_MEM_RSS_MAX], Refusal *rf) {
        int64_t rss[_MEM_RSS_MAX];
        uint64_t instance = p->creds.instance;
        int r;

        if (pid == 0)
                pid = p->creds.pid;
        if (!authz_may_read_client(service_read_access(svc), &p->who, pid))
                return refusal_set(rf, -EPERM, "pid %d: permission denied", (int) pid);
        /* Its own pid is its own process; another is the one that has
         * the pid now, never the one that had it before. */
        if (pid != p->creds.pid && proc_instance_of_pid(pid, &instance) < 0)
                instance = proc_instance_gone();
        r = client_read_rss_process(svc->core, pid, instance, exact, rss);
        if (r < 0)
                return refusal_set(rf, r, "pid %d has no session", (int) pid);
        for (MemRss i = 0; i < _MEM_RSS_MAX; i++)
                ret[i] = (uint64_t) rss[i];
        *ret_pid = pid;
        return 0;
}

int service_subscribe(Service *svc, Peer *p, const char *path, Refusal *rf) {
        return service_subscribe_region(svc, p, path, NULL, rf);
}

int service_subscribe_region(Service *svc, Peer *p, const char *path, const char *region, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int key = MEM_REGION_MEMORY, r;

        if (region && strcmp(region, "*") == 0)
                key = EVENTS_ALL_REGIONS;
        else {
                r = service_region_key(svc, region, &key, rf);
                if (r < 0)
                        return r;
        }
        r = service_lookup(svc, path && *path ? path : "/", &g, rf);
        if (r < 0)
                return r;
        if (!service_may_read(svc, p, g))
                return refusal_denied(rf, g->path);
        if (!p->subscriber.delivery)
                return refusal_set(rf, -EINVAL, "this transport cannot deliver events");
        if (p->subscriber.nsubs >= SERVICE_SUBSCRIPTIONS_MAX)
                return refusal_set(rf, -ENOSPC, "too many subscriptions on one connection");
        /* Every subscription is walked for every event: bounded per uid
         * and in total, so one uid cannot slow everyone's charges. */
        r = registry_uid_acquire(svc->registry, p->creds.account, UID_SUBSCRIPTIONS, false);
        if (r == -EUSERS)
                return refusal_set(rf, -ENOSPC, "too many subscriptions for uid %u ([limits] "
                                   "subscriptions-per-uid = %u)", (unsigned) p->creds.account,
                                   registry_bounds(svc->registry).per_uid[UID_SUBSCRIPTIONS]);
        if (r == -ENOSPC)
                return refusal_set(rf, -ENOSPC, "too many subscriptions ([limits] subscriptions = %u)",
                                   registry_bounds(svc->registry).total[UID_SUBSCRIPTIONS]);
        if (r < 0)
                return refusal_set(rf, r, "out of memory");
        r = events_subscribe(svc->events, &p->subscriber, g->path, key);
        if (r < 0) {
                registry_uid_release(svc->registry, p->creds.account, UID_SUBSCRIPTIONS, 1);
                return refusal_set(rf, r, "out of memory");
        }
        return 0;
}

_Static_assert(MEM_STOCK_COUNTERS * sizeof(uint64_t) <= SERVICE_STOCK_PAGE_SIZE, "the stock page holds every counter");

int service_stock_setup(Service *svc, Peer *p, int fd, Refusal *rf) {
        const int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
        struct stat st;
        void *page;
        int seals, r;

        (void) svc;
        if (fd < 0)
                return refusal_set(rf, -EINVAL, "StockSetup needs a memfd sent with the frame (SCM_RIGHTS)");
        if (p->stock_page)
                return refusal_set(rf, -EBUSY, "the session has a stock page already");
        r = open_session(p, rf);
        if (r < 0)
                return r;
        /* A client that could shrink the file would make our next access
         * to the mapping a SIGBUS: only a sealed page is mapped. */
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || (seals & need) != need)
                return refusal_set(rf, -EINVAL, "the stock memfd must be sealed against shrink, grow and seal");
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != SERVICE_STOCK_PAGE_SIZE)
                return refusal_set(rf, -EINVAL, "the stock memfd must be exactly %d bytes",
                                   SERVICE_STOCK_PAGE_SIZE);
        page = mmap(NULL, SERVICE_STOCK_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED)
                return refusal_set(rf, -errno, "cannot map the stock page: %m");
        r = session_set_stock(p->session, page);
        if (r < 0) {
                munmap(page, SERVICE_STOCK_PAGE_SIZE);
                return refusal_set(rf, r, "the session has a stock page already");
        }
        /* Under the registry's lock: a session listing reads the page. */
        registry_peer_set_stock(p, page, SERVICE_STOCK_PAGE_SIZE);
        return 0;
}
