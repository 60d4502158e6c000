/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl's output: each result as text or as JSON, and the errors.
 *
 * Invariant: the text and the JSON form of a result carry the same fields
 * in the same order (the JSON keys spell "events.local" as
 * "events_local"); a group's fields are listed once, in group_values[] and
 * group_counters[], for both. Limits that are MEMACCT_UNLIMITED print as
 * "max", as in cgroup v2's memory.max. A JSON result is one line, so that
 * watch --json is a stream of JSON lines.
 */

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delegate.h"
#include "macro.h"
#include "options.h"
#include "output.h"


/* -h: set once by main() before anything prints. */
static bool human;

void output_set_human(bool on) {
        human = on;
}

int usage_errorv(const char *context, const char *fmt, va_list ap) {
        fprintf(stderr, "memacctctl: %s", context);
        vfprintf(stderr, fmt, ap);
        fputs("\nTry 'memacctctl --help'.\n", stderr);
        return EXIT_USAGE;
}

int usage_error(const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = usage_errorv("", fmt, ap);
        va_end(ap);
        return r;
}

const char *message_past_path(const char *why, const char *path) {
        size_t n = strlen(path);

        if (strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
                return why + n + 2;
        return why;
}

/* The cause of a failure in words: the server's message when it has one. */
static const char *cause(memacct *m, int r) {
        const char *msg = m ? memacct_last_error(m) : NULL;

        switch (r) {
        case -EDQUOT:
                /* In a device region the daemon's words name the region
                 * (and a full region is its capacity, not a max). */
                return msg && strstr(msg, " region ") ? msg : "limit exceeded";
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

int errorf(char *err, size_t errlen, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        return r;
}

int fail(memacct *m, const char *what, const char *path, int r) {
        const char *refused = r == -EDQUOT && m ? memacct_refused_path(m) : NULL;
        /* Words that name the refusing limit already need no "(max of ...)". */
        bool named = r == -EDQUOT && (strstr(cause(m, r), "(max of ") || strstr(cause(m, r), "capacity"));

        if (arg.json) {
                /* A script asked for JSON: the failure is JSON too, one object on stderr. */
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (o) {
                        json_object_object_add(o, "command", json_object_new_string(what));
                        json_object_object_add(o, "path", json_object_new_string(path));
                        json_object_object_add(o, "error", json_object_new_string(message_past_path(cause(m, r), path)));
                        json_object_object_add(o, "errno", json_object_new_int(-r));
                        json_object_object_add(o, "refused", json_object_new_boolean(r == -EDQUOT || r == -EPERM));
                        if (refused)
                                json_object_object_add(o, "refused_by", json_object_new_string(refused));
                        fprintf(stderr, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                                    JSON_C_TO_STRING_NOSLASHESCAPE));
                        return EXIT_FAILURE;
                }
        }
        fprintf(stderr, "memacctctl: %s %s: %s: %s", what,
                r == -EDQUOT || r == -EPERM ? "refused" : "failed", path,
                message_past_path(cause(m, r), path));
        if (refused && !named)
                fprintf(stderr, " (max of %s)", refused);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

static int print_json(json_object *o);

int print_json_object(json_object *o) {
        return print_json(o);
}

static int print_json(json_object *o) {
        if (!o) {
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

/* A group's byte counts, in the order both forms print them. */
static const struct {
        const char *key;
        size_t offset;
        bool limit; /* MEMACCT_UNLIMITED is "max" */
} group_values[] = {
        { "current", offsetof(memacct_group_info, current), false },
        /* Only a mirror of a kernel cgroup has one: see group_value_shown(). */
        { "kernel_current", offsetof(memacct_group_info, kernel_current), false },
        /* Of current: what the group itself keeps and its sessions hold. */
        { "kept", offsetof(memacct_group_info, kept), false },
        { "session", offsetof(memacct_group_info, session), false },
        { "peak", offsetof(memacct_group_info, peak), false },
        { "max", offsetof(memacct_group_info, max), true },
        { "high", offsetof(memacct_group_info, high), true },
        { "low", offsetof(memacct_group_info, low), true },
        { "min", offsetof(memacct_group_info, min), true },
        { "effective_min", offsetof(memacct_group_info, effective_min), true },
        { "effective_low", offsetof(memacct_group_info, effective_low), true },
        { "failcnt", offsetof(memacct_group_info, failcnt), false },
};

/* A group's counter lists: memory.events and the others. */
static const struct {
        const char *key;      /* the text form's: memory.<key> */
        const char *json_key; /* the JSON form's */
        size_t offset, n_offset;
} group_counters[] = {
        { "events", "events", offsetof(memacct_group_info, events),
          offsetof(memacct_group_info, n_events) },
        { "events.local", "events_local", offsetof(memacct_group_info, events_local),
          offsetof(memacct_group_info, n_events_local) },
        { "stat", "stat", offsetof(memacct_group_info, stat),
          offsetof(memacct_group_info, n_stat) },
};

static uint64_t group_value(const memacct_group_info *g, size_t i) {
        return *(const uint64_t *) ((const char *) g + group_values[i].offset);
}

static bool group_value_shown(const memacct_group_info *g, size_t i) {
        return group_values[i].offset != offsetof(memacct_group_info, kernel_current) ||
               g->kernel_current != MEMACCT_NO_KERNEL_CURRENT;
}

static const memacct_counter *group_counter_list(const memacct_group_info *g, size_t i,
                                                 size_t *ret_n) {
        *ret_n = *(const size_t *) ((const char *) g + group_counters[i].n_offset);
        return *(const memacct_counter *const *) ((const char *) g + group_counters[i].offset);
}

const char *output_format_size(char buf[static 24], uint64_t v) {
        static const char units[] = "KMGTPE";
        uint64_t div = 1024, tenths, whole;
        size_t u = 0;

        if (v < 1024) {
                snprintf(buf, 24, "%" PRIu64 "B", v);
                return buf;
        }
        while (u + 1 < sizeof(units) - 1 && v / div >= 1024) {
                div *= 1024;
                u++;
        }
        /* Tenths, rounded up; 10.0 and more print without a decimal. */
        /* v % div * 10 < 10 * 2^60: no overflow. */
        tenths = v / div * 10 + (v % div * 10 + div - 1) / div;
        if (tenths < 100) {
                snprintf(buf, 24, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10, units[u]);
                return buf;
        }
        whole = v / div + (v % div != 0);
        if (whole >= 1024 && u + 1 < sizeof(units) - 1) {
                /* 1023.5M rounds up to 1024M: that is 1.0G. */
                snprintf(buf, 24, "1.0%c", units[u + 1]);
                return buf;
        }
        snprintf(buf, 24, "%" PRIu64 "%c", whole, units[u]);
        return buf;
}

/* @v as text: "max" for an unlimited @limit, in units with -h. Return: @buf. */
static const char *format_bytes(char buf[static 24], uint64_t v, bool limit) {
        if (limit && v == MEMACCT_UNLIMITED)
                return "max";
        if (human)
                return output_format_size(buf, v);
        snprintf(buf, 24, "%" PRIu64, v);
        return buf;
}

/* memory.pressure's two lines, by name, as the kernel's psi_show() orders them. */
static const struct {
        const char *name;
        size_t offset;
} group_pressure[] = {
        { "some", offsetof(memacct_group_info, pressure_some) },
        { "full", offsetof(memacct_group_info, pressure_full) },
};

static const memacct_pressure *group_pressure_line(const memacct_group_info *g, size_t i) {
        return (const memacct_pressure *) ((const char *) g + group_pressure[i].offset);
}

/*
 * "memory.pressure: some avg10=0.00 avg60=0.00 avg300=0.00 total=0", then
 * the full line tab-indented: the kernel's text, in show's layout of
 * memory.events. The daemon sends hundredths: %.2f gives them back.
 */
static void print_pressure_text(const memacct_group_info *g) {
        if (!g->has_pressure)
                return;
        printf("memory.pressure:");
        for (size_t i = 0; i < ELEMENTSOF(group_pressure); i++) {
                const memacct_pressure *p = group_pressure_line(g, i);

                printf("%s%s avg10=%.2f avg60=%.2f avg300=%.2f total=%" PRIu64 "\n", i == 0 ? " " : "\t",
                       group_pressure[i].name, p->avg10, p->avg60, p->avg300, p->total_usec);
        }
}

/* A percentage as a JSON number written with the text's two decimals, not 17 digits. */
static json_object *json_percent(double v) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%.2f", v);
        return json_object_new_double_s(v, buf);
}

static json_object *json_pressure(const memacct_group_info *g) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < ELEMENTSOF(group_pressure); i++) {
                const memacct_pressure *p = group_pressure_line(g, i);
                json_object *line = json_object_new_object();

                if (line) {
                        json_object_object_add(line, "avg10", json_percent(p->avg10));
                        json_object_object_add(line, "avg60", json_percent(p->avg60));
                        json_object_object_add(line, "avg300", json_percent(p->avg300));
                        json_object_object_add(line, "total", json_object_new_uint64(p->total_usec));
                }
                json_object_object_add(o, group_pressure[i].name, line);
        }
        return o;
}

static void print_group_text(const memacct_group_info *g) {
        char name[64];

        printf("%s:\n", g->path);
        for (size_t i = 0; i < ELEMENTSOF(group_values); i++) {
                char buf[24];

                if (group_value_shown(g, i))
                        printf("memory.%s: %s\n", group_values[i].key,
                               format_bytes(buf, group_value(g, i), group_values[i].limit));
        }
        /* Not a memory.* file: the delegation, as "uid (name)". */
        if (g->owner != MEMACCT_NO_OWNER)
                printf("owner: %" PRIu32 " (%s)\n", g->owner, owner_name(g->owner, name, sizeof(name)));
        printf("sessions: %" PRIu32 "\n", g->nr_sessions);
        for (size_t i = 0; i < ELEMENTSOF(group_counters); i++) {
                size_t n;
                const memacct_counter *c = group_counter_list(g, i, &n);

                /* memory.stat is in bytes, the events are counts. */
                bool bytes = strcmp(group_counters[i].key, "stat") == 0;

                printf("memory.%s:", group_counters[i].key);
                for (size_t k = 0; k < n; k++) {
                        char buf[24];

                        if (bytes)
                                format_bytes(buf, c[k].value, false);
                        else
                                snprintf(buf, sizeof(buf), "%" PRIu64, c[k].value);
                        printf("%s%s %s\n", k == 0 ? " " : "\t", c[k].name, buf);
                }
                if (n == 0)
                        putchar('\n');
        }
        print_pressure_text(g);
        print_group_regions_text(g, NULL);
}

json_object *json_group(const memacct_group_info *g) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "path", json_object_new_string(g->path));
        for (size_t i = 0; i < ELEMENTSOF(group_values); i++) {
                uint64_t v = group_value(g, i);

                if (!group_value_shown(g, i))
                        continue;
                json_object_object_add(o, group_values[i].key,
                                       group_values[i].limit && v == MEMACCT_UNLIMITED
                                               ? json_object_new_string("max")
                                               : json_object_new_uint64(v));
        }
        if (g->owner != MEMACCT_NO_OWNER) {
                char name[64];

                json_object_object_add(o, "owner", json_object_new_uint64(g->owner));
                owner_name(g->owner, name, sizeof(name));
                json_object_object_add(o, "owner_name",
                                       strcmp(name, "-") == 0 ? NULL : json_object_new_string(name));
        }
        json_object_object_add(o, "nr_sessions", json_object_new_uint64(g->nr_sessions));
        for (size_t i = 0; i < ELEMENTSOF(group_counters); i++) {
                size_t n;
                const memacct_counter *c = group_counter_list(g, i, &n);
                json_object *counters = json_object_new_object();

                for (size_t k = 0; counters && k < n; k++)
                        json_object_object_add(counters, c[k].name,
                                               json_object_new_uint64(c[k].value));
                json_object_object_add(o, group_counters[i].json_key, counters);
        }
        if (g->has_pressure)
                json_object_object_add(o, "pressure", json_pressure(g));
        if (g->n_regions > 0)
                json_object_object_add(o, "regions", json_group_regions(g, NULL));
        return o;
}

int print_group_property(const memacct_group_info *g, const char *key) {
        _cleanup_(json_object_putp) json_object *o = json_group(g);
        _cleanup_free_ char *copy = strdup(key);
        json_object *v = o;
        char *save = NULL;

        if (!o || !copy) {
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        /* "events.max": a key in the object that "events" names. */
        for (char *k = strtok_r(copy, ".", &save); k; k = strtok_r(NULL, ".", &save))
                if (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, k, &v)) {
                        fprintf(stderr, "memacctctl: show -P: no key '%s' (the keys of --json show, "
                                        "dotted: current, max, events.max, stat.anon ...)\n", key);
                        return EXIT_FAILURE;
                }
        if (json_object_is_type(v, json_type_string))
                puts(json_object_get_string(v));
        else
                puts(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

int print_group(const memacct_group_info *g, bool json) {
        if (json) {
                _cleanup_(json_object_putp) json_object *o = json_group(g);

                return print_json(o);
        }
        print_group_text(g);
        return 0;
}

static int path_depth(const char *path) {
        int d = 0;

        for (const char *p = path; *p; p++)
                d += *p == '/' && p[1];
        return d;
}

/* The groups of the tree: @top, then those of @list that are not @top, or
 * in their stead those of @rows, where given (NULL: gone meanwhile). */
static const memacct_group_info *tree_group(const memacct_group_info *top,
                                            const memacct_group_list *list,
                                            memacct_group_info *const *rows, size_t i) {
        const memacct_group_info *g;

        if (i == 0)
                return top;
        g = rows ? rows[i - 1] : memacct_group_list_get(list, i - 1);
        return g && strcmp(g->path, top->path) != 0 ? g : NULL;
}

static int print_tree_json(const memacct_group_info *top, const memacct_group_list *list,
                           memacct_group_info *const *rows) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        size_t n = memacct_group_list_size(list);

        if (!a)
                return print_json(NULL);
        for (size_t i = 0; i <= n; i++) {
                const memacct_group_info *g = tree_group(top, list, rows, i);

                if (g)
                        json_object_array_add(a, json_group(g));
        }
        return print_json(a);
}

/* The GROUP column of @g: its indent and its name (the top's full path). */
static int tree_name(const memacct_group_info *g, int base, bool top, const char **ret_name) {
        *ret_name = top ? g->path : strrchr(g->path, '/') + 1;
        return 2 * (path_depth(g->path) - base);
}

int print_tree(const memacct_group_info *top, const memacct_group_list *list,
               memacct_group_info *const *rows, bool json) {
        size_t n = memacct_group_list_size(list);
        int base = path_depth(top->path), width = 40;
        bool mirrors;

        if (json)
                return print_tree_json(top, list, rows);
        /* A KERNEL column (kernel_current) only when the tree holds a mirror. */
        mirrors = false;
        for (size_t i = 0; i <= n && !mirrors; i++) {
                const memacct_group_info *g = tree_group(top, list, rows, i);

                mirrors = g && g->kernel_current != MEMACCT_NO_KERNEL_CURRENT;
        }
        /* GROUP is 40 wide, or as wide as its widest row (a 64-hex container
         * id under /containers), so that every column stays aligned. */
        for (size_t i = 0; i <= n; i++) {
                const memacct_group_info *g = tree_group(top, list, rows, i);
                const char *name;
                int w;

                if (!g)
                        continue;
                w = tree_name(g, base, i == 0, &name);
                width = MAX(width, w + (int) strlen(name));
        }
        printf("%-*s %14s %14s %14s %14s", width, "GROUP", "CURRENT", "PEAK", "MAX", "HIGH");
        /* OWNER last but for KERNEL: no trailing blanks without a mirror. */
        printf(mirrors ? " %-12s %14s\n" : " %s\n", "OWNER", "KERNEL");
        for (size_t i = 0; i <= n; i++) {
                const memacct_group_info *g = tree_group(top, list, rows, i);
                char cur[24], peak[24], max[24], high[24], kernel[24], owner[64];
                const char *name;
                int indent;

                if (!g)
                        continue;
                indent = tree_name(g, base, i == 0, &name);
                /* The owner's name, its uid when it has none; "-" for root's groups. */
                if (g->owner == 0 || g->owner == MEMACCT_NO_OWNER)
                        strcpy(owner, "-");
                else if (strcmp(owner_name(g->owner, owner, sizeof(owner)), "-") == 0)
                        snprintf(owner, sizeof(owner), "%" PRIu32, g->owner);
                printf("%*s%-*s %14s %14s %14s %14s", indent, "", width - indent, name,
                       format_bytes(cur, g->current, false), format_bytes(peak, g->peak, false),
                       format_bytes(max, g->max, true), format_bytes(high, g->high, true));
                if (!mirrors) {
                        printf(" %s\n", owner);
                        continue;
                }
                printf(" %-12s", owner);
                if (g->kernel_current == MEMACCT_NO_KERNEL_CURRENT)
                        printf(" %14s\n", "-");
                else
                        printf(" %14s\n", format_bytes(kernel, g->kernel_current, false));
        }
        return 0;
}

/* Counts as "<key><sep><value>" lines, or as one JSON object. */
static int print_counts(const char *const *keys, const uint64_t *values, size_t n,
                        const char *sep, bool json) {
        if (json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                for (size_t i = 0; o && i < n; i++)
                        json_object_object_add(o, keys[i], json_object_new_uint64(values[i]));
                return print_json(o);
        }
        for (size_t i = 0; i < n; i++)
                printf("%s%s%" PRIu64 "\n", keys[i], sep, values[i]);
        return 0;
}

int print_sessions(unsigned sessions, bool json) {
        static const char *const keys[] = { "sessions" };
        const uint64_t values[] = { sessions };

        if (!json)
                return 0;
        return print_counts(keys, values, ELEMENTSOF(keys), "", true);
}

int print_client(const memacct_client_info *c, bool json) {
        static const char *const keys[] = { "pid", "file", "anon", "swap", "shmem" };

        const uint64_t values[] = { c->pid, c->file, c->anon, c->swap, c->shmem };

        if (json || !human)
                return print_counts(keys, values, ELEMENTSOF(keys), " ", json);
        /* -h: the pid stays a number, the rest are bytes. */
        printf("pid %" PRIu32 "\n", c->pid);
        for (size_t i = 1; i < ELEMENTSOF(keys); i++) {
                char buf[24];

                printf("%s %s\n", keys[i], format_bytes(buf, values[i], false));
        }
        return 0;
}

int print_charge(const memacct_charge_result *res, bool json) {
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (!json)
                return 0;
        o = json_object_new_object();
        if (o) {
                json_object_object_add(o, "over_high", json_object_new_uint64(res->over_high));
                json_object_object_add(o, "throttle_usec", json_object_new_uint64(res->throttle_usec));
                json_object_object_add(o, "margin",
                                       res->margin == MEMACCT_UNLIMITED
                                               ? json_object_new_string("max")
                                               : json_object_new_uint64(res->margin));
                json_object_object_add(o, "over_max", json_object_new_boolean(res->over_max));
        }
        return print_json(o);
}

int print_import(const memacct_import_result *res, bool json) {
        static const char *const keys[] = { "created", "updated", "unchanged" };

        const uint64_t values[] = { res->created, res->updated, res->unchanged };

        return print_counts(keys, values, ELEMENTSOF(keys), ": ", json);
}

/* Now in local time as ISO 8601 with milliseconds and the offset,
 * "2024-05-01T12:34:56.789+02:00" (journalctl -o short-iso-precise, to the
 * millisecond): sortable, and comparable with the daemon's journal. */
static const char *format_now(char buf[static 40]) {
        struct timespec ts;
        struct tm tm;
        char zone[8];
        size_t n;

        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        if (strftime(zone, sizeof(zone), "%z", &tm) != 5)
                strcpy(zone, "+0000");
        snprintf(buf + n, 40 - n, ".%03ld%.3s:%s", ts.tv_nsec / 1000000, zone, zone + 3);
        return buf;
}

/* An event as JSON, with its region when @region is not NULL. */
static int event_json(const memacct_event *ev, const char *region, uint32_t pid, uint32_t uid) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        char now[40];
        int r;

        format_now(now);
        if (o) {
                json_object_object_add(o, "time", json_object_new_string(now));
                json_object_object_add(o, "path", json_object_new_string(ev->path));
                if (region)
                        json_object_object_add(o, "region", json_object_new_string(region));
                json_object_object_add(o, "name", json_object_new_string(ev->name));
                json_object_object_add(o, "count", json_object_new_uint64(ev->count));
                /* pid 0: no request raised it (or the daemon did not say);
                 * no process has pid 0 to name. */
                if (pid != 0) {
                        json_object_object_add(o, "pid", json_object_new_uint64(pid));
                        json_object_object_add(o, "uid", json_object_new_uint64(uid));
                }
        }
        r = print_json(o);
        fflush(stdout);
        return r;
}

int print_event_json_region(const memacct_event *ev, const char *region, uint32_t pid, uint32_t uid) {
        return event_json(ev, region, pid, uid);
}

int print_event(const memacct_event *ev, uint32_t pid, uint32_t uid, bool json) {
        char now[40];

        if (json)
                return event_json(ev, NULL, pid, uid);
        format_now(now);
        if (pid != 0)
                printf("%s %s %s %" PRIu64 " by pid %" PRIu32 " uid %" PRIu32 "\n", now, ev->path, ev->name,
                       ev->count, pid, uid);
        else
                printf("%s %s %s %" PRIu64 "\n", now, ev->path, ev->name, ev->count);
        fflush(stdout);
        return 0;
}
