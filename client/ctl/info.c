/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl info and sessions. Each connects on its own, as run and
 * top do, once its arguments are known good; the formats are a user
 * interface (memacctctl(1)), the text form one "key: value" per line as
 * redis-cli INFO prints, the JSON form the same keys.
 */

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "options.h"
#include "output.h"
#include "info.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_server_info *, memacct_server_info_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_sessions *, memacct_sessions_free);

static int connect_daemon(const char *verb, memacct **mp) {
        const char *why;
        int r;

        if (*mp)
                return 0;
        r = options_connect(mp);
        if (r >= 0)
                return 0;
        why = memacct_last_error(NULL);
        fprintf(stderr, "memacctctl: %s: cannot reach memacctd%s: %s\n", verb, arg.bus ? " on the bus" : "",
                why ? why : strerror(-r));
        return EXIT_FAILURE;
}

/* @usec since the epoch as ISO 8601 UTC, "-" for 0. Return: @buf. */
static const char *format_time(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (usec == 0 || !gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return strcpy(buf, "-");
        return buf;
}

static int print_info(const memacct_server_info *i, bool json) {
        char when[32];

        if (json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o) {
                        fputs("memacctctl: out of memory\n", stderr);
                        return EXIT_FAILURE;
                }
                json_object_object_add(o, "version", json_object_new_string(i->version));
                json_object_object_add(o, "uptime_usec", json_object_new_uint64(i->uptime_usec));
                json_object_object_add(o, "requests", json_object_new_uint64(i->requests));
                json_object_object_add(o, "sessions", json_object_new_uint64(i->sessions));
                json_object_object_add(o, "groups", json_object_new_uint64(i->groups));
                json_object_object_add(o, "state", json_object_new_string(i->state));
                json_object_object_add(o, "state_cause", json_object_new_string(i->state_cause));
                json_object_object_add(o, "saves", json_object_new_uint64(i->saves));
                json_object_object_add(o, "last_save_usec", json_object_new_uint64(i->last_save_usec));
                puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                return 0;
        }
        printf("version: %s\n", i->version);
        printf("uptime_seconds: %" PRIu64 "\n", i->uptime_usec / 1000000);
        printf("requests: %" PRIu64 "\n", i->requests);
        printf("sessions: %" PRIu32 "\n", i->sessions);
        printf("groups: %" PRIu32 "\n", i->groups);
        printf("state: %s\n", i->state);
        if (*i->state_cause)
                printf("state_cause: %s\n", i->state_cause);
        printf("saves: %" PRIu64 "\n", i->saves);
        printf("last_save: %s\n", format_time(i->last_save_usec, when));
        return 0;
}

int info_main(memacct **mp, int argc, char **argv) {
        _cleanup_(memacct_server_info_freep) memacct_server_info *info = NULL;
        int r;

        (void) argc;
        (void) argv;
        r = connect_daemon("info", mp);
        if (r != 0)
                return r;
        r = memacct_get_info(*mp, &info);
        if (r < 0)
                return fail(*mp, "info", "memacctd", r);
        return print_info(info, arg.json);
}

/*
 * @s as one key=value token: a process names itself, so a byte that would
 * split the line or the field (blanks, '=', '\\', control and non-ASCII
 * bytes) is written \\xNN.
 */
static void print_token(const char *s) {
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;

                if (c <= ' ' || c >= 0x7f || c == '=' || c == '\\')
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
}

static int print_sessions_list(const memacct_sessions *l, bool json) {
        size_t n = memacct_sessions_size(l);

        if (json) {
                _cleanup_(json_object_putp) json_object *a = json_object_new_array();

                for (size_t i = 0; a && i < n; i++) {
                        const memacct_session_info *s = memacct_sessions_get(l, i);
                        json_object *o = json_object_new_object();

                        if (!o)
                                break;
                        json_object_object_add(o, "pid", json_object_new_uint64(s->pid));
                        json_object_object_add(o, "uid", json_object_new_uint64(s->uid));
                        json_object_object_add(o, "comm", json_object_new_string(s->comm));
                        json_object_object_add(o, "transport", json_object_new_string(s->transport));
                        json_object_object_add(o, "group", json_object_new_string(s->group));
                        json_object_object_add(o, "bytes", json_object_new_uint64(s->bytes));
                        json_object_object_add(o, "stock", json_object_new_uint64(s->stock));
                        if (s->reclaimable) {
                                json_object_object_add(o, "reclaim_asked", json_object_new_uint64(s->reclaim_asked));
                                json_object_object_add(o, "reclaim_released",
                                                       json_object_new_uint64(s->reclaim_released));
                                json_object_object_add(o, "reclaim_late", json_object_new_uint64(s->reclaim_late));
                        }
                        json_object_array_add(a, o);
                }
                if (!a) {
                        fputs("memacctctl: out of memory\n", stderr);
                        return EXIT_FAILURE;
                }
                puts(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                const memacct_session_info *s = memacct_sessions_get(l, i);

                printf("pid=%" PRIu32 " uid=%" PRIu32 " comm=", s->pid, s->uid);
                print_token(s->comm);
                printf(" transport=%s group=", s->transport);
                print_token(s->group);
                printf(" bytes=%" PRIu64 " stock=%" PRIu64, s->bytes, s->stock);
                /* The kernel-style "asked N, released M, late K" of a reclaimable session. */
                if (s->reclaimable)
                        printf(" reclaim_asked=%" PRIu64 " reclaim_released=%" PRIu64 " reclaim_late=%" PRIu64,
                               s->reclaim_asked, s->reclaim_released, s->reclaim_late);
                putchar('\n');
        }
        return 0;
}

int info_sessions_main(memacct **mp, int argc, char **argv) {
        _cleanup_(memacct_sessions_freep) memacct_sessions *l = NULL;
        const char *path = argc > 1 ? argv[1] : NULL;
        int r;

        if (path && path[0] != '/')
                return usage_error("sessions: a group path begins with '/', got '%s'", path);
        r = connect_daemon("sessions", mp);
        if (r != 0)
                return r;
        r = memacct_list_sessions(*mp, path, &l);
        if (r < 0)
                return fail(*mp, "sessions", path ? path : "/", r);
        return print_sessions_list(l, arg.json);
}
