/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the bus says of changes made over the socket: the signals of
 * org.memacct1 as a watcher on the bus receives them (every signal the
 * daemon sends, one match on its name), for the same sequence of changes
 * made once through a libmemacct socket handle and once through a bus
 * handle, each on a tree of its own.
 *
 * Run by test-signals.sh against its daemon on a private system bus:
 * $MEMACCT_BUS_ADDRESS, $MEMACCT_SOCKET; $MEMACCT_DAEMON_PID,
 * $MEMACCT_DAEMON_CONF and $MEMACCT_DAEMON_LOG to reload it with another
 * [access] read. What it checks:
 * - a group created with limits: InterfacesAdded for its object
 *   (/org/memacct1/group/<sd_bus_path_encode of the path>) carrying
 *   org.memacct1.Group with its Path and MemoryMax, then
 *   PropertiesChanged naming the limits it was given;
 * - limits set: PropertiesChanged naming exactly the limits set, with
 *   their new values, and a Get of MemoryMax that returns the new value;
 * - a group removed: InterfacesRemoved;
 * - a charge a max refused: Event(path, "max", count);
 * - a refused operation, and a charge that succeeds: nothing;
 * - the socket's list and the bus's are the same, once the tree's name
 *   is written /T;
 * - with [access] read = owner, nothing with group data is broadcast,
 *   whichever transport made the change; with read = all again, the
 *   watcher hears the daemon again (so it was listening all along).
 *
 * Every step is closed by a marker: a MemoryHigh set on /mark over the
 * same handle. The daemon emits its signals in the order of the changes,
 * from one queue, so once the watcher has the marker's PropertiesChanged
 * it has every signal of the step before it, and a step that emitted
 * nothing is seen to have emitted nothing, without sleeping.
 */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include <memacct.h>

#include "bus-test-util.h"

#define MARK "/mark"
#define MAX_LINES 4096

/* ---- the watcher ---- */

typedef struct Watcher {
        sd_bus *bus;
        sd_bus_slot *slot;
        char *lines[MAX_LINES];
        size_t n;     /* lines received */
        size_t taken; /* lines handed out by take_step() */
        char *mark_object;
        unsigned mark; /* the last marker set */
} Watcher;

static void append_value(FILE *f, sd_bus_message *msg) {
        const char *contents = NULL;
        char type;
        uint64_t t;
        const char *str;

        if (sd_bus_message_peek_type(msg, &type, &contents) <= 0 || type != 'v') {
                fputs("?", f);
                return;
        }
        if (strcmp(contents, "t") == 0 && sd_bus_message_read(msg, "v", "t", &t) > 0)
                fprintf(f, "%" PRIu64, t);
        else if (strcmp(contents, "s") == 0 && sd_bus_message_read(msg, "v", "s", &str) > 0)
                fprintf(f, "\"%s\"", str);
        else {
                fprintf(f, "(%s)", contents);
                (void) sd_bus_message_skip(msg, "v");
        }
}

/* An a{sv} of @iface, its members named in @keep (NULL: all) as NAME=VALUE. */
static void append_properties(FILE *f, sd_bus_message *msg, const char *const *keep) {
        const char *name;

        if (sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
                return;
        while (sd_bus_message_enter_container(msg, 'e', "sv") > 0) {
                bool wanted = !keep;

                if (sd_bus_message_read(msg, "s", &name) <= 0)
                        break;
                for (size_t i = 0; keep && keep[i]; i++)
                        wanted = wanted || strcmp(keep[i], name) == 0;
                if (wanted) {
                        fprintf(f, " %s=", name);
                        append_value(f, msg);
                } else
                        (void) sd_bus_message_skip(msg, "v");
                (void) sd_bus_message_exit_container(msg);
        }
        (void) sd_bus_message_exit_container(msg);
}

/* Every signal of org.memacct1, as one line of text. */
static int on_signal(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        static const char *const group_props[] = { "Path",       "MemoryMax", "MemoryHigh", "MemoryLow",
                                                   "MemoryMin",  "MemoryCurrent", NULL };
        Watcher *w = userdata;
        const char *member = sd_bus_message_get_member(msg), *iface = sd_bus_message_get_interface(msg);
        const char *path = sd_bus_message_get_path(msg), *s1, *s2;
        char *line = NULL;
        size_t size = 0;
        uint32_t pid, uid;
        uint64_t t;
        FILE *f;

        (void) error;
        f = open_memstream(&line, &size);
        if (!f)
                return -ENOMEM;
        if (strcmp(iface, "org.memacct1.Manager") == 0 && strcmp(member, "Event") == 0 &&
            sd_bus_message_read(msg, "sst", &s1, &s2, &t) > 0)
                fprintf(f, "Event %s %s %" PRIu64, s1, s2, t);
        else if (strcmp(iface, "org.memacct1.Manager") == 0 && strcmp(member, "EventBy") == 0 &&
                 sd_bus_message_read(msg, "sstuu", &s1, &s2, &t, &pid, &uid) > 0) {
                /* The changes are made by this process: its pid, its uid. */
                fprintf(f, "EventBy %s %s %" PRIu64 " by ", s1, s2, t);
                if (pid == (uint32_t) getpid() && uid == (uint32_t) geteuid())
                        fputs("this process", f);
                else
                        fprintf(f, "pid %" PRIu32 " uid %" PRIu32, pid, uid);
        }
        else if (strcmp(member, "InterfacesAdded") == 0 && sd_bus_message_read(msg, "o", &s1) > 0) {
                fprintf(f, "InterfacesAdded %s", s1);
                if (sd_bus_message_enter_container(msg, 'a', "{sa{sv}}") > 0) {
                        while (sd_bus_message_enter_container(msg, 'e', "sa{sv}") > 0) {
                                if (sd_bus_message_read(msg, "s", &s2) <= 0)
                                        break;
                                if (strcmp(s2, GROUP_IFACE) == 0) {
                                        fprintf(f, " %s:", s2);
                                        append_properties(f, msg, group_props);
                                } else
                                        (void) sd_bus_message_skip(msg, "a{sv}");
                                (void) sd_bus_message_exit_container(msg);
                        }
                }
        } else if (strcmp(member, "InterfacesRemoved") == 0 && sd_bus_message_read(msg, "o", &s1) > 0) {
                fprintf(f, "InterfacesRemoved %s", s1);
                if (sd_bus_message_enter_container(msg, 'a', "s") > 0) {
                        while (sd_bus_message_read(msg, "s", &s2) > 0)
                                fprintf(f, " %s", s2);
                }
        } else if (strcmp(member, "PropertiesChanged") == 0 && sd_bus_message_read(msg, "s", &s1) > 0) {
                fprintf(f, "PropertiesChanged %s %s changed:", path, s1);
                append_properties(f, msg, NULL);
                fputs(" invalidated:", f);
                if (sd_bus_message_enter_container(msg, 'a', "s") > 0) {
                        while (sd_bus_message_read(msg, "s", &s2) > 0)
                                fprintf(f, " %s", s2);
                }
        } else
                fprintf(f, "%s %s.%s", path, iface, member);
        fclose(f);
        if (w->n < MAX_LINES)
                w->lines[w->n++] = line;
        else
                free(line);
        return 0;
}

static void watcher_open(Watcher *w) {
        *w = (Watcher) {};
        w->bus = sdbus_open();
        /* Synchronous: the bus daemon has the match when this returns. */
        assert_true(sd_bus_match_signal(w->bus, &w->slot, DEST, NULL, NULL, NULL, on_signal, w) >= 0);
        w->mark_object = object_of(MARK);
}

static void watcher_close(Watcher *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->lines[i]);
        sd_bus_slot_unref(w->slot);
        sd_bus_flush_close_unref(w->bus);
        free(w->mark_object);
}

/* Process the watcher's connection for up to @msec, or until @n lines are in. */
static void watcher_pump(Watcher *w, size_t n, unsigned msec) {
        uint64_t deadline = now_msec() + msec;

        while (w->n < n && now_msec() < deadline) {
                int r = sd_bus_process(w->bus, NULL);

                assert_true(r >= 0);
                if (r == 0)
                        (void) sd_bus_wait(w->bus, 50 * 1000);
        }
}

/* Is @line the PropertiesChanged of marker @mark? */
static bool is_mark(const Watcher *w, const char *line, unsigned mark) {
        char want[512];

        snprintf(want, sizeof(want), "PropertiesChanged %s " GROUP_IFACE " changed: MemoryHigh=%u invalidated:",
                 w->mark_object, mark);
        return strcmp(line, want) == 0;
}

/*
 * Set the next marker over @m and wait for it: the lines before it (since
 * the last step) are the step's, in @out (a newline after each, the
 * tree's name written /T). Return: whether the marker came.
 */
static bool take_step(Watcher *w, memacct *m, const char *tree, char **out) {
        memacct_limits l = { .set = MEMACCT_LIMIT_HIGH, .high = ++w->mark };
        uint64_t deadline = now_msec() + WAIT_MSEC;
        char *buf = NULL, *enc, tobj[256];
        size_t size = 0;
        FILE *f;

        assert_int_equal(memacct_set_limits(m, MARK, &l, 0), 0);
        for (;;) {
                for (size_t i = w->taken; i < w->n; i++) {
                        if (!is_mark(w, w->lines[i], w->mark))
                                continue;
                        f = open_memstream(&buf, &size);
                        assert_non_null(f);
                        enc = object_of(tree);
                        snprintf(tobj, sizeof(tobj), "%s", enc);
                        free(enc);
                        for (size_t j = w->taken; j < i; j++) {
                                /* The object path first (it contains the encoded tree name),
                                 * then the group path. */
                                const char *p = w->lines[j];

                                while (*p) {
                                        if (strncmp(p, tobj, strlen(tobj)) == 0) {
                                                fputs(GROUP_PREFIX "/_2fT", f);
                                                p += strlen(tobj);
                                        } else if (strncmp(p, tree, strlen(tree)) == 0 &&
                                                   (p[strlen(tree)] == '/' || p[strlen(tree)] == ' ' ||
                                                    p[strlen(tree)] == '"' || p[strlen(tree)] == 0)) {
                                                fputs("/T", f);
                                                p += strlen(tree);
                                        } else
                                                fputc(*p++, f);
                                }
                                fputc('\n', f);
                        }
                        fclose(f);
                        w->taken = i + 1;
                        *out = buf;
                        return true;
                }
                if (now_msec() > deadline)
                        break;
                watcher_pump(w, w->n + 1, 100);
        }
        *out = strdup("(the marker did not come)\n");
        return false;
}

/* ---- the sequence ---- */

typedef struct Record {
        char *steps[32];
        const char *names[32];
        size_t n;
} Record;

static void record_step(Record *rec, Watcher *w, memacct *m, const char *tree, const char *name) {
        char *out = NULL;

        assert_true(rec->n < 32);
        if (!take_step(w, m, tree, &out))
                fprintf(stderr, "%s: the marker did not come\n", name);
        rec->names[rec->n] = name;
        rec->steps[rec->n++] = out;
}

static void record_free(Record *rec) {
        for (size_t i = 0; i < rec->n; i++)
                free(rec->steps[i]);
}

static const char *step_of(const Record *rec, const char *name) {
        for (size_t i = 0; i < rec->n; i++)
                if (strcmp(rec->names[i], name) == 0)
                        return rec->steps[i];
        return "(no such step)";
}

static char *path_in(const char *tree, const char *suffix) {
        char *p = NULL;

        assert_true(asprintf(&p, "%s%s", tree, suffix) > 0);
        return p;
}

/* The changes, one step each, made through @m on @tree; @w watching. */
static void run_sequence(Watcher *w, memacct *m, const char *tree, Record *rec) {
        memacct_limits top = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH, .max = 1024 * K, .high = 512 * K };
        memacct_limits two = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_LOW, .max = 64 * K, .low = 16 * K };
        memacct_limits min = { .set = MEMACCT_LIMIT_MIN, .min = 8 * K };
        memacct_limits all = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH | MEMACCT_LIMIT_LOW |
                                      MEMACCT_LIMIT_MIN,
                               .max = 32 * K, .high = 24 * K, .low = 4 * K, .min = 2 * K };
        memacct_limits tiny = { .set = MEMACCT_LIMIT_MAX, .max = 1 * K };
        memacct_limits none = { .set = 0 };
        char *t = path_in(tree, ""), *a = path_in(tree, "/a"), *b = path_in(tree, "/b");
        char *nope = path_in(tree, "/nope"), *deep = path_in(tree, "/nope/x");
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char *object = object_of(a);
        uint64_t v = 0;

        assert_int_equal(memacct_create_group(m, t, &top, MEMACCT_NO_OWNER), 0);
        record_step(rec, w, m, tree, "create with limits");
        assert_int_equal(memacct_create_group(m, a, NULL, MEMACCT_NO_OWNER), 0);
        record_step(rec, w, m, tree, "create without limits");
        assert_int_equal(memacct_create_group(m, b, &all, MEMACCT_NO_OWNER), 0);
        record_step(rec, w, m, tree, "create with every limit");

        assert_int_equal(memacct_set_limits(m, a, &two, 0), 0);
        record_step(rec, w, m, tree, "set max and low");
        /* The new value, read back over the bus. */
        assert_true(sd_bus_get_property_trivial(w->bus, DEST, object, GROUP_IFACE, "MemoryMax", &e, 't', &v) >=
                    0);
        assert_int_equal(v, 64 * K);
        assert_int_equal(memacct_set_limits(m, a, &min, 0), 0);
        record_step(rec, w, m, tree, "set min");
        assert_int_equal(memacct_set_limits(m, a, &none, 0), 0);
        record_step(rec, w, m, tree, "set nothing");

        /* Refused: nothing changes, nothing is said. */
        assert_int_equal(memacct_create_group(m, t, &top, MEMACCT_NO_OWNER), -EEXIST);
        assert_int_equal(memacct_create_group(m, deep, &top, MEMACCT_NO_OWNER), -ENOENT);
        assert_int_equal(memacct_set_limits(m, nope, &two, 0), -ENOENT);
        assert_int_equal(memacct_remove_group(m, t), -EBUSY);
        assert_int_equal(memacct_remove_group(m, nope), -ENOENT);
        assert_int_equal(memacct_charge(m, a, 8 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(memacct_set_limits(m, a, &tiny, 0), -EBUSY);
        record_step(rec, w, m, tree, "refusals, and a charge within the max");

        /* A charge the max refuses: the Event signal. */
        assert_int_equal(memacct_charge(m, a, 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        record_step(rec, w, m, tree, "a refused charge");
        assert_int_equal(memacct_charge(m, a, 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        record_step(rec, w, m, tree, "another refused charge");
        assert_int_equal(memacct_uncharge(m, a, 8 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        /* Forced below usage: nothing held any more, but force is a flag like any. */
        assert_int_equal(memacct_set_limits(m, a, &tiny, MEMACCT_FORCE), 0);
        record_step(rec, w, m, tree, "an uncharge, then a forced max");

        assert_int_equal(memacct_remove_group(m, a), 0);
        record_step(rec, w, m, tree, "remove");
        assert_int_equal(memacct_remove_group(m, b), 0);
        assert_int_equal(memacct_remove_group(m, t), 0);
        record_step(rec, w, m, tree, "remove two");

        sd_bus_error_free(&e);
        free(object);
        free(t);
        free(a);
        free(b);
        free(nope);
        free(deep);
}

static void ensure_mark(void) {
        memacct *m = sock_open();
        int r = memacct_create_group(m, MARK, NULL, MEMACCT_NO_OWNER);

        assert_true(r == 0 || r == -EEXIST);
        memacct_close(m);
}

static void assert_step(const Record *rec, const char *name, const char *want) {
        const char *got = step_of(rec, name);

        if (strcmp(got, want) != 0) {
                fprintf(stderr, "%s: the signals were\n%s-- want\n%s", name, got, want);
                fail();
        }
}

static void test_socket_changes_are_signalled_as_bus_changes(void **state) {
        Watcher w;
        Record rs = {}, rb = {};
        memacct *s, *b;
        bool same = true;

        (void) state;
        ensure_mark();
        watcher_open(&w);
        s = sock_open();
        b = bus_open();
        /* A change made over the socket is signalled a moment after its
         * reply (the bus thread sends it): the marker's own creation may
         * arrive now. One step first, read and dropped, starts the record
         * from a known point. */
        {
                char *before = NULL;

                assert_true(take_step(&w, s, "/ss", &before));
                free(before);
        }
        run_sequence(&w, s, "/ss", &rs);
        run_sequence(&w, b, "/sb", &rb);

        for (size_t i = 0; i < rs.n; i++)
                fprintf(stderr, "# %s (socket):\n%s", rs.names[i], rs.steps[i]);
        assert_int_equal(rs.n, rb.n);
        for (size_t i = 0; i < rs.n; i++)
                if (strcmp(rs.steps[i], rb.steps[i]) != 0) {
                        fprintf(stderr, "%s: over the socket\n%s-- over the bus\n%s", rs.names[i], rs.steps[i],
                                rb.steps[i]);
                        same = false;
                }
        assert_true(same);

        /* What the socket's changes said, to the letter (the bus's are the same). */
        assert_step(&rs, "create with limits",
                    "InterfacesAdded " GROUP_PREFIX "/_2fT " GROUP_IFACE ": Path=\"/T\" MemoryCurrent=0 "
                    "MemoryMax=1048576 MemoryHigh=524288 MemoryLow=0 MemoryMin=0\n"
                    "PropertiesChanged " GROUP_PREFIX "/_2fT " GROUP_IFACE
                    " changed: MemoryMax=1048576 MemoryHigh=524288 invalidated:\n");
        assert_step(&rs, "create without limits",
                    "InterfacesAdded " GROUP_PREFIX "/_2fT_2fa " GROUP_IFACE ": Path=\"/T/a\" MemoryCurrent=0 "
                    "MemoryMax=18446744073709551615 MemoryHigh=18446744073709551615 MemoryLow=0 MemoryMin=0\n");
        assert_step(&rs, "create with every limit",
                    "InterfacesAdded " GROUP_PREFIX "/_2fT_2fb " GROUP_IFACE ": Path=\"/T/b\" MemoryCurrent=0 "
                    "MemoryMax=32768 MemoryHigh=24576 MemoryLow=4096 MemoryMin=2048\n"
                    "PropertiesChanged " GROUP_PREFIX "/_2fT_2fb " GROUP_IFACE
                    " changed: MemoryMax=32768 MemoryHigh=24576 MemoryLow=4096 MemoryMin=2048 invalidated:\n");
        assert_step(&rs, "set max and low",
                    "PropertiesChanged " GROUP_PREFIX "/_2fT_2fa " GROUP_IFACE
                    " changed: MemoryMax=65536 MemoryLow=16384 invalidated:\n");
        assert_step(&rs, "set min",
                    "PropertiesChanged " GROUP_PREFIX "/_2fT_2fa " GROUP_IFACE
                    " changed: MemoryMin=8192 invalidated:\n");
        assert_step(&rs, "set nothing", "");
        assert_step(&rs, "refusals, and a charge within the max", "");
        assert_step(&rs, "a refused charge",
                    "Event /T/a max 1\nEventBy /T/a max 1 by this process\n"
                    "Event /T/a oom 1\nEventBy /T/a oom 1 by this process\n");
        assert_step(&rs, "another refused charge",
                    "Event /T/a max 2\nEventBy /T/a max 2 by this process\n"
                    "Event /T/a oom 2\nEventBy /T/a oom 2 by this process\n");
        assert_step(&rs, "an uncharge, then a forced max",
                    "PropertiesChanged " GROUP_PREFIX "/_2fT_2fa " GROUP_IFACE
                    " changed: MemoryMax=1024 invalidated:\n");
        assert_step(&rs, "remove", "InterfacesRemoved " GROUP_PREFIX "/_2fT_2fa " GROUP_IFACE "\n");
        assert_step(&rs, "remove two",
                    "InterfacesRemoved " GROUP_PREFIX "/_2fT_2fb " GROUP_IFACE "\n"
                    "InterfacesRemoved " GROUP_PREFIX "/_2fT " GROUP_IFACE "\n");

        record_free(&rs);
        record_free(&rb);
        memacct_close(s);
        memacct_close(b);
        watcher_close(&w);
}

/* ---- read = owner: no group data on the bus ---- */

static unsigned reloads(const char *log) {
        FILE *f = fopen(log, "re");
        char line[1024];
        unsigned n = 0;

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                n += strstr(line, "Configuration reloaded") != NULL;
        fclose(f);
        return n;
}

/* Write @conf as the daemon's configuration and reload it (SIGHUP); wait for the log to say so. */
static void reload(const char *conf) {
        const char *pid_env = getenv("MEMACCT_DAEMON_PID"), *path = getenv("MEMACCT_DAEMON_CONF");
        const char *log = getenv("MEMACCT_DAEMON_LOG");
        uint64_t deadline = now_msec() + WAIT_MSEC;
        unsigned before;
        FILE *f;

        assert_non_null(pid_env);
        assert_non_null(path);
        assert_non_null(log);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(conf, f);
        assert_int_equal(fclose(f), 0);
        before = reloads(log);
        assert_int_equal(kill((pid_t) atoi(pid_env), SIGHUP), 0);
        while (reloads(log) == before && now_msec() < deadline)
                sleep_msec(20);
        assert_true(reloads(log) > before);
}

static void test_restricted_reads_broadcast_nothing(void **state) {
        memacct_limits top = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH, .max = 64 * K, .high = 32 * K };
        memacct_limits low = { .set = MEMACCT_LIMIT_LOW, .low = 8 * K };
        memacct *s, *b;
        char *out = NULL;
        size_t n0;
        Watcher w;

        (void) state;
        if (!getenv("MEMACCT_DAEMON_PID")) {
                fprintf(stderr, "SKIP: no MEMACCT_DAEMON_PID: cannot reload the daemon\n");
                skip();
        }
        ensure_mark();
        watcher_open(&w);
        s = sock_open();
        b = bus_open();
        /* From a known point, as above: the lines so far are not this test's. */
        {
                char *before = NULL;

                assert_true(take_step(&w, s, "/rs", &before));
                free(before);
        }
        n0 = w.n;
        reload("[access]\nread = owner\n");

        for (int i = 0; i < 2; i++) {
                memacct *m = i ? b : s;
                const char *t = i ? "/rb" : "/rs", *a = i ? "/rb/a" : "/rs/a";

                assert_int_equal(memacct_create_group(m, t, &top, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_create_group(m, a, NULL, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_set_limits(m, a, &low, 0), 0);
                assert_int_equal(memacct_charge(m, t, 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
                assert_int_equal(memacct_set_limits(m, MARK, &low, 0), 0);
                assert_int_equal(memacct_remove_group(m, a), 0);
                assert_int_equal(memacct_remove_group(m, t), 0);
        }
        /* The signals are dropped when they would be sent: nothing to wait
         * for but the bus thread, which a bus call's reply follows. */
        watcher_pump(&w, n0 + 1, 1000);
        for (size_t i = n0; i < w.n; i++)
                fprintf(stderr, "broadcast with read = owner: %s\n", w.lines[i]);
        assert_int_equal(w.n, n0);

        /* Open again: the watcher hears the next change, and only it. */
        reload("[access]\nread = all\n");
        assert_true(take_step(&w, s, "/rs", &out));
        assert_string_equal(out, "");
        assert_int_equal(w.n, n0 + 1);
        free(out);

        memacct_close(s);
        memacct_close(b);
        watcher_close(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_socket_changes_are_signalled_as_bus_changes),
                cmocka_unit_test(test_restricted_reads_broadcast_nothing),
        };

        bus_address = getenv("MEMACCT_BUS_ADDRESS");
        socket_path = getenv("MEMACCT_SOCKET");
        if (!bus_address || !socket_path) {
                fprintf(stderr, "MEMACCT_BUS_ADDRESS and MEMACCT_SOCKET must be set (test-signals.sh does)\n");
                return 2;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
