/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Groups over D-Bus: GetGroup and ListGroupsPage, then the properties of each
 * group object (Properties.GetAll on org.memacct1.Group) into the public
 * header's memacct_group_info, the socket's GroupInfo as the bus carries
 * it, with its device regions from the DeviceMemory* properties.
 *
 * A list costs a call per page of names (BUS_LIST_PAGE of them) and one
 * per group; the per-group calls are pipelined, BUS_LIST_INFLIGHT at a
 * time, and a group removed between the two is left out rather than
 * failing the list. Counters are sorted into the order the socket reports
 * them, whatever order the dictionaries came in, so a caller cannot tell
 * the transports apart.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-bus-conn.h"
#include "client-bus-groups.h"
#include "client-error.h"
#include "client-groups.h"
#include "macro.h"
#include "status.h"

/* GetAll calls in flight while listing: pipelined (with 16 in flight each
 * call costs about a seventh of a synchronous one), and well below
 * dbus-daemon's max_replies_per_connection. */
#define BUS_LIST_INFLIGHT 32

/* Names asked per ListGroupsPage: each costs a GetAll anyway, and a page
 * of this many is a reply of some 100 KiB, not the daemon's 16 MiB. */
#define BUS_LIST_PAGE 1024u

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
                { "MemoryKept", offsetof(memacct_group_info, kept) },
                { "MemorySession", offsetof(memacct_group_info, session) },
        };

        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strcmp(name, fields[i].name) == 0)
                        return (uint64_t *) ((char *) g + fields[i].offset);
        return NULL;
}

/*
 * The device memory properties: a(st) of (region, value) per device
 * region the group has counters in, by name, into memacct_region_info.
 */
static uint64_t *region_field(memacct_region_info *ri, const char *name) {
        static const struct {
                const char *name;
                size_t offset;
        } fields[] = {
                { "DeviceMemoryCurrent", offsetof(memacct_region_info, current) },
                { "DeviceMemoryPeak", offsetof(memacct_region_info, peak) },
                { "DeviceMemoryMax", offsetof(memacct_region_info, max) },
                { "DeviceMemoryHigh", offsetof(memacct_region_info, high) },
                { "DeviceMemoryLow", offsetof(memacct_region_info, low) },
                { "DeviceMemoryMin", offsetof(memacct_region_info, min) },
                { "EffectiveDeviceMemoryMin", offsetof(memacct_region_info, effective_min) },
                { "EffectiveDeviceMemoryLow", offsetof(memacct_region_info, effective_low) },
                { "DeviceMemoryFailCount", offsetof(memacct_region_info, failcnt) },
                { "DeviceMemoryKept", offsetof(memacct_region_info, kept) },
                { "DeviceMemoryCapacity", offsetof(memacct_region_info, capacity) },
        };

        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strcmp(name, fields[i].name) == 0)
                        return (uint64_t *) ((char *) ri + fields[i].offset);
        return NULL;
}

/*
 * The region @name of @g: each property lists the same regions, and the
 * first that names one adds it, with no limits, so that a property a
 * daemon does not send reads as none. NULL: out of memory.
 */
static memacct_region_info *group_region(memacct_group_info *g, const char *name) {
        memacct_region_info *v = (memacct_region_info *) g->regions;
        char *copy;

        for (size_t i = 0; i < g->n_regions; i++)
                if (strcmp(v[i].name, name) == 0)
                        return &v[i];
        v = realloc(v, (g->n_regions + 1) * sizeof(*v));
        if (!v)
                return NULL;
        g->regions = v;
        copy = strdup(name);
        if (!copy)
                return NULL;
        v[g->n_regions] = (memacct_region_info) {
                .name = copy,
                .capacity = MEMACCT_UNLIMITED,
                .max = MEMACCT_UNLIMITED,
                .high = MEMACCT_UNLIMITED,
        };
        return &v[g->n_regions++];
}

/* An a(st) device memory property @name, in its variant, into @g's regions. */
static int read_region_values(sd_bus_message *reply, memacct_group_info *g, const char *name) {
        const char *region;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(reply, 'v', "a(st)");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(st)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(st)", &region, &value)) > 0) {
                memacct_region_info *ri = group_region(g, region);

                if (!ri)
                        return -ENOMEM;
                *region_field(ri, name) = value;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r < 0 ? r : sd_bus_message_exit_container(reply);
}

/* DeviceMemoryEvents or, with @local, DeviceMemoryEventsLocal (a(sa{st})) into @g's regions. */
static int read_region_events(sd_bus_message *reply, memacct_group_info *g, bool local) {
        const char *region;
        int r;

        r = sd_bus_message_enter_container(reply, 'v', "a(sa{st})");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(sa{st})");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "sa{st}")) > 0) {
                memacct_region_info *ri;

                r = sd_bus_message_read(reply, "s", &region);
                if (r < 0)
                        break;
                ri = group_region(g, region);
                if (!ri)
                        return -ENOMEM;
                if (local ? ri->events_local : ri->events)
                        r = sd_bus_message_skip(reply, "a{st}"); /* named twice: the first counts */
                else
                        r = read_counters(reply, event_rank, local ? &ri->events_local : &ri->events,
                                          local ? &ri->n_events_local : &ri->n_events);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r < 0 ? r : sd_bus_message_exit_container(reply);
}

/*
 * A device memory property of @g, if @name (of variant type @contents) is
 * one. Return: 1 when it was read; 0 when it is not one (the caller
 * skips it); a negative errno.
 */
static int read_region_property(sd_bus_message *reply, memacct_group_info *g, const char *name,
                                const char *contents) {
        memacct_region_info probe = {};

        if (region_field(&probe, name) && strcmp(contents, "a(st)") == 0) {
                int r = read_region_values(reply, g, name);

                return r < 0 ? r : 1;
        }
        if ((strcmp(name, "DeviceMemoryEvents") == 0 || strcmp(name, "DeviceMemoryEventsLocal") == 0) &&
            strcmp(contents, "a(sa{st})") == 0) {
                int r = read_region_events(reply, g, strcmp(name, "DeviceMemoryEventsLocal") == 0);

                return r < 0 ? r : 1;
        }
        return 0;
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
                /* An older daemon without the Owner property: see memacct_connect_bus(). */
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
                else if (strcmp(name, "Owner") == 0 && strcmp(contents, "u") == 0)
                        r = sd_bus_message_read(reply, "v", "u", &g->owner);
                else if ((strcmp(name, "PressureSome") == 0 || strcmp(name, "PressureFull") == 0) &&
                         strcmp(contents, "(dddt)") == 0) {
                        memacct_pressure *p = name[8] == 'S' ? &g->pressure_some : &g->pressure_full;

                        r = sd_bus_message_read(reply, "v", "(dddt)", &p->avg10, &p->avg60, &p->avg300,
                                                &p->total_usec);
                        /* Both, or the daemon says nothing. */
                        g->has_pressure++;
                } else if (strcmp(name, "NSessions") == 0 && strcmp(contents, "u") == 0)
                        r = sd_bus_message_read(reply, "v", "u", &g->nr_sessions);
                else if (strcmp(name, "NChildren") == 0 && strcmp(contents, "u") == 0)
                        r = sd_bus_message_read(reply, "v", "u", &g->nr_children);
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
                } else {
                        /* The device regions', or one a newer daemon added: skipped. */
                        r = read_region_property(reply, g, name, contents);
                        if (r == 0)
                                r = sd_bus_message_skip(reply, "v");
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        g->has_pressure = g->has_pressure == 2;
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

        r = bus_manager_call_locked(m, "GetGroup", &reply, "s", path);
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
        r = bus_send_locked(m, call, 0, &reply);
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

int bus_get_group(memacct *m, const char *path, const char *reclaim_root, unsigned flags,
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
                                              bus_call_timeout_usec(m));
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

/* The names of one reply's a(so) into @names (strings of @reply's). */
typedef struct ListNames {
        ListCall *calls;
        const char **objects;
        size_t n, size;
} ListNames;

static int read_names(memacct *m, sd_bus_message *reply, ListNames *ln) {
        const char *gpath, *object;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(so)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(so)", &gpath, &object)) > 0) {
                if (ln->n == ln->size) {
                        size_t size = ln->size > 0 ? ln->size * 2 : 16;
                        const char **o;
                        ListCall *lc;

                        o = realloc(ln->objects, size * sizeof(*o));
                        if (o)
                                ln->objects = o;
                        lc = o ? realloc(ln->calls, size * sizeof(*lc)) : NULL;
                        if (!lc) {
                                r = -ENOMEM;
                                break;
                        }
                        ln->calls = lc;
                        ln->size = size;
                }
                ln->objects[ln->n] = object;
                ln->calls[ln->n] = (ListCall) { .m = m, .path = gpath };
                ln->n++;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return client_error(m, r == -ENOMEM ? r : -EBADMSG,
                                    r == -ENOMEM ? NULL : "malformed ListGroups reply", NULL);
        return 0;
}

/*
 * Every name, page by page (ListGroupsPage, following its cursor; a
 * restarted page drops what came before), or in one ListGroups reply from
 * a daemon that has no pages. The replies stay in @replies: the names
 * point into them.
 */
static int list_names_locked(memacct *m, const char *path, unsigned flags, ListNames *ln,
                             sd_bus_message ***replies, size_t *nreplies) {
        const char *after = "";
        unsigned restarts = 0;
        int r;

        for (;;) {
                sd_bus_message *reply = NULL, **v;
                const char *next;
                int more, restarted;
                size_t start;

                r = bus_manager_call_locked(m, "ListGroupsPage", &reply, "sbsu", path,
                                            (int) !!(flags & MEMACCT_RECURSIVE), after, BUS_LIST_PAGE);
                if (r == -EOPNOTSUPP && *nreplies == 0)
                        r = bus_manager_call_locked(m, "ListGroups", &reply, "sb", path,
                                                    (int) !!(flags & MEMACCT_RECURSIVE));
                if (r < 0)
                        return r;
                v = realloc(*replies, (*nreplies + 1) * sizeof(*v));
                if (!v) {
                        sd_bus_message_unref(reply);
                        return client_error(m, -ENOMEM, NULL, NULL);
                }
                *replies = v;
                v[(*nreplies)++] = reply;
                start = ln->n;
                r = read_names(m, reply, ln);
                if (r < 0)
                        return r;
                if (sd_bus_message_at_end(reply, true) > 0)
                        return 0; /* ListGroups: the whole list */
                r = sd_bus_message_read(reply, "sbb", &next, &more, &restarted);
                if (r < 0)
                        return client_error(m, -EBADMSG, "malformed ListGroupsPage reply", NULL);
                /* As over the socket: a list that keeps changing under
                 * its cursor is given up, not chased for ever. */
                if (restarted && ++restarts > LIST_RESTARTS_MAX)
                        return client_error(m, -EAGAIN, "the list kept changing under its cursor", NULL);
                if (restarted && start > 0) {
                        /* This page is the list's first: only it counts. */
                        memmove(ln->calls, ln->calls + start, (ln->n - start) * sizeof(*ln->calls));
                        memmove(ln->objects, ln->objects + start, (ln->n - start) * sizeof(*ln->objects));
                        ln->n -= start;
                }
                if (!more)
                        return 0;
                after = next;
        }
}

static int list_groups_locked(memacct *m, const char *path, unsigned flags,
                              memacct_group_list **ret) {
        sd_bus_message **replies = NULL;
        memacct_group_list *l = NULL;
        ListNames ln = {};
        size_t nreplies = 0, n;
        int r;

        r = list_names_locked(m, path, flags, &ln, &replies, &nreplies);
        if (r < 0)
                goto finish;
        n = ln.n;
        l = calloc(1, sizeof(*l));
        if (l && n > 0)
                l->groups = calloc(n, sizeof(memacct_group_info));
        if (!l || (n > 0 && !l->groups)) {
                r = client_error(m, -ENOMEM, NULL, NULL);
                goto finish;
        }
        for (size_t i = 0; i < n; i++)
                ln.calls[i].g = &l->groups[i];
        r = list_read_locked(m, ln.calls, ln.objects, n);
        /* Keep what was read, in order; skip the groups removed meanwhile. */
        for (size_t i = 0; i < n; i++) {
                if (!ln.calls[i].done || ln.calls[i].gone || ln.calls[i].r < 0) {
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
        free(ln.calls);
        free(ln.objects);
        /* After the strings in calls and objects. */
        for (size_t i = 0; i < nreplies; i++)
                sd_bus_message_unref(replies[i]);
        free(replies);
        return r;
}

int bus_list_groups(memacct *m, const char *path, unsigned flags,
                           memacct_group_list **ret) {
        int r;

        bus_lock(m);
        r = list_groups_locked(m, path, flags, ret);
        bus_unlock(m);
        return r;
}
