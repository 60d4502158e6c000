/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl: the command line of memacctd, built only on libmemacct.
 *
 * Its commands and --json keys are a user interface, documented in
 * memacctctl(1): keep them stable. Charges made here are exact, kept
 * charges (never through the stock), so what `charge` adds is exactly what
 * `show` reports. With --bus every command goes over D-Bus instead of the
 * socket and prints the same. Exit status: 0 success, 1 a refused or failed operation
 * (with the cause on stderr), 2 a usage error.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memacct.h>

#include "oci.h"
#include "macro.h"
#include "parse-size.h"

#define EXIT_USAGE 2

static const char *arg_socket;
static bool arg_bus;
static const char *arg_bus_address; /* NULL: the default bus */
static bool arg_json;
static bool arg_force;
static bool arg_exact;
static const char *arg_stat;
static const char *arg_reclaim_root;
static const char *arg_prefix; /* oci-hook --prefix */
static const char *arg_from;   /* import-cgroups --from */
static const char *arg_under;  /* import-cgroups --under */

static volatile sig_atomic_t stop_signal;

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct *, memacct_close);
DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_group_info *, memacct_group_info_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_group_list *, memacct_group_list_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

static void help(void) {
        printf("memacctctl [--socket PATH | --bus[=ADDRESS]] [--json] COMMAND ...\n\n"
               "Drive memacctd, userspace hierarchical memory accounting.\n\n"
               "  create PATH [max=SIZE] [high=SIZE] [low=SIZE] [min=SIZE]\n"
               "  remove PATH\n"
               "  set PATH KEY=SIZE...            keys: max high low min; --force for max\n"
               "  show PATH [--reclaim-root PATH] [--exact]\n"
               "  tree [PATH]\n"
               "  charge PATH SIZE [--stat ITEM]  a kept charge (stays until uncharged)\n"
               "  uncharge PATH SIZE [--stat ITEM]\n"
               "  hold PATH SIZE [--stat ITEM]    a session charge held until the command is\n"
               "                                  interrupted (SIGINT/SIGTERM), then released;\n"
               "                                  PATH auto: the mirror of our kernel cgroup\n"
               "  move PID PATH\n"
               "  client PID [--exact]\n"
               "  reset-peak PATH\n"
               "  watch PATH                      print events under PATH as they happen\n"
               "  import-cgroups [--from CGROUP] [--under PATH]\n"
               "                                  mirror the kernel's memory cgroups as groups\n"
               "  oci-hook create|delete [--prefix PATH]\n"
               "                                  the OCI runtime hook: the state JSON on stdin;\n"
               "                                  the group PATH/<id> (default /containers)\n\n"
               "Options:\n"
               "  --socket PATH   the daemon's socket (default: $MEMACCT_SOCKET, else\n"
               "                  $XDG_RUNTIME_DIR/memacctd/memacctd.sock when not root,\n"
               "                  else ./memacctd.sock when not root,\n"
               "                  else /run/memacctd/memacctd.sock)\n"
               "  --bus[=ADDRESS] reach the daemon over D-Bus (org.memacct1) instead: the\n"
               "                  system bus when root, else the user bus; or ADDRESS:\n"
               "                  system, user, or a D-Bus address (unix:path=...)\n"
               "  --json          print JSON\n"
               "  -h, --help      show this help\n"
               "  --version       show the version\n\n"
               "SIZE: bytes with an optional K/M/G/T suffix (1024-based), or max.\n"
               "ITEM: anon file shmem kernel sock swap device other.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs("memacctctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nTry 'memacctctl --help'.\n", stderr);
        return EXIT_USAGE;
}

/* The cause of a failure in words: the server's message when it has one. */
static const char *cause(memacct *m, int r) {
        const char *msg = m ? memacct_last_error(m) : NULL;

        switch (r) {
        case -EDQUOT:
                return "limit exceeded";
        case -ENOENT:
                return msg ? msg : "no such group";
        case -EEXIST:
                return msg ? msg : "group exists";
        case -ERANGE:
                return msg ? msg : "more than is charged";
        default:
                return msg ? msg : strerror(-r);
        }
}

/* "memacctctl: charge refused: /a/b: limit exceeded (max of /a)". Return: 1. */
static int fail(memacct *m, const char *what, const char *path, int r) {
        const char *refused = r == -EDQUOT && m ? memacct_refused_path(m) : NULL;
        const char *why = cause(m, r);
        size_t n = strlen(path);

        /* The server's messages often name the group already. */
        if (strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
                why += n + 2;
        fprintf(stderr, "memacctctl: %s %s: %s: %s", what,
                r == -EDQUOT || r == -EPERM ? "refused" : "failed", path, why);
        if (refused)
                fprintf(stderr, " (max of %s)", refused);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

static int connect_or_fail(memacct **ret) {
        int r;

        if (arg_bus) {
                const char *a = arg_bus_address;

                r = memacct_connect_bus(a, ret);
                if (r >= 0)
                        return 0;
                if (!a)
                        a = geteuid() == 0 ? "system" : "user";
                if (strcmp(a, "system") == 0 || strcmp(a, "user") == 0)
                        fprintf(stderr, "memacctctl: cannot reach memacctd on the %s bus: %s\n", a,
                                strerror(-r));
                else
                        fprintf(stderr, "memacctctl: cannot reach memacctd on the bus at %s: %s\n", a,
                                strerror(-r));
                return EXIT_FAILURE;
        }
        r = memacct_connect(arg_socket, ret);
        if (r < 0) {
                char *path = NULL;

                if (!arg_socket)
                        (void) memacct_default_socket(&path);
                /* The daemon may have said why it refused us (too many
                 * sessions for this uid): prefer its words. */
                fprintf(stderr, "memacctctl: cannot connect to memacctd at %s: %s\n",
                        arg_socket ? arg_socket : path ? path : "(default)",
                        memacct_last_error(NULL) ? memacct_last_error(NULL) : strerror(-r));
                free(path);
                return EXIT_FAILURE;
        }
        return 0;
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

static int parse_item(int *ret) {
        int item = memacct_stat_from_string(arg_stat);

        if (item < 0)
                return usage_error("unknown stat item '%s'", arg_stat);
        *ret = item;
        return 0;
}

/* KEY=SIZE for create and set. */
static int parse_limit(const char *arg, memacct_limits *l) {
        static const struct {
                const char *key;
                unsigned bit;
        } keys[] = {
                { "max", MEMACCT_LIMIT_MAX },
                { "high", MEMACCT_LIMIT_HIGH },
                { "low", MEMACCT_LIMIT_LOW },
                { "min", MEMACCT_LIMIT_MIN },
        };
        const char *eq = strchr(arg, '=');
        uint64_t v;

        if (!eq)
                return usage_error("expected KEY=SIZE, got '%s'", arg);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                if (strlen(keys[i].key) != (size_t) (eq - arg) ||
                    strncmp(arg, keys[i].key, (size_t) (eq - arg)) != 0)
                        continue;
                if (parse_size(eq + 1, &v) < 0)
                        return usage_error("invalid size in '%s'", arg);
                l->set |= keys[i].bit;
                switch (keys[i].bit) {
                case MEMACCT_LIMIT_MAX:
                        l->max = v;
                        break;
                case MEMACCT_LIMIT_HIGH:
                        l->high = v;
                        break;
                case MEMACCT_LIMIT_LOW:
                        l->low = v;
                        break;
                default:
                        l->min = v;
                        break;
                }
                return 0;
        }
        return usage_error("unknown limit in '%s' (keys: max high low min)", arg);
}

static int need_args(int argc, int min, int max, const char *verb) {
        if (argc - 1 < min)
                return usage_error("%s: missing argument", verb);
        if (argc - 1 > max)
                return usage_error("%s: too many arguments", verb);
        return 0;
}

/* --- output --- */

static void print_value(const char *key, uint64_t v, bool limit) {
        if (limit && v == MEMACCT_UNLIMITED)
                printf("memory.%s: max\n", key);
        else
                printf("memory.%s: %" PRIu64 "\n", key, v);
}

static void print_counters(const char *key, const memacct_counter *c, size_t n) {
        printf("memory.%s:", key);
        for (size_t i = 0; i < n; i++)
                printf("%s%s %" PRIu64 "\n", i == 0 ? " " : "\t", c[i].name, c[i].value);
        if (n == 0)
                putchar('\n');
}

static void print_group(const memacct_group_info *g) {
        printf("%s:\n", g->path);
        print_value("current", g->current, false);
        /* Only a mirror of a kernel cgroup has one. */
        if (g->kernel_current != MEMACCT_NO_KERNEL_CURRENT)
                print_value("kernel_current", g->kernel_current, false);
        print_value("peak", g->peak, false);
        print_value("max", g->max, true);
        print_value("high", g->high, true);
        print_value("low", g->low, true);
        print_value("min", g->min, true);
        print_value("effective_min", g->effective_min, true);
        print_value("effective_low", g->effective_low, true);
        print_value("failcnt", g->failcnt, false);
        print_counters("events", g->events, g->n_events);
        print_counters("events.local", g->events_local, g->n_events_local);
        print_counters("stat", g->stat, g->n_stat);
}

static json_object *json_bytes(uint64_t v, bool limit) {
        if (limit && v == MEMACCT_UNLIMITED)
                return json_object_new_string("max");
        return json_object_new_uint64(v);
}

static json_object *json_counters(const memacct_counter *c, size_t n) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < n; i++)
                json_object_object_add(o, c[i].name, json_object_new_uint64(c[i].value));
        return o;
}

static json_object *json_group(const memacct_group_info *g) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "path", json_object_new_string(g->path));
        json_object_object_add(o, "current", json_bytes(g->current, false));
        /* Only a mirror of a kernel cgroup has the key (as in the text form). */
        if (g->kernel_current != MEMACCT_NO_KERNEL_CURRENT)
                json_object_object_add(o, "kernel_current", json_bytes(g->kernel_current, false));
        json_object_object_add(o, "peak", json_bytes(g->peak, false));
        json_object_object_add(o, "max", json_bytes(g->max, true));
        json_object_object_add(o, "high", json_bytes(g->high, true));
        json_object_object_add(o, "low", json_bytes(g->low, true));
        json_object_object_add(o, "min", json_bytes(g->min, true));
        json_object_object_add(o, "effective_min", json_bytes(g->effective_min, true));
        json_object_object_add(o, "effective_low", json_bytes(g->effective_low, true));
        json_object_object_add(o, "failcnt", json_bytes(g->failcnt, false));
        json_object_object_add(o, "events", json_counters(g->events, g->n_events));
        json_object_object_add(o, "events_local", json_counters(g->events_local, g->n_events_local));
        json_object_object_add(o, "stat", json_counters(g->stat, g->n_stat));
        return o;
}

static int print_json(json_object *o) {
        if (!o) {
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

/* --- commands --- */

/* create and set: a group path, then limits; set needs one at least. */
static int verb_limits(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        memacct_limits l = {};
        bool create = strcmp(argv[0], "create") == 0;
        int r;

        r = need_args(argc, create ? 1 : 2, 5, argv[0]);
        for (int i = 2; r == 0 && i < argc; i++)
                r = parse_limit(argv[i], &l);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        if (create)
                r = memacct_create_group(m, argv[1], l.set ? &l : NULL, MEMACCT_NO_OWNER);
        else
                r = memacct_set_limits(m, argv[1], &l, arg_force ? MEMACCT_FORCE : 0);
        return r < 0 ? fail(m, argv[0], argv[1], r) : 0;
}

/* remove and reset-peak: one group path, one call. */
static int verb_path(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        int r = need_args(argc, 1, 1, argv[0]);

        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        if (strcmp(argv[0], "remove") == 0)
                r = memacct_remove_group(m, argv[1]);
        else
                r = memacct_reset_peak(m, argv[1]);
        return r < 0 ? fail(m, argv[0], argv[1], r) : 0;
}

static int verb_show(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        _cleanup_(memacct_group_info_freep) memacct_group_info *g = NULL;
        int r = need_args(argc, 1, 1, argv[0]);

        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_group(m, argv[1], arg_reclaim_root, arg_exact ? MEMACCT_EXACT : 0, &g);
        if (r < 0)
                return fail(m, "show", argv[1], r);
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *o = json_group(g);

                return print_json(o);
        }
        print_group(g);
        return 0;
}

static int path_depth(const char *path) {
        int d = 0;

        for (const char *p = path; *p; p++)
                d += *p == '/' && p[1];
        return d;
}

static int verb_tree(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        _cleanup_(memacct_group_list_freep) memacct_group_list *list = NULL;
        _cleanup_(memacct_group_info_freep) memacct_group_info *top = NULL;
        const char *path = argc > 1 ? argv[1] : "/";
        bool mirrors;
        size_t n;
        int r = need_args(argc, 0, 1, argv[0]), base;

        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_group(m, path, arg_reclaim_root, arg_exact ? MEMACCT_EXACT : 0, &top);
        if (r >= 0)
                r = memacct_list_groups(m, path, MEMACCT_RECURSIVE | (arg_exact ? MEMACCT_EXACT : 0),
                                        &list);
        if (r < 0)
                return fail(m, "tree", path, r);
        n = memacct_group_list_size(list);

        /* The subtree's root first, then its descendants in pre-order (the
         * list may or may not repeat the root: skip it if it does). */
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *a = json_object_new_array();

                if (!a)
                        return print_json(NULL);
                json_object_array_add(a, json_group(top));
                for (size_t i = 0; i < n; i++) {
                        const memacct_group_info *g = memacct_group_list_get(list, i);

                        if (strcmp(g->path, top->path) != 0)
                                json_object_array_add(a, json_group(g));
                }
                return print_json(a);
        }

        base = path_depth(top->path);
        /* A KERNEL column (kernel_current) only when the tree holds a mirror. */
        mirrors = top->kernel_current != MEMACCT_NO_KERNEL_CURRENT;
        for (size_t i = 0; i < n && !mirrors; i++)
                mirrors = memacct_group_list_get(list, i)->kernel_current != MEMACCT_NO_KERNEL_CURRENT;
        printf("%-40s %14s %14s %14s %14s", "GROUP", "CURRENT", "PEAK", "MAX", "HIGH");
        printf(mirrors ? " %14s\n" : "\n", "KERNEL");
        for (size_t i = 0; i <= n; i++) {
                const memacct_group_info *g = i == 0 ? top : memacct_group_list_get(list, i - 1);
                char name[256], max[24], high[24];
                const char *last;
                int indent;

                if (i > 0 && strcmp(g->path, top->path) == 0)
                        continue;
                last = i == 0 ? g->path : strrchr(g->path, '/') + 1;
                indent = 2 * (path_depth(g->path) - base);
                snprintf(name, sizeof(name), "%*s%s", indent, "", last);
                if (g->max == MEMACCT_UNLIMITED)
                        snprintf(max, sizeof(max), "max");
                else
                        snprintf(max, sizeof(max), "%" PRIu64, g->max);
                if (g->high == MEMACCT_UNLIMITED)
                        snprintf(high, sizeof(high), "max");
                else
                        snprintf(high, sizeof(high), "%" PRIu64, g->high);
                printf("%-40s %14" PRIu64 " %14" PRIu64 " %14s %14s", name, g->current, g->peak,
                       max, high);
                if (!mirrors)
                        putchar('\n');
                else if (g->kernel_current == MEMACCT_NO_KERNEL_CURRENT)
                        printf(" %14s\n", "-");
                else
                        printf(" %14" PRIu64 "\n", g->kernel_current);
        }
        return 0;
}

static int verb_charge(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        bool charge = strcmp(argv[0], "charge") == 0;
        uint64_t bytes;
        int r, item = 0;

        r = need_args(argc, 2, 2, argv[0]);
        if (r == 0)
                r = parse_size_arg(argv[2], &bytes);
        if (r == 0)
                r = parse_item(&item);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        if (charge)
                r = memacct_charge(m, argv[1], bytes, item, MEMACCT_KEEP, NULL);
        else
                r = memacct_uncharge(m, argv[1], bytes, item, MEMACCT_KEEP);
        return r < 0 ? fail(m, argv[0], argv[1], r) : 0;
}

static void on_stop(int sig) {
        stop_signal = sig;
}

/* SIGINT/SIGTERM interrupt a wait (no SA_RESTART) and set stop_signal. */
static void catch_stop_signals(void) {
        struct sigaction sa = { .sa_handler = on_stop };

        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
}

static int verb_hold(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        memacct_event ev;
        uint64_t bytes;
        int r, item = 0;

        r = need_args(argc, 2, 2, argv[0]);
        if (r == 0)
                r = parse_size_arg(argv[2], &bytes);
        if (r == 0)
                r = parse_item(&item);
        if (r != 0)
                return r;
        catch_stop_signals();
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_attach(m, argv[1]);
        if (r < 0)
                return fail(m, "attach", argv[1], r);
        r = memacct_charge(m, NULL, bytes, item, 0, NULL);
        if (r < 0)
                return fail(m, "hold", argv[1], r);
        printf("holding %s in %s\n", argv[2], argv[1]);
        fflush(stdout);

        /* Serve the socket while waiting: after a daemon restart the library
         * reconnects and charges the held bytes again. (Over the bus the
         * session is the bus connection: it ends when we exit.) */
        while (!stop_signal) {
                r = memacct_next_event(m, 500, &ev);
                if (r < 0 && r != -EINTR)
                        return fail(m, "hold", argv[1], r);
        }
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

static int verb_move(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        unsigned sessions = 0;
        pid_t pid;
        int r;

        r = need_args(argc, 2, 2, argv[0]);
        if (r == 0)
                r = parse_pid(argv[1], &pid);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_move(m, pid, argv[2], &sessions);
        if (r < 0)
                return fail(m, "move", argv[2], r);
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (o)
                        json_object_object_add(o, "sessions", json_object_new_uint64(sessions));
                return print_json(o);
        }
        return 0;
}

static int verb_client(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        memacct_client_info c;
        pid_t pid;
        int r;

        r = need_args(argc, 1, 1, argv[0]);
        if (r == 0)
                r = parse_pid(argv[1], &pid);
        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_get_client(m, pid, arg_exact ? MEMACCT_EXACT : 0, &c);
        if (r < 0)
                return fail(m, "client", argv[1], r);
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (o) {
                        json_object_object_add(o, "pid", json_object_new_uint64(c.pid));
                        json_object_object_add(o, "file", json_object_new_uint64(c.file));
                        json_object_object_add(o, "anon", json_object_new_uint64(c.anon));
                        json_object_object_add(o, "swap", json_object_new_uint64(c.swap));
                        json_object_object_add(o, "shmem", json_object_new_uint64(c.shmem));
                }
                return print_json(o);
        }
        printf("pid %" PRIu32 "\nfile %" PRIu64 "\nanon %" PRIu64 "\nswap %" PRIu64
               "\nshmem %" PRIu64 "\n",
               c.pid, c.file, c.anon, c.swap, c.shmem);
        return 0;
}

static int verb_watch(memacct **mp, int argc, char **argv) {
        memacct *m = NULL;
        memacct_event ev;
        int r = need_args(argc, 1, 1, argv[0]);

        if (r != 0)
                return r;
        catch_stop_signals();
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_subscribe(m, argv[1]);
        if (r < 0)
                return fail(m, "watch", argv[1], r);
        while (!stop_signal) {
                r = memacct_next_event(m, -1, &ev);
                if (r == -EINTR)
                        continue;
                if (r < 0)
                        return fail(m, "watch", argv[1], r);
                if (r == 0)
                        continue;
                if (arg_json) {
                        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                        if (o) {
                                json_object_object_add(o, "path", json_object_new_string(ev.path));
                                json_object_object_add(o, "name", json_object_new_string(ev.name));
                                json_object_object_add(o, "count", json_object_new_uint64(ev.count));
                        }
                        r = print_json(o);
                        if (r != 0)
                                return r;
                } else
                        printf("%s %s %" PRIu64 "\n", ev.path, ev.name, ev.count);
                fflush(stdout);
        }
        return 0;
}

static int verb_import_cgroups(memacct **mp, int argc, char **argv) {
        memacct_import_result res = {};
        memacct *m;
        int r = need_args(argc, 0, 0, argv[0]);

        if (r != 0)
                return r;
        m = connected(mp);
        if (!m)
                return EXIT_FAILURE;
        r = memacct_import_cgroups(m, arg_from, arg_under, &res);
        if (r < 0)
                return fail(m, "import-cgroups", arg_from ? arg_from : "/", r);
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o)
                        return print_json(NULL);
                json_object_object_add(o, "created", json_object_new_uint64(res.created));
                json_object_object_add(o, "updated", json_object_new_uint64(res.updated));
                json_object_object_add(o, "unchanged", json_object_new_uint64(res.unchanged));
                return print_json(o);
        }
        printf("created: %" PRIu32 "\nupdated: %" PRIu32 "\nunchanged: %" PRIu32 "\n", res.created,
               res.updated, res.unchanged);
        return 0;
}

/* The OCI runtime hook lives in ctl-oci.c. */
static int verb_oci_hook(memacct **mp, int argc, char **argv) {
        return oci_hook_main(mp, argc, argv, arg_prefix, stdin, connect_or_fail);
}

static const struct {
        const char *name;
        int (*run)(memacct **mp, int argc, char **argv);
} verbs[] = {
        { "create", verb_limits },   { "remove", verb_path },
        { "set", verb_limits },       { "show", verb_show },
        { "tree", verb_tree },       { "charge", verb_charge },
        { "uncharge", verb_charge }, { "hold", verb_hold },
        { "move", verb_move },       { "client", verb_client },
        { "reset-peak", verb_path }, { "watch", verb_watch },
        { "oci-hook", verb_oci_hook },
        { "import-cgroups", verb_import_cgroups },
};

enum {
        ARG_SOCKET = 0x100,
        ARG_BUS,
        ARG_JSON,
        ARG_VERSION,
        ARG_FORCE,
        ARG_EXACT,
        ARG_STAT,
        ARG_RECLAIM_ROOT,
        ARG_PREFIX,
        ARG_FROM,
        ARG_UNDER,
};

static const struct option options[] = {
        { "socket", required_argument, NULL, ARG_SOCKET },
        { "bus", optional_argument, NULL, ARG_BUS },
        { "json", no_argument, NULL, ARG_JSON },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "force", no_argument, NULL, ARG_FORCE },
        { "exact", no_argument, NULL, ARG_EXACT },
        { "stat", required_argument, NULL, ARG_STAT },
        { "reclaim-root", required_argument, NULL, ARG_RECLAIM_ROOT },
        { "prefix", required_argument, NULL, ARG_PREFIX },
        { "from", required_argument, NULL, ARG_FROM },
        { "under", required_argument, NULL, ARG_UNDER },
        {}
};

/*
 * Options may come before or after the command; each command accepts only
 * its own. Return: < 0 to go on, else the exit status.
 */
static int parse_argv(int argc, char **argv, int *ret_first) {
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SOCKET:
                        arg_socket = optarg;
                        break;
                case ARG_BUS:
                        arg_bus = true;
                        arg_bus_address = optarg;
                        if (arg_bus_address && !*arg_bus_address)
                                return usage_error("--bus=: empty address");
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("memacctctl %s\n", MEMACCT_VERSION);
                        return 0;
                case ARG_FORCE:
                        arg_force = true;
                        break;
                case ARG_EXACT:
                        arg_exact = true;
                        break;
                case ARG_STAT:
                        arg_stat = optarg;
                        break;
                case ARG_RECLAIM_ROOT:
                        arg_reclaim_root = optarg;
                        break;
                case ARG_PREFIX:
                        arg_prefix = optarg;
                        break;
                case ARG_FROM:
                        arg_from = optarg;
                        break;
                case ARG_UNDER:
                        arg_under = optarg;
                        break;
                default:
                        return usage_error("invalid option '%s'", argv[optind - 1]);
                }
        }
        if (arg_socket && arg_bus)
                return usage_error("--socket and --bus exclude each other");
        *ret_first = optind;
        return -1;
}

static bool option_allowed(const char *verb) {
        if (arg_force && strcmp(verb, "set") != 0)
                return usage_error("--force: only for set"), false;
        if (arg_stat && strcmp(verb, "charge") != 0 && strcmp(verb, "uncharge") != 0 &&
            strcmp(verb, "hold") != 0)
                return usage_error("--stat: only for charge, uncharge and hold"), false;
        if (arg_exact && strcmp(verb, "show") != 0 && strcmp(verb, "client") != 0 &&
            strcmp(verb, "tree") != 0)
                return usage_error("--exact: only for show, tree and client"), false;
        if (arg_reclaim_root && strcmp(verb, "show") != 0 && strcmp(verb, "tree") != 0)
                return usage_error("--reclaim-root: only for show and tree"), false;
        if (arg_prefix && strcmp(verb, "oci-hook") != 0)
                return usage_error("--prefix: only for oci-hook"), false;
        if ((arg_from || arg_under) && strcmp(verb, "import-cgroups") != 0)
                return usage_error("--from and --under: only for import-cgroups"), false;
        return true;
}

int main(int argc, char **argv) {
        _cleanup_(memacct_closep) memacct *m = NULL;
        int r, first = 0;

        r = parse_argv(argc, argv, &first);
        if (r >= 0)
                return r;
        if (first >= argc)
                return usage_error("missing command");
        /* getopt takes an optional argument only as --bus=ADDRESS. */
        if (arg_bus && !arg_bus_address &&
            (strcmp(argv[first], "system") == 0 || strcmp(argv[first], "user") == 0 ||
             strchr(argv[first], ':')))
                return usage_error("write --bus=%s (with '=')", argv[first]);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                if (strcmp(argv[first], verbs[i].name) != 0)
                        continue;
                if (!option_allowed(verbs[i].name))
                        return EXIT_USAGE;
                /* A broken pipe on stdout (watch | head) must end us quietly. */
                signal(SIGPIPE, SIG_DFL);
                /* Arguments are checked before connecting: a usage error
                 * is exit status 2 whether or not the daemon runs. */
                return verbs[i].run(&m, argc - first, argv + first);
        }
        return usage_error("unknown command '%s'", argv[first]);
}
