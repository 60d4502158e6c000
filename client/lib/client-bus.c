/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The D-Bus transport of libmemacct: the same handle, the same calls, over
 * org.memacct1 (org.memacct1(5)) instead of the socket.
 *
 * A bus handle is a memacct whose bus member points at the table at the
 * end of this file; the public functions check their arguments and hand
 * over to it at their entry, so the socket code never links against
 * sd-bus and its paths gain one test of a field set once at connect time.
 * The stock's fast path gains nothing: a bus handle never has a page, so
 * its stocked calls fall to the slow path, which refuses them.
 *
 * What the daemon sees: the bus peer (our unique name) is the session.
 * Attach attaches it; charges without MEMACCT_KEEP belong to it and are
 * released by the daemon when the peer leaves the bus (memacct_close(), or
 * the process ending however it ends). There is no reconnection: if the
 * daemon restarts, the session and its charges are gone and the calls
 * that follow fail or act on a fresh session.
 *
 * Errors come back as org.memacct1.Error.* names from the status table
 * (proto/status.c), mapped back to the errno the socket reports for the
 * same status; a LimitExceeded message ends with "(max of /path)", from
 * which memacct_refused_path() is taken.
 *
 * sd-bus objects are not thread-safe, so the handle's mutex serialises
 * every use of the connection, message and slot reference counts included
 * (they are not atomic). memacct_next_event() sleeps without it, in poll()
 * on the bus fd and an eventfd that any thread's call kicks on its way
 * out, since that call may have read our signals into sd-bus's queue,
 * where poll() cannot see them.
 */

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "client-deadline.h"
#include "client-error.h"
#include "client-event-queue.h"
#include "client-groups.h"
#include "client-stat.h"
#include "client.h"
#include "macro.h"
#include "status.h"

#define BUS_NAME "org.memacct1"
#define BUS_PATH "/org/memacct1"
#define BUS_MANAGER BUS_NAME ".Manager"
#define BUS_GROUP BUS_NAME ".Group"
/* GetAll calls in flight while listing: pipelined (with 16 in flight each
 * call costs about a seventh of a synchronous one), and well below
 * dbus-daemon's max_replies_per_connection. */
#define BUS_LIST_INFLIGHT 32

struct BusConn {
        sd_bus *bus;
        sd_bus_slot *match; /* the Event signal, from the first subscription on */
        char **prefixes;    /* subscribed subtrees */
        size_t n_prefixes;
        EventQueue events;  /* the Event signals under prefixes */
        int wake_fd;        /* kicked when a call ends while a thread sleeps in next_event */
        unsigned sleepers;
};


static void bus_lock(memacct *m) {
        pthread_mutex_lock(&m->lock);
}

static void bus_unlock(memacct *m) {
        BusConn *c = m->bus_conn;

        /* A thread asleep in next_event polls the fd, which this thread may
         * have read its signals from: wake it to look at the queue. */
        if (c->sleepers > 0)
                (void) eventfd_write(c->wake_fd, 1);
        pthread_mutex_unlock(&m->lock);
}

static uint64_t call_timeout_usec(const memacct *m) {
        /* UINT64_MAX: sd-bus's "no timeout". */
        return m->timeout_msec > 0 ? (uint64_t) m->timeout_msec * 1000 : UINT64_MAX;
}

/* The group a LimitExceeded message names: "...: limit exceeded (max of /a)". */
static const char *refused_from_message(const char *msg, char *buf, size_t size) {
        const char *p = NULL, *q, *end;
        size_t n;

        for (q = msg ? strstr(msg, "(max of ") : NULL; q; q = strstr(q + 1, "(max of "))
                p = q;
        if (!p)
                return NULL;
        p += strlen("(max of ");
        end = strrchr(p, ')');
        if (!end || end == p)
                return NULL;
        n = MIN((size_t) (end - p), size - 1);
        memcpy(buf, p, n);
        buf[n] = 0;
        return buf;
}

/*
 * Record a failure: @e the error reply, if there was one; else @r, what
 * sd-bus returned. Return: the errno the socket would report.
 */
static int bus_fail(const memacct *m, const sd_bus_error *e, int r) {
        char refused[1024];
        const char *msg;

        if (e && sd_bus_error_is_set(e)) {
                msg = e->message && *e->message ? e->message : e->name;
                for (unsigned s = MEM_STATUS_OK + 1; s < _MEM_STATUS_MAX; s++) {
                        const char *name = status_to_dbus_error((MemStatus) s);

                        if (!name || !sd_bus_error_has_name(e, name))
                                continue;
                        return client_error(m, status_to_errno((MemStatus) s), msg,
                                            s == MEM_STATUS_LIMIT_EXCEEDED
                                                    ? refused_from_message(e->message, refused,
                                                                           sizeof(refused))
                                                    : NULL);
                }
                /* Errors of the bus or of sd-bus's own checks on the server. */
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_AUTH_FAILED,
                                           SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
                        return client_error(m, -EPERM, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER, SD_BUS_ERROR_DISCONNECTED))
                        return client_error(m, -ECONNRESET, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                        return client_error(m, -ETIMEDOUT, msg, NULL);
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        /* A group object that went away meanwhile. */
                        return client_error(m, -ENOENT, msg, NULL);
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_METHOD,
                                           SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                           SD_BUS_ERROR_UNKNOWN_PROPERTY))
                        return client_error(m, -EOPNOTSUPP, msg, NULL);
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS))
                        return client_error(m, -EINVAL, msg, NULL);
                r = -sd_bus_error_get_errno(e);
                return client_error(m, r < 0 ? r : -EIO, msg, NULL);
        }
        switch (r) {
        case -ENOTCONN: /* ours means "not attached": never pass sd-bus's on */
        case -ECONNRESET:
        case -EPIPE:
        case -ESHUTDOWN:
                return client_error(m, -ECONNRESET, "the bus connection was lost", NULL);
        case -ECHILD:
                return client_error(m, -ECHILD, "a bus handle cannot be used after fork()", NULL);
        default:
                return client_error(m, r, NULL, NULL);
        }
}

/* A call on the manager. Lock held. Return: 0 or the recorded error. */
static int manager_call_new(memacct *m, const char *member, sd_bus_message **ret) {
        int r = sd_bus_message_new_method_call(m->bus_conn->bus, ret, BUS_NAME, BUS_PATH,
                                               BUS_MANAGER, member);

        return r < 0 ? bus_fail(m, NULL, r) : 0;
}

/* Send @call and wait. Lock held. Return: 0 and the reply (if @ret_reply), or the error. */
static int call_locked(memacct *m, sd_bus_message *call, sd_bus_message **ret_reply) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call(m->bus_conn->bus, call, call_timeout_usec(m), &e, ret_reply);
        if (r < 0)
                r = bus_fail(m, &e, r);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

/* A manager method with basic arguments (sd_bus_message_append() types). Lock held. */
static int manager_call_locked(memacct *m, const char *member, sd_bus_message **ret_reply,
                               const char *types, ...) {
        sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = manager_call_new(m, member, &call);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(call, types, ap);
        va_end(ap);
        if (r < 0)
                r = bus_fail(m, NULL, r);
        else
                r = call_locked(m, call, ret_reply);
        sd_bus_message_unref(call);
        return r;
}

/* A manager method whose one argument is a group path and whose reply is
 * empty. Takes the lock. */
static int manager_path_call(memacct *m, const char *member, const char *path) {
        int r;

        bus_lock(m);
        r = manager_call_locked(m, member, NULL, "s", path);
        bus_unlock(m);
        return r;
}

/* a{st} of the members @l->set names. */
static int append_limits(sd_bus_message *msg, const memacct_limits *l) {
        int r;

        r = sd_bus_message_open_container(msg, 'a', "{st}");
        if (r >= 0 && (l->set & MEMACCT_LIMIT_MAX))
                r = sd_bus_message_append(msg, "{st}", "max", l->max);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_HIGH))
                r = sd_bus_message_append(msg, "{st}", "high", l->high);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_LOW))
                r = sd_bus_message_append(msg, "{st}", "low", l->low);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_MIN))
                r = sd_bus_message_append(msg, "{st}", "min", l->min);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

/* --- groups --- */

/* CreateGroup (s a{st} u) and SetLimits (s a{st} b): @path, @limits (NULL:
 * none) and one 32-bit argument of type @tail_type ("u" or "b": sd-bus reads
 * either as an int-sized vararg). Lock held. */
static int limits_call_locked(memacct *m, const char *member, const char *path,
                              const memacct_limits *limits, const char *tail_type, uint32_t tail) {
        static const memacct_limits none = {};
        sd_bus_message *call = NULL;
        int r;

        r = manager_call_new(m, member, &call);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", path);
        if (r >= 0)
                r = append_limits(call, limits ? limits : &none);
        if (r >= 0)
                r = sd_bus_message_append(call, tail_type, tail);
        if (r < 0)
                r = bus_fail(m, NULL, r);
        else
                r = call_locked(m, call, NULL);
        sd_bus_message_unref(call);
        return r;
}

static int bus_create_group(memacct *m, const char *path, const memacct_limits *limits,
                            uint32_t owner) {
        int r;

        bus_lock(m);
        r = limits_call_locked(m, "CreateGroup", path, limits, "u", owner);
        bus_unlock(m);
        return r;
}

static int bus_remove_group(memacct *m, const char *path) {
        return manager_path_call(m, "RemoveGroup", path);
}

static int bus_set_limits(memacct *m, const char *path, const memacct_limits *limits,
                          unsigned flags) {
        int r;

        bus_lock(m);
        r = limits_call_locked(m, "SetLimits", path, limits, "b", !!(flags & MEMACCT_FORCE));
        bus_unlock(m);
        return r;
}

/* Ranks of counter names, in the order the socket reports them (the core's
 * enums); a name not known here ranks after all known ones. */
static unsigned event_rank(const char *name) {
        static const char *const order[] = { "low", "high", "max", "oom" };

        for (unsigned i = 0; i < ELEMENTSOF(order); i++)
                if (strcmp(name, order[i]) == 0)
                        return i;
        return ELEMENTSOF(order);
}

static unsigned stat_rank(const char *name) {
        int item = memacct_stat_from_string(name);

        return item >= 0 ? (unsigned) item : STOCK_ITEMS;
}

/*
 * An a{st} into counters sorted by @rank (stable: unknown names follow in
 * the order received), whatever order the dictionary came in.
 */
static int read_counters(sd_bus_message *msg, unsigned (*rank)(const char *name),
                         const memacct_counter **ret, size_t *ret_n) {
        memacct_counter *c = NULL;
        size_t n = 0, size = 0;
        const char *name;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(msg, "{st}", &name, &value)) > 0) {
                memacct_counter *t;

                if (n == size) {
                        size = size > 0 ? size * 2 : 8;
                        t = realloc(c, size * sizeof(*c));
                        if (!t) {
                                r = -ENOMEM;
                                break;
                        }
                        c = t;
                }
                c[n].name = strdup(name);
                if (!c[n].name) {
                        r = -ENOMEM;
                        break;
                }
                c[n++].value = value;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(msg);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free((char *) c[i].name);
                free(c);
                return r;
        }
        /* Insertion sort by rank: stable, and n is at most a handful. */
        for (size_t i = 1; i < n; i++) {
                memacct_counter t = c[i];
                unsigned k = rank(t.name);
                size_t j = i;

                for (; j > 0 && rank(c[j - 1].name) > k; j--)
                        c[j] = c[j - 1];
                c[j] = t;
        }
        *ret = c;
        *ret_n = n;
        return 0;
}

/* Properties of type t, by name. */
static uint64_t *group_field(memacct_group_info *g, const char *name) {
        static const struct {
                const char *name;
                size_t offset;
        } fields[] = {
                { "MemoryCurrent", offsetof(memacct_group_info, current) },
                { "MemoryPeak", offsetof(memacct_group_info, peak) },
                { "MemoryMax", offsetof(memacct_group_info, max) },
                { "MemoryHigh", offsetof(memacct_group_info, high) },
                { "MemoryLow", offsetof(memacct_group_info, low) },
                { "MemoryMin", offsetof(memacct_group_info, min) },
                { "EffectiveMemoryMin", offsetof(memacct_group_info, effective_min) },
                { "EffectiveMemoryLow", offsetof(memacct_group_info, effective_low) },
                { "FailCount", offsetof(memacct_group_info, failcnt) },
                { "KernelMemoryCurrent", offsetof(memacct_group_info, kernel_current) },
        };

        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strcmp(name, fields[i].name) == 0)
                        return (uint64_t *) ((char *) g + fields[i].offset);
        return NULL;
}

/*
 * The reply of GetAll on org.memacct1.Group into @g (zeroed first).
 * Properties of other names or types are skipped: a newer daemon may add
 * some. Return: 0; -EBADMSG; -ENOMEM.
 */
static int group_info_from_reply(sd_bus_message *reply, const char *fallback_path,
                                 memacct_group_info *g) {
        int r;

        *g = (memacct_group_info) {
                .max = MEMACCT_UNLIMITED,
                .high = MEMACCT_UNLIMITED,
                /* Not among the Group properties: see memacct_connect_bus(). */
                .owner = MEMACCT_NO_OWNER,
                .kernel_current = MEMACCT_NO_KERNEL_CURRENT, /* an older daemon */
        };
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name, *contents;
                uint64_t *field;
                char type;

                r = sd_bus_message_read(reply, "s", &name);
                if (r >= 0)
                        r = sd_bus_message_peek_type(reply, &type, &contents);
                if (r < 0)
                        break;
                field = group_field(g, name);
                if (field && strcmp(contents, "t") == 0)
                        r = sd_bus_message_read(reply, "v", "t", field);
                else if (strcmp(name, "Path") == 0 && strcmp(contents, "s") == 0 && !g->path) {
                        const char *s;

                        r = sd_bus_message_read(reply, "v", "s", &s);
                        if (r >= 0 && !(g->path = strdup(s)))
                                r = -ENOMEM;
                } else if (strcmp(contents, "a{st}") == 0 &&
                           (strcmp(name, "Events") == 0 || strcmp(name, "EventsLocal") == 0 ||
                            strcmp(name, "Stats") == 0)) {
                        bool stats = strcmp(name, "Stats") == 0;
                        const memacct_counter **dst = stats ? &g->stat
                                                      : strcmp(name, "Events") == 0 ? &g->events
                                                                                    : &g->events_local;
                        size_t *dst_n = stats ? &g->n_stat
                                        : strcmp(name, "Events") == 0 ? &g->n_events
                                                                      : &g->n_events_local;

                        if (*dst) {
                                r = sd_bus_message_skip(reply, "v");
                        } else {
                                r = sd_bus_message_enter_container(reply, 'v', "a{st}");
                                if (r >= 0)
                                        r = read_counters(reply, stats ? stat_rank : event_rank,
                                                          dst, dst_n);
                                if (r >= 0)
                                        r = sd_bus_message_exit_container(reply);
                        }
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0 && !g->path && !(g->path = strdup(fallback_path)))
                r = -ENOMEM;
        if (r < 0) {
                client_group_info_done(g);
                return r == -ENOMEM ? r : -EBADMSG;
        }
        return 0;
}

static int get_all_new(memacct *m, const char *object, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_method_call(m->bus_conn->bus, ret, BUS_NAME, object,
                                           "org.freedesktop.DBus.Properties", "GetAll");
        if (r >= 0)
                r = sd_bus_message_append(*ret, "s", BUS_GROUP);
        if (r < 0) {
                *ret = sd_bus_message_unref(*ret);
                return bus_fail(m, NULL, r);
        }
        return 0;
}

static int get_group_locked(memacct *m, const char *path, memacct_group_info **ret) {
        sd_bus_message *reply = NULL, *call = NULL;
        memacct_group_info *g;
        const char *object;
        int r;

        r = manager_call_locked(m, "GetGroup", &reply, "s", path);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "o", &object);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return client_error(m, -EBADMSG, "GetGroup: reply without an object path", NULL);
        }
        r = get_all_new(m, object, &call);
        sd_bus_message_unref(reply);
        reply = NULL;
        if (r < 0)
                return r;
        r = call_locked(m, call, &reply);
        sd_bus_message_unref(call);
        if (r < 0)
                return r;
        g = malloc(sizeof(*g));
        r = g ? group_info_from_reply(reply, path, g) : -ENOMEM;
        sd_bus_message_unref(reply);
        if (r < 0) {
                free(g);
                return client_error(m, r, r == -EBADMSG ? "malformed group properties" : NULL,
                                    NULL);
        }
        *ret = g;
        return 0;
}

static int bus_get_group(memacct *m, const char *path, const char *reclaim_root, unsigned flags,
                         memacct_group_info **ret) {
        int r;

        /* The bus has no way to ask for a flush of the statistics:
         * MEMACCT_EXACT is accepted, and the stat items are as fresh as
         * the daemon's property getters make them (memacct.h). Effective
         * protection is relative to the root only. */
        (void) flags;
        if (reclaim_root && strcmp(reclaim_root, "/") != 0)
                return client_bus_unsupported(m, "a reclaim root other than /");
        bus_lock(m);
        r = get_group_locked(m, path, ret);
        bus_unlock(m);
        return r;
}

typedef struct ListCall {
        memacct *m;
        memacct_group_info *g;
        const char *path;
        int r;      /* 0, or the error */
        bool done;
        bool gone;  /* removed between the listing and the read: skipped */
} ListCall;

static int on_list_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ListCall *lc = userdata;
        const sd_bus_error *e;

        (void) ret_error;
        lc->done = true;
        e = sd_bus_message_get_error(reply);
        if (e) {
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT) ||
                    sd_bus_error_has_name(e, status_to_dbus_error(MEM_STATUS_NOT_FOUND)))
                        lc->gone = true;
                else
                        lc->r = bus_fail(lc->m, e, -EIO);
                return 0;
        }
        lc->r = group_info_from_reply(reply, lc->path, lc->g);
        if (lc->r < 0)
                client_error(lc->m, lc->r,
                             lc->r == -EBADMSG ? "malformed group properties" : NULL, NULL);
        return 0;
}

/* GetAll of every object in @objects, BUS_LIST_INFLIGHT at a time. Lock held. */
static int list_read_locked(memacct *m, ListCall *calls, const char *const *objects, size_t n) {
        sd_bus *bus = m->bus_conn->bus;
        sd_bus_slot **slots;
        size_t sent = 0, done = 0;
        int r = 0;

        slots = calloc(n, sizeof(*slots));
        if (!slots)
                return client_error(m, -ENOMEM, NULL, NULL);
        while (done < n) {
                while (r >= 0 && sent < n && sent - done < BUS_LIST_INFLIGHT) {
                        sd_bus_message *call = NULL;

                        r = get_all_new(m, objects[sent], &call);
                        if (r < 0)
                                break;
                        r = sd_bus_call_async(bus, &slots[sent], call, on_list_reply, &calls[sent],
                                              call_timeout_usec(m));
                        sd_bus_message_unref(call);
                        if (r < 0) {
                                r = bus_fail(m, NULL, r);
                                break;
                        }
                        sent++;
                }
                if (r < 0)
                        break;
                r = sd_bus_process(bus, NULL);
                if (r == 0)
                        r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0) {
                        r = bus_fail(m, NULL, r);
                        break;
                }
                while (done < sent && calls[done].done)
                        done++;
        }
        /* Dropping a slot cancels a call still in flight. */
        for (size_t i = 0; i < n; i++)
                sd_bus_slot_unref(slots[i]);
        free(slots);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (calls[i].r < 0)
                        r = calls[i].r;
        return r < 0 ? r : 0;
}

static int list_groups_locked(memacct *m, const char *path, unsigned flags,
                              memacct_group_list **ret) {
        sd_bus_message *reply = NULL;
        memacct_group_list *l = NULL;
        ListCall *calls = NULL;
        const char **objects = NULL, *gpath, *object;
        size_t n = 0, size = 0;
        int r;

        r = manager_call_locked(m, "ListGroups", &reply, "sb", path,
                                (int) !!(flags & MEMACCT_RECURSIVE));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(so)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(so)", &gpath, &object)) > 0) {
                if (n == size) {
                        const char **o;
                        ListCall *lc;

                        size = size > 0 ? size * 2 : 16;
                        o = realloc(objects, size * sizeof(*o));
                        if (o)
                                objects = o;
                        lc = o ? realloc(calls, size * sizeof(*lc)) : NULL;
                        if (!lc) {
                                r = -ENOMEM;
                                break;
                        }
                        calls = lc;
                }
                objects[n] = object;
                calls[n] = (ListCall) { .m = m, .path = gpath };
                n++;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0) {
                r = client_error(m, r == -ENOMEM ? r : -EBADMSG,
                                 r == -ENOMEM ? NULL : "malformed ListGroups reply", NULL);
                goto finish;
        }
        l = calloc(1, sizeof(*l));
        if (l && n > 0)
                l->groups = calloc(n, sizeof(memacct_group_info));
        if (!l || (n > 0 && !l->groups)) {
                r = client_error(m, -ENOMEM, NULL, NULL);
                goto finish;
        }
        for (size_t i = 0; i < n; i++)
                calls[i].g = &l->groups[i];
        r = list_read_locked(m, calls, objects, n);
        /* Keep what was read, in order; skip the groups removed meanwhile. */
        for (size_t i = 0; i < n; i++) {
                if (!calls[i].done || calls[i].gone || calls[i].r < 0) {
                        client_group_info_done(&l->groups[i]);
                        continue;
                }
                if (l->n != i)
                        l->groups[l->n] = l->groups[i];
                l->n++;
        }
        if (r >= 0) {
                *ret = TAKE_PTR(l);
                r = 0;
        }
finish:
        memacct_group_list_free(l);
        free(calls);
        free(objects);
        sd_bus_message_unref(reply); /* after the strings in calls and objects */
        return r;
}

static int bus_list_groups(memacct *m, const char *path, unsigned flags,
                           memacct_group_list **ret) {
        int r;

        bus_lock(m);
        r = list_groups_locked(m, path, flags, ret);
        bus_unlock(m);
        return r;
}

static int bus_reset_peak(memacct *m, const char *path) {
        return manager_path_call(m, "ResetPeak", path);
}

/* --- the session: charges, attach, move, clients --- */

static int bus_charge(memacct *m, const char *path, uint64_t bytes, unsigned item, unsigned flags,
                      memacct_charge_result *ret) {
        sd_bus_message *reply = NULL;
        uint64_t throttle_usec = 0, over_high = 0;
        int r;

        if (flags & MEMACCT_FORCE)
                return client_bus_unsupported(m, "a forced charge");
        bus_lock(m);
        r = manager_call_locked(m, "Charge", &reply, "stsb", path ? path : "", bytes,
                                client_stat_name(item), (int) !!(flags & MEMACCT_KEEP));
        if (r >= 0 && sd_bus_message_read(reply, "tt", &throttle_usec, &over_high) < 0)
                r = client_error(m, -EBADMSG, "malformed Charge reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret)
                /* The bus reply has no margin and no over-max flag (a forced
                 * charge, the only one that sets it, has no bus form). */
                *ret = (memacct_charge_result) {
                        .over_high = over_high,
                        .throttle_usec = throttle_usec,
                        .margin = MEMACCT_UNLIMITED,
                };
        return r;
}

static int bus_uncharge(memacct *m, const char *path, uint64_t bytes, unsigned item,
                        unsigned flags) {
        int r;

        bus_lock(m);
        r = manager_call_locked(m, "Uncharge", NULL, "stsb", path ? path : "", bytes,
                                client_stat_name(item), (int) !!(flags & MEMACCT_KEEP));
        bus_unlock(m);
        return r;
}

static int bus_attach(memacct *m, const char *path) {
        return manager_path_call(m, "Attach", path);
}

static int bus_move(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions) {
        sd_bus_message *reply = NULL;
        uint32_t sessions = 0;
        int r;

        bus_lock(m);
        r = manager_call_locked(m, "MoveProcess", &reply, "us", (uint32_t) pid, path);
        if (r >= 0 && sd_bus_message_read(reply, "u", &sessions) < 0)
                r = client_error(m, -EBADMSG, "malformed MoveProcess reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret_sessions)
                *ret_sessions = sessions;
        return r;
}

static int bus_import_cgroups(memacct *m, const char *from, const char *under,
                              memacct_import_result *ret) {
        sd_bus_message *reply = NULL;
        uint32_t c = 0, u = 0, n = 0;
        int r;

        bus_lock(m);
        r = manager_call_locked(m, "ImportCgroups", &reply, "ss", from ? from : "", under ? under : "");
        if (r >= 0 && sd_bus_message_read(reply, "uuu", &c, &u, &n) < 0)
                r = client_error(m, -EBADMSG, "malformed ImportCgroups reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret)
                *ret = (memacct_import_result) { .created = c, .updated = u, .unchanged = n };
        return r < 0 ? r : 0;
}

static int get_client_locked(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret) {
        sd_bus_message *reply = NULL;
        memacct_client_info info = { .pid = pid > 0 ? (uint32_t) pid : (uint32_t) m->pid };
        const char *name;
        uint64_t value;
        int r;

        r = manager_call_locked(m, "GetClient", &reply, "ub", (uint32_t) pid,
                                (int) !!(flags & MEMACCT_EXACT));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "{st}");
        while (r >= 0 && (r = sd_bus_message_read(reply, "{st}", &name, &value)) > 0) {
                if (strcmp(name, "file") == 0)
                        info.file = value;
                else if (strcmp(name, "anon") == 0)
                        info.anon = value;
                else if (strcmp(name, "swap") == 0)
                        info.swap = value;
                else if (strcmp(name, "shmem") == 0)
                        info.shmem = value;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        if (r < 0)
                return client_error(m, -EBADMSG, "malformed GetClient reply", NULL);
        *ret = info;
        return 0;
}

static int bus_get_client(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret) {
        int r;

        bus_lock(m);
        r = get_client_locked(m, pid, flags, ret);
        bus_unlock(m);
        return r;
}

/* --- events: the Event signal --- */

/* @path is @prefix or below it. */
static bool path_under(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        if (strcmp(prefix, "/") == 0)
                return true;
        while (n > 1 && prefix[n - 1] == '/')
                n--;
        return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Runs inside sd_bus_process() or sd_bus_wait() of any call: lock held. */
static int on_event(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        BusConn *c = m->bus_conn;
        const char *path, *name;
        uint64_t count;
        bool wanted = false;

        (void) ret_error;
        if (sd_bus_message_read(msg, "sst", &path, &name, &count) < 0)
                return 0; /* not ours to judge: ignore it */
        for (size_t i = 0; i < c->n_prefixes && !wanted; i++)
                wanted = path_under(path, c->prefixes[i]);
        if (wanted)
                event_queue_push(&c->events, path, name, count);
        return 0;
}

static int subscribe_locked(memacct *m, const char *path) {
        BusConn *c = m->bus_conn;
        sd_bus_message *reply = NULL;
        char *copy, **p;
        int r;

        /* The match first: events raised from the moment the daemon
         * confirms the group are then all ours. */
        if (!c->match) {
                r = sd_bus_match_signal(c->bus, &c->match, BUS_NAME, BUS_PATH, BUS_MANAGER,
                                        "Event", on_event, m);
                if (r < 0)
                        return bus_fail(m, NULL, r);
        }
        /* What the socket's Subscribe checks: the group exists and we may read it. */
        r = manager_call_locked(m, "GetGroup", &reply, "s", path);
        sd_bus_message_unref(reply);
        if (r < 0)
                return r;
        copy = strdup(path);
        p = copy ? realloc(c->prefixes, (c->n_prefixes + 1) * sizeof(char *)) : NULL;
        if (!p) {
                free(copy);
                return client_error(m, -ENOMEM, NULL, NULL);
        }
        c->prefixes = p;
        c->prefixes[c->n_prefixes++] = copy;
        return 0;
}

static int bus_subscribe(memacct *m, const char *path) {
        int r;

        bus_lock(m);
        r = subscribe_locked(m, path);
        bus_unlock(m);
        return r;
}

static int bus_next_event(memacct *m, int timeout_msec, memacct_event *ret) {
        BusConn *c = m->bus_conn;
        uint64_t deadline = client_deadline_nsec(timeout_msec);
        int r;

        bus_lock(m);
        for (;;) {
                struct pollfd pfd[2];
                uint64_t until = UINT64_MAX;
                int left, events, fd;

                if (event_queue_pop(&c->events, ret)) {
                        r = 1;
                        break;
                }
                /* Everything queued or readable now, one message a round. */
                r = sd_bus_process(c->bus, NULL);
                if (r < 0) {
                        r = bus_fail(m, NULL, r);
                        break;
                }
                if (r > 0)
                        continue;
                left = client_deadline_left_msec(deadline);
                if (left == 0) {
                        r = 0;
                        break;
                }
                fd = sd_bus_get_fd(c->bus);
                events = sd_bus_get_events(c->bus);
                if (fd < 0 || events < 0) {
                        r = bus_fail(m, NULL, fd < 0 ? fd : events);
                        break;
                }
                /* sd-bus's own deadline (a reply timeout), absolute CLOCK_MONOTONIC µs. */
                if (sd_bus_get_timeout(c->bus, &until) > 0 && until < CLIENT_NO_DEADLINE / 1000) {
                        int bus_left = client_deadline_left_msec(until * 1000);

                        if (left < 0 || bus_left < left)
                                left = bus_left;
                }
                pfd[0] = (struct pollfd) { .fd = fd, .events = (short) events };
                pfd[1] = (struct pollfd) { .fd = c->wake_fd, .events = POLLIN };
                /* Sleep without the lock: other threads' calls go on. */
                c->sleepers++;
                pthread_mutex_unlock(&m->lock);
                r = poll(pfd, 2, left);
                if (r < 0 && errno == EINTR) {
                        pthread_mutex_lock(&m->lock);
                        c->sleepers--;
                        bus_unlock(m);
                        return client_error(m, -EINTR, "interrupted", NULL);
                }
                pthread_mutex_lock(&m->lock);
                c->sleepers--;
                if (pfd[1].revents & POLLIN) {
                        eventfd_t v;

                        (void) eventfd_read(c->wake_fd, &v);
                }
        }
        bus_unlock(m);
        return r;
}

/* --- the handle --- */

static void bus_close(memacct *m) {
        BusConn *c = m->bus_conn;

        if (!c)
                return;
        c->match = sd_bus_slot_unref(c->match);
        /* Leaving the bus ends the session: the daemon releases its charges. */
        c->bus = sd_bus_flush_close_unref(c->bus);
        event_queue_done(&c->events);
        for (size_t i = 0; i < c->n_prefixes; i++)
                free(c->prefixes[i]);
        free(c->prefixes);
        if (c->wake_fd >= 0)
                close(c->wake_fd);
        free(c);
        m->bus_conn = NULL;
}

static const BusOps bus_ops = {
        .create_group = bus_create_group,
        .remove_group = bus_remove_group,
        .set_limits = bus_set_limits,
        .get_group = bus_get_group,
        .list_groups = bus_list_groups,
        .charge = bus_charge,
        .uncharge = bus_uncharge,
        .attach = bus_attach,
        .move = bus_move,
        .get_client = bus_get_client,
        .reset_peak = bus_reset_peak,
        .import_cgroups = bus_import_cgroups,
        .subscribe = bus_subscribe,
        .next_event = bus_next_event,
        .close = bus_close,
};

/* The bus @address names; see memacct_connect_bus(). */
static int bus_open(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        if (!address)
                address = geteuid() == 0 ? "system" : "user";
        if (strcmp(address, "system") == 0)
                return sd_bus_open_system(ret);
        if (strcmp(address, "user") == 0)
                return sd_bus_open_user(ret);
        if (!*address)
                return -EINVAL;
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        /* Without it no Hello is sent: we would have no unique name, and
         * the daemon no peer to hang the session on. */
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

/* Reach the daemon (activating it if the bus can): Peer.Ping. Lock held. */
static int ping_locked(memacct *m) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *owner;
        char *server = NULL;
        int r;

        r = sd_bus_call_method(m->bus_conn->bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Peer",
                               "Ping", &e, &reply, NULL);
        if (r < 0) {
                if (sd_bus_error_has_names(&e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        r = client_error(m, -ECONNREFUSED, e.message, NULL);
                else
                        r = bus_fail(m, &e, r);
                sd_bus_error_free(&e);
                return r;
        }
        owner = sd_bus_message_get_sender(reply);
        if (asprintf(&server, BUS_NAME " %s", owner ? owner : "") < 0)
                server = NULL;
        sd_bus_message_unref(reply);
        if (!server)
                return client_error(m, -ENOMEM, NULL, NULL);
        free(m->server);
        m->server = server;
        return 0;
}

_public_ int memacct_connect_bus(const char *address, memacct **ret) {
        BusConn *c;
        memacct *m;
        int r;

        if (!ret)
                return -EINVAL;
        m = client_new();
        if (!m)
                return -ENOMEM;
        c = calloc(1, sizeof(*c));
        if (!c) {
                memacct_close(m);
                return -ENOMEM;
        }
        c->wake_fd = -1;
        m->bus_conn = c;
        m->bus = &bus_ops;
        /* The session is the bus peer: this process, as the bus saw it connect. */
        m->pid = getpid();
        c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->wake_fd < 0) {
                r = -errno;
                memacct_close(m);
                return r;
        }

        pthread_mutex_lock(&m->lock);
        r = bus_open(address, &c->bus);
        if (r < 0)
                r = client_error(m, r, "cannot connect to the bus", NULL);
        else
                r = ping_locked(m);
        pthread_mutex_unlock(&m->lock);
        if (r < 0) {
                memacct_close(m);
                return r;
        }
        *ret = m;
        return 0;
}
