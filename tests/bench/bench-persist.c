/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Persistence benchmark: the daemon's state save and load of many groups,
 * through the functions the daemon calls (state/persist.h): the saver
 * thread's whole save is persist_save(), the start's load
 * persist_restore().
 *
 * It builds a core of --groups N groups (1000 below "/", the rest spread
 * evenly below those; every 10th with a max, every 100th holding a kept
 * charge, so that the lines are not all alike), then times
 *
 *   persist_format   the state text in memory (what a save formats)
 *   persist_save     the whole save into --dir (--sync: with the fsyncs,
 *                    as the daemon with sync = yes)
 *   persist_restore  the load of that state into a fresh core
 *
 * and checks the restored core: the same number of groups, and a sample
 * of groups with their max and kept usage. Output, one line each:
 *
 *   <name> <groups> <ns> [size=<bytes>] [verify=ok|FAIL...]
 *
 * --keep leaves the state in --dir (run-all.sh then starts the daemon on
 * it, to time the load and the save as the daemon does them); without,
 * the files it wrote are removed.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/charge.h"
#include "core/core.h"
#include "core/group.h"
#include "base/log.h"
#include "state/persist.h"

#define TOP 1000u
#define PAGE 4096u
#define MAX_OF(i) ((uint64_t) (i + 1) << 20)

static const char *arg_dir;
static unsigned arg_groups = 1000000;
static bool arg_sync;
static bool arg_keep;

static _Noreturn void die(const char *what, int r) {
        fprintf(stderr, "bench-persist: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(EXIT_FAILURE);
}

static void check(const char *what, int r) {
        if (r < 0)
                die(what, r);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static MemCore *core_make(void) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core;

        cfg.max_groups = arg_groups + 16;
        check("core_new", core_new(&cfg, &core));
        check("core_thread_register", core_thread_register(core));
        return core;
}

/* As bench-core's core_done(): registered until the core is gone. */
static void core_done(MemCore *core) {
        core_free(core);
        core_thread_unregister(core);
}

/* The @i-th group's path (0-based, in creation order, parents first). */
static void path_of(unsigned i, char *buf, size_t size) {
        unsigned per = arg_groups / TOP; /* the top-level group and its children */

        if (i % per == 0)
                snprintf(buf, size, "/g%u", i / per);
        else
                snprintf(buf, size, "/g%u/c%u", i / per, i % per - 1);
}

static void build(MemCore *core) {
        unsigned n = arg_groups / TOP * TOP;
        char path[64];

        for (unsigned i = 0; i < n; i++) {
                path_of(i, path, sizeof(path));
                check(path, group_create(core, path, 0));
                if (i % 10 == 0 || i % 100 == 1) {
                        MemGroup *g;

                        check(path, group_get(core, path, &g));
                        if (i % 10 == 0)
                                check("group_set_max", group_set_max(g, MAX_OF(i), false));
                        if (i % 100 == 1)
                                check("group_charge_kept",
                                      group_charge_kept(core, g, PAGE, MEM_STAT_OTHER, 0, NULL));
                        group_unref(g);
                }
        }
}

/* A sample of the groups build() made, as it made them. */
static int verify(MemCore *core, unsigned n) {
        unsigned have = core_group_count(core);
        char path[64];

        /* The root is counted, or not: either way every other is there. */
        if (have != n && have != n + 1) {
                printf(" verify=FAIL:groups=%u", have);
                return -1;
        }
        core_stats_flush(core, true);
        for (unsigned i = 0; i < n; i += 997) {
                MemGroupInfo v;
                MemGroup *g;

                path_of(i, path, sizeof(path));
                if (group_get(core, path, &g) < 0) {
                        printf(" verify=FAIL:missing=%s", path);
                        return -1;
                }
                /* Not exact: that would flush every group per read. */
                group_read(core, g, NULL, false, &v);
                group_unref(g);
                if ((i % 10 == 0 && v.max != MAX_OF(i)) ||
                    (i % 100 == 1 && (v.current != PAGE || v.kept[MEM_STAT_OTHER] != PAGE))) {
                        printf(" verify=FAIL:%s", path);
                        return -1;
                }
        }
        printf(" verify=ok");
        return 0;
}

static void help(void) {
        printf("Usage: bench-persist --dir DIR [--groups N] [--sync] [--keep]\n\n"
               "Times persist_format, persist_save and persist_restore of N groups\n"
               "(default 1000000, at least 2000) in DIR; --sync fsyncs as sync = yes;\n"
               "--keep leaves the state in DIR.\n");
}

static void parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "dir", required_argument, NULL, 'd' },
                { "groups", required_argument, NULL, 'g' },
                { "sync", no_argument, NULL, 's' },
                { "keep", no_argument, NULL, 'k' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "d:g:skh", options, NULL)) >= 0)
                switch (c) {
                case 'd':
                        arg_dir = optarg;
                        break;
                case 'g': {
                        char *end;
                        unsigned long v = strtoul(optarg, &end, 10);

                        if (end == optarg || *end || v < 2 * TOP || v > (1u << 24))
                                die("--groups", -EINVAL);
                        arg_groups = (unsigned) v;
                        break;
                }
                case 's':
                        arg_sync = true;
                        break;
                case 'k':
                        arg_keep = true;
                        break;
                case 'h':
                        help();
                        exit(EXIT_SUCCESS);
                default:
                        exit(EXIT_FAILURE);
                }
        if (!arg_dir || optind < argc)
                die(optind < argc ? argv[optind] : "--dir is needed", -EINVAL);
}

static void remove_files(void) {
        static const char *const names[] = { PERSIST_STATE, PERSIST_STATE_OLD, PERSIST_JOURNAL,
                                             "state.tmp" };
        char path[4096];

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", arg_dir, names[i]);
                (void) unlink(path);
        }
}

int main(int argc, char *argv[]) {
        unsigned n;
        MemCore *core;
        const char *step = NULL;
        char *text;
        size_t size;
        uint64_t t0;
        int r;

        parse_argv(argc, argv);
        /* The restore says what it found, at info level: not timed noise. */
        log_set_max_level(LOG_WARNING);
        n = arg_groups / TOP * TOP;

        core = core_make();
        build(core);

        t0 = now_ns();
        check("persist_format", persist_format(core, &text, &size));
        printf("persist_format %u %" PRIu64 " size=%zu\n", n, now_ns() - t0, size);
        free(text);
        fflush(stdout);

        t0 = now_ns();
        r = persist_save(core, arg_dir, -1, arg_sync, &size, &step);
        if (r < 0)
                die(step ? step : "persist_save", r);
        printf("persist_save %u %" PRIu64 " size=%zu sync=%s\n", n, now_ns() - t0, size,
               arg_sync ? "yes" : "no");
        fflush(stdout);
        core_done(core);

        core = core_make();
        t0 = now_ns();
        check("persist_restore", persist_restore(core, arg_dir));
        printf("persist_restore %u %" PRIu64, n, now_ns() - t0);
        r = verify(core, n);
        printf("\n");
        fflush(stdout);
        core_done(core);

        if (!arg_keep)
                remove_files();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
