/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl's commands. Charges made here are exact, kept charges (never
 * through the stock), so what `charge` adds is exactly what `show`
 * reports; hold is the one session charge, held until a signal ends it.
 * With --bus every command goes over D-Bus instead of the socket and
 * prints the same.
 *
 * Invariant: a command checks all its arguments before it connects, so a
 * usage error is exit status 2 whether or not the daemon runs, and a bad
 * argument never leaves half a change behind. The table at the end says
 * how many arguments each takes; verb_run() checks that first.
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delegate.h"
#include "import.h"
#include "info.h"
#include "limit-names.h"
#include "macro.h"
#include "cdi.h"
#include "oci.h"
#include "options.h"
#include "output.h"
#include "parse-size.h"
#include "prune.h"
#include "regions.h"
#include "rules.h"
#include "run.h"
#include "top.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_group_info *, memacct_group_info_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_group_list *, memacct_group_list_free);

static volatile sig_atomic_t stop_signal;
/* Set while hold or watch waits in memacct_next_event(): see on_stop(). */
static volatile sig_atomic_t waiting;

static int connect_or_fail(memacct **ret) {
        char *path = NULL;
        int r;

        if (*ret)
                return 0; /* connected already (create -p, then the create) */
        r = options_connect(ret);
        if (r >= 0)
                return 0;
        if (arg.bus) {
                const char *a = arg.bus_address ? arg.bus_address : "system";

                if (strcmp(a, "system") == 0 || strcmp(a, "user") == 0)
                        fprintf(stderr, "memacctctl: cannot reach memacctd on the %s bus: %s\n", a,
                                strerror(-r));
                else
                        fprintf(stderr, "memacctctl: cannot reach memacctd on the bus at %s: %s\n", a,
                                strerror(-r));
                return EXIT_FAILURE;
        }
        /* No path to name: the library's words say why (no XDG_RUNTIME_DIR). */
        if (options_socket(&path) < 0) {
                fprintf(stderr, "memacctctl: --user: %s\n",
                        memacct_last_error(NULL) ? memacct_last_error(NULL) : strerror(-r));
                return EXIT_FAILURE;
        }
        /* The daemon may have said why it refused us (too many
         * sessions for this uid): prefer its words. */
        fprintf(stderr, "memacctctl: cannot connect to memacctd at %s: %s\n", path,
                memacct_last_error(NULL) ? memacct_last_error(NULL) : strerror(-r));
        free(path);
        return EXIT_FAILURE;
}

/* The handle, connected on first use: verbs check their arguments first,
 * so that a usage error is exit status 2 with or without a daemon. */
static memacct *connected(memacct **mp) {
        return connect_or_fail(mp) == 0 ? *mp : NULL;
}

static int parse_size_arg(const char *s, uint64_t *ret) {
        if (parse_size(s, ret) < 0)
                return usage_error("invalid size '%s'", s);
        return 0;
}

/* charge, uncharge and hold: PATH SIZE, and --stat. */
static int parse_charge_args(char **argv, uint64_t *ret_bytes, int *ret_item) {
        int item = memacct_stat_from_string(arg.stat);
        int r;

        r = parse_size_arg(argv[2], ret_bytes);
        if (r != 0)
                return r;
        /* parse_size() reads "max" as the limit that is no limit: no size
         * to charge (memacctctl(1): SIZE, "max" only for a limit). */
        if (*ret_bytes == MEMACCT_UNLIMITED)
                return usage_error("%s: '%s' is not a size to charge", argv[0], argv[2]);
        if (item < 0)
                return usage_error("unknown stat item '%s'", arg.stat);
        *ret_item = item;
        return 0;
}

static int parse_pid(const char *s, pid_t *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end || v < 0 || v > INT32_MAX)
                return usage_error("invalid pid '%s'", s);
        *ret = (pid_t) v;
        return 0;
}

static unsigned exact_flag(void) {
        return arg.exact ? MEMACCT_EXACT : 0;
}

/* create -p: each missing group above @path, without limits, as mkdir -p does. */
static int create_parents(memacct *m, const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return fail(m, "create", path, -ENOMEM);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                int r;

                *s = 0;
                r = memacct_create_group(m, p, NULL, MEMACCT_NO_OWNER);
                *s = '/';
                if (r < 0 && r != -EEXIST) {
                        *s = 0;
                        return fail(m, "create", p, r);
                }
        }
        return 0;
}

/* create and set: a group path, then limits and owner=; delegate.c has them. */
static int verb_limits(memacct **mp, int argc, char **argv) {
        if (arg.parents && argv[1][0] == '/') {
                memacct *m = connected(mp);
                int r;

                if (!m)
                        return EXIT_FAILURE;
                r = create_parents(m, argv[1]);
                if (r != 0)
                        return r;
        }
        return delegate_verb_main(mp, argc, argv, arg.force, connect_or_fail);
}

/*
 * remove -r: the subtree, deepest first (a pre-order list backwards). Where
 * a group of it keeps charges or has sessions, nothing is removed unless
 * --force: the kept charges are then released with their groups (a group
 * with sessions is still refused, busy, by the daemon).
 */
static int remove_recursive(memacct *m, const char *path) {
        _cleanup_(memacct_group_list_freep) memacct_group_list *list = NULL;
        size_t n;
        int r;

        r = memacct_list_groups(m, path, MEMACCT_RECURSIVE | MEMACCT_EXACT, &list);
        if (r < 0)
                return fail(m, "remove", path, r);
        n = memacct_group_list_size(list);
        for (size_t i = 0; i < n && !arg.force; i++) {
                const memacct_group_info *g = memacct_group_list_get(list, i);

                if (g->kept > 0 || g->nr_sessions > 0) {
                        fprintf(stderr, "memacctctl: remove refused: %s: %s %s remain%s (--force to release kept "
                                        "charges)\n", path, g->path,
                                g->kept > 0 ? "kept charges" : "sessions", g->kept > 0 ? "" : " attached");
                        return EXIT_FAILURE;
                }
        }
        for (size_t i = n; i-- > 0;) {
                const char *p = memacct_group_list_get(list, i)->path;

                r = memacct_remove_group(m, p);
                if (r < 0 && r != -ENOENT)
                        return fail(m, "remove", p, r);
        }
        return 0;
}



/* remove and reset-peak: one group path, one call. */
static int verb_path(memacct **mp, int argc, char **argv) {
        memacct *m = connected(mp);
        int r;

        (void) argc;
        if (!m)
                return EXIT_FAILURE;
        if (strcmp(argv[0], "remove") == 0 && arg.recursive)
                return remove_recursive(m, argv[1]);
        if (strcmp(argv[0], "remove") == 0)
                r = memacct_remove_group(m, argv[1]);
        else if (!region_is_memory(arg.region))
                r = memacct_reset_region_peak(m, argv[1], arg.region);
        else
                r = memacct_reset_peak(m, argv[1]);
        return r < 0 ? fail(m, argv[0], argv[1], r) : 0;
}

static int verb_show(memacct **mp, int argc, char **argv) {
        _cleanup_(memacct_group_info_freep) memacct_group_info *g = NULL;
        memacct *m = connected(mp);
        int r;

        (void) argc;
        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_group(m, argv[1], arg.reclaim_root, exact_flag(), &g);
        if (r < 0)
                return fail(m, "show", argv[1], r);
        if (arg.region)
                return print_group_region(g, arg.region, arg.json);
        if (arg.property)
                return print_group_property(g, arg.property);
        return print_group(g, arg.json);
}

/* The rows of @list read again against --reclaim-root: a list is computed
 * against "/", so effective min/low of every row below the top would be.
 * A group removed meanwhile is left out (NULL). Return: 0, or < 0. */
static int tree_rows(memacct *m, const memacct_group_list *list, memacct_group_info ***ret) {
        size_t n = memacct_group_list_size(list);
        memacct_group_info **rows = calloc(n + 1, sizeof(*rows));
        int r;

        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = memacct_get_group(m, memacct_group_list_get(list, i)->path, arg.reclaim_root,
                                      exact_flag(), &rows[i]);
                if (r < 0 && r != -ENOENT) {
                        for (size_t k = 0; k < i; k++)
                                memacct_group_info_free(rows[k]);
                        free(rows);
                        return r;
                }
        }
        *ret = rows;
        return 0;
}

/*
 * tree --region: every row seen in the region (region_view()), the rows
 * of --reclaim-root's reads when there are some. @views holds n + 1
 * groups and @scratch 8 counters each; the top is views[n].
 */
static void tree_views(const memacct_group_info *top, const memacct_group_list *list,
                       memacct_group_info **rows, memacct_group_info *views, memacct_counter *scratch,
                       memacct_group_info **ret_rows) {
        size_t n = memacct_group_list_size(list);

        for (size_t i = 0; i < n; i++) {
                const memacct_group_info *g = rows ? rows[i] : memacct_group_list_get(list, i);

                ret_rows[i] = NULL;
                if (!g)
                        continue;
                region_view(g, arg.region, &views[i], scratch + 8 * i);
                ret_rows[i] = &views[i];
        }
        region_view(top, arg.region, &views[n], scratch + 8 * n);
}

static int verb_tree(memacct **mp, int argc, char **argv) {
        _cleanup_(memacct_group_list_freep) memacct_group_list *list = NULL;
        _cleanup_(memacct_group_info_freep) memacct_group_info *top = NULL;
        _cleanup_free_ memacct_group_info *views = NULL, **view_rows = NULL;
        _cleanup_free_ memacct_counter *scratch = NULL;
        const char *path = argc > 1 ? argv[1] : "/";
        memacct_group_info **rows = NULL;
        memacct *m = connected(mp);
        int r;

        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_group(m, path, arg.reclaim_root, exact_flag(), &top);
        if (r >= 0)
                r = memacct_list_groups(m, path, MEMACCT_RECURSIVE | exact_flag(), &list);
        if (r >= 0 && arg.reclaim_root)
                r = tree_rows(m, list, &rows);
        if (r < 0)
                return fail(m, "tree", path, r);
        if (arg.region) {
                size_t n = memacct_group_list_size(list);

                views = calloc(n + 1, sizeof(*views));
                view_rows = calloc(n + 1, sizeof(*view_rows));
                scratch = calloc(8 * (n + 1), sizeof(*scratch));
                if (!views || !view_rows || !scratch)
                        r = -ENOMEM;
                else
                        tree_views(top, list, rows, views, scratch, view_rows);
        }
        if (r < 0)
                r = fail(m, "tree", path, r);
        else if (arg.region)
                r = print_tree(&views[memacct_group_list_size(list)], list, view_rows, arg.json);
        else
                r = print_tree(top, list, rows, arg.json);
        for (size_t i = 0; rows && i < memacct_group_list_size(list); i++)
                memacct_group_info_free(rows[i]);
        free(rows);
        return r;
}

static int verb_charge(memacct **mp, int argc, char **argv) {
        memacct_charge_result res = {};
        memacct *m = NULL;
        uint64_t bytes;
        unsigned flags;
        int r, item = 0;

        (void) argc;
        r = parse_charge_args(argv, &bytes, &item);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        if (strcmp(argv[0], "uncharge") == 0) {
                r = arg.region ? memacct_uncharge_region(m, argv[1], arg.region, bytes, MEMACCT_KEEP)
                               : memacct_uncharge(m, argv[1], bytes, item, MEMACCT_KEEP);
                return r < 0 ? fail(m, argv[0], argv[1], r) : 0;
        }
        flags = MEMACCT_KEEP | (arg.no_wait ? MEMACCT_NO_WAIT : 0);
        r = arg.region ? memacct_charge_region(m, argv[1], arg.region, bytes, flags, &res)
                       : memacct_charge(m, argv[1], bytes, item, flags, &res);
        if (r < 0)
                return fail(m, argv[0], argv[1], r);
        return print_charge(&res, arg.json);
}

/*
 * A stop inside memacct_next_event() ends us at once, with status 0: a
 * daemon that went away has the library retrying its connection for
 * seconds, with sleeps a signal only shortens, and a signal just before
 * poll() would not wake it. Nothing is left to undo there: what hold
 * holds is the session's, which ends with our connection (the kernel
 * closes it), and every line was flushed as it was printed. Elsewhere the
 * flag alone stops the loop, after the call in progress.
 */
static void on_stop(int sig) {
        stop_signal = sig;
        if (waiting)
                _exit(EXIT_SUCCESS);
}

/* memacct_next_event(), interruptible as on_stop() says. */
static int next_event(memacct *m, int timeout_msec, memacct_event *ret) {
        int r;

        waiting = 1;
        r = stop_signal ? -EINTR : memacct_next_event(m, timeout_msec, ret);
        waiting = 0;
        return r;
}

/* SIGINT/SIGTERM interrupt a wait (no SA_RESTART) and set stop_signal. */
static void catch_stop_signals(void) {
        struct sigaction sa = { .sa_handler = on_stop };

        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
}

/* What hold --reclaimable holds, and gives back when asked. */
typedef struct Held {
        uint64_t bytes;
        int item;
} Held;

/* A memacct_reclaim_fn: give back what is asked, as a cache drops entries. */
static int64_t hold_reclaim(memacct *m, uint64_t bytes, const char *region, void *userdata) {
        Held *h = userdata;
        uint64_t give = bytes < h->bytes ? bytes : h->bytes;
        int r;

        (void) region;
        if (give == 0)
                return 0;
        r = arg.region ? memacct_uncharge_region(m, NULL, arg.region, give, 0)
                       : memacct_uncharge(m, NULL, give, h->item, 0);
        if (r < 0) {
                fprintf(stderr, "memacctctl: hold: give back: %s\n", strerror(-r));
                return r;
        }
        h->bytes -= give;
        printf("gave back %" PRIu64 " bytes, holding %" PRIu64 "\n", give, h->bytes);
        fflush(stdout);
        return (int64_t) give;
}

static int verb_hold(memacct **mp, int argc, char **argv) {
        char group[MEMACCT_PATH_MAX + 1];
        static Held held; /* hold_reclaim()'s, until we exit */
        memacct *m = NULL;
        memacct_event ev;
        uint64_t bytes;
        int r, item = 0;

        (void) argc;
        r = parse_charge_args(argv, &bytes, &item);
        if (r != 0)
                return r;
        catch_stop_signals();
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_attach(m, argv[1]);
        if (r < 0)
                return fail(m, "attach", argv[1], r);
        /* The group the daemon says it attached us to: for "auto" the one
         * its placement rules or cgroup mirror chose. A daemon too old to
         * say leaves only what was asked. */
        if (memacct_attached_group(m, group, sizeof(group)) < 0)
                snprintf(group, sizeof(group), "%s", *argv[1] ? argv[1] : "auto");
        printf("attached to %s\n", group);
        fflush(stdout);
        r = arg.region ? memacct_charge_region(m, NULL, arg.region, bytes, 0, NULL)
                       : memacct_charge(m, NULL, bytes, item, 0, NULL);
        if (r < 0)
                return fail(m, "hold", argv[1], r);
        if (arg.region)
                printf("holding %s of %s in %s\n", argv[2], arg.region, group);
        else
                printf("holding %s in %s\n", argv[2], group);
        held = (Held) { .bytes = bytes, .item = item };
        if (arg.reclaimable) {
                /* --stat: that item alone is declared (the one held). */
                r = arg.stat ? memacct_set_reclaimable_stat(m, item, hold_reclaim, &held)
                             : memacct_set_reclaimable(m, arg.region, hold_reclaim, &held);
                if (r < 0)
                        return fail(m, "hold", argv[1], r);
                printf("reclaimable\n");
        }
        fflush(stdout);

        /* Serve the socket while waiting: after a daemon restart the library
         * reconnects and charges the held bytes again. (Over the bus the
         * session is the bus connection: it ends when we exit.) */
        while (!stop_signal) {
                r = next_event(m, 500, &ev);
                if (r < 0 && r != -EINTR)
                        return fail(m, "hold", argv[1], r);
        }
        return 0;
}

static int verb_reclaim(memacct **mp, int argc, char **argv) {
        memacct *m = connected(mp);
        uint64_t bytes, released = 0;
        int r;

        (void) argc;
        if (!m)
                return EXIT_FAILURE;
        r = parse_size_arg(argv[2], &bytes);
        if (r != 0)
                return r;
        if (bytes == MEMACCT_UNLIMITED)
                return usage_error("reclaim: '%s' is not a size to reclaim", argv[2]);
        r = memacct_reclaim(m, argv[1], arg.region, bytes, &released);
        if (r < 0)
                return fail(m, "reclaim", argv[1], r);
        if (arg.json)
                printf("{\"released\":%" PRIu64 "}\n", released);
        else
                printf("released %" PRIu64 "\n", released);
        return 0;
}

static int verb_move(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        unsigned sessions = 0;
        pid_t pid = 0;
        int r;

        (void) argc;
        r = parse_pid(argv[1], &pid);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_move(m, pid, argv[2], &sessions);
        if (r < 0)
                return fail(m, "move", argv[2], r);
        return print_sessions(sessions, arg.json);
}

static int verb_client(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        memacct_client_info c;
        pid_t pid = 0;
        int r;

        (void) argc;
        r = parse_pid(argv[1], &pid);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_client(m, pid, exact_flag(), &c);
        if (r < 0)
                return fail(m, "client", argv[1], r);
        return print_client(&c, arg.json);
}

static int verb_watch(memacct **mp, int argc, char **argv) {
        uint32_t pid, uid;
        memacct *m = NULL;
        memacct_event ev;
        int r;

        (void) argc;
        catch_stop_signals();
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = arg.region ? memacct_subscribe_region(m, argv[1], arg.region) : memacct_subscribe(m, argv[1]);
        if (r < 0)
                return fail(m, "watch", argv[1], r);
        while (!stop_signal) {
                r = next_event(m, -1, &ev);
                if (r == -EINTR || r == 0)
                        continue;
                if (r < 0)
                        return fail(m, "watch", argv[1], r);
                /* It cannot fail after an event was returned; 0 and 0
                 * are "no requester" anyway. */
                pid = uid = 0;
                (void) memacct_event_requester(m, &pid, &uid);
                if (arg.region) {
                        const char *region = NULL;

                        (void) memacct_event_region(m, &region);
                        r = print_region_event(&ev, region, pid, uid, arg.json);
                } else
                        r = print_event(&ev, pid, uid, arg.json);
                if (r != 0)
                        return r;
        }
        return 0;
}

static int verb_import_cgroups(memacct **mp, int argc, char **argv) {
        memacct_import_report *rep = NULL;
        memacct *m = connected(mp);
        int r;

        (void) argc;
        (void) argv;
        if (!m)
                return EXIT_FAILURE;
        r = memacct_import_cgroups_report(m, arg.from, arg.under,
                                          arg.reset_limits ? MEMACCT_IMPORT_RESET_LIMITS : 0, &rep);
        if (r < 0)
                return fail(m, "import-cgroups", arg.from ? arg.from : "/", r);
        r = print_import_report(rep, arg.json);
        memacct_import_report_free(rep);
        return r;
}

/* top lives in top.c and checks its own options. */
static int verb_top(memacct **mp, int argc, char **argv) {
        return top_main(mp, argc, argv, connect_or_fail);
}

/* The OCI runtime hook lives in oci.c; it checks its own arguments. */
static int verb_oci_hook(memacct **mp, int argc, char **argv) {
        return oci_hook_main(mp, argc, argv, arg.prefix, stdin, connect_or_fail);
}

/* The CDI spec lives in cdi.c; it checks its own arguments and never connects. */
static int verb_cdi(memacct **mp, int argc, char **argv) {
        (void) mp;
        return cdi_main(argc, argv);
}

/* memacctctl prune lives in prune.c. */
static int verb_prune(memacct **mp, int argc, char **argv) {
        (void) argc;
        (void) argv;
        return prune_verb_main(mp, connect_or_fail);
}

/* Regions, transfer and evict-valuable live in regions.c; they check their own arguments. */
static int verb_region(memacct **mp, int argc, char **argv) {
        if (strcmp(argv[0], "transfer") == 0)
                return transfer_verb_main(mp, argc, argv, connect_or_fail);
        if (strcmp(argv[0], "evict-valuable") == 0)
                return evict_verb_main(mp, argc, argv, connect_or_fail);
        return region_verb_main(mp, argc, argv, connect_or_fail);
}

/* The placement rules live in rules.c; it checks its own arguments. */
static int verb_rule(memacct **mp, int argc, char **argv) {
        return rule_verb_main(mp, argc, argv, connect_or_fail);
}

struct Verb {
        const char *name;
        int min_args, max_args; /* after the name; min_args -1: the verb counts them */
        int (*run)(memacct **mp, int argc, char **argv);
};

/* The commands, as memacctctl(1) lists them. */
static const Verb verbs[] = {
        { "create", 1, 6, verb_limits },
        { "remove", 1, 1, verb_path },
        { "set", 2, 6, verb_limits },
        { "show", 1, 1, verb_show },
        { "tree", 0, 1, verb_tree },
        { "charge", 2, 2, verb_charge },
        { "uncharge", 2, 2, verb_charge },
        { "hold", 2, 2, verb_hold },
        { "reclaim", 2, 2, verb_reclaim },
        { "move", 2, 2, verb_move },
        { "client", 1, 1, verb_client },
        { "reset-peak", 1, 1, verb_path },
        { "watch", 1, 1, verb_watch },
        { "oci-hook", -1, -1, verb_oci_hook },
        { "cdi", -1, -1, verb_cdi },
        { "import-cgroups", 0, 0, verb_import_cgroups },
        { "prune", 0, 0, verb_prune },
        { "run", -1, -1, run_main },
        { "top", 0, 1, verb_top },
        { "rule", -1, -1, verb_rule },
        { "region", -1, -1, verb_region },
        { "transfer", -1, -1, verb_region },
        { "evict-valuable", -1, -1, verb_region },
        { "info", 0, 0, info_main },
        { "sessions", 0, 1, info_sessions_main },
};

const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(name, verbs[i].name) == 0)
                        return &verbs[i];
        return NULL;
}

const char *verb_name(const Verb *v) {
        return v->name;
}

int verb_run(const Verb *v, memacct **mp, int argc, char **argv) {
        output_set_human(arg.human);
        if (v->min_args >= 0 && argc - 1 < v->min_args)
                return usage_error("%s: missing argument", v->name);
        if (v->min_args >= 0 && argc - 1 > v->max_args)
                return usage_error("%s: too many arguments", v->name);
        return v->run(mp, argc, argv);
}
