/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state file: round trips into a fresh core, and every way a damaged
 * file is caught without losing the last good state. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/charge.h"
#include "core/core.h"
/* Built from the unit_tests table, which has the core on the include path, not daemon/. */
#include "state/persist.h"
#include "core/session.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

typedef struct Fixture {
        char dir[64];
        MemCore *core;
} Fixture;

/* A thread charges one core at a time (core_thread_register()); reading
 * another one needs only the RCU registration any core gives. */
static MemCore *current;

static void use(MemCore *core) {
        if (current == core)
                return;
        if (current)
                core_thread_unregister(current);
        assert_int_equal(core_thread_register(core), 0);
        current = core;
}

static MemCore *core_fresh(void) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core = NULL;

        assert_int_equal(core_new(&cc, &core), 0);
        use(core);
        return core;
}

static void core_gone(MemCore *core) {
        if (current == core) {
                core_thread_unregister(core);
                current = NULL;
        }
        core_free(core);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-persist-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->core = core_fresh();
        *state = f;
        return 0;
}

static int teardown(void **state) {
        static const char *const names[] = { "state", "state.old", "state.bad", "state.old.bad", "state.tmp",
                                             "state.old.tmp" };
        Fixture *f = *state;
        char path[128];

        if (f->core)
                core_gone(f->core);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", f->dir, names[i]);
                unlink(path);
        }
        rmdir(f->dir);
        free(f);
        return 0;
}

/* @name in the state directory. Two buffers in turn, so that one call's
 * result survives the next: rename(file_path(a), file_path(b)). */
static char *file_path(const Fixture *f, const char *name) {
        static char paths[2][128];
        static unsigned next;
        char *path = paths[next++ % 2];

        snprintf(path, sizeof(paths[0]), "%s/%s", f->dir, name);
        return path;
}

static bool file_exists(const Fixture *f, const char *name) {
        return access(file_path(f, name), F_OK) == 0;
}

static char *file_read(const Fixture *f, const char *name, size_t *ret_size) {
        FILE *fp = fopen(file_path(f, name), "rb");
        char *buf = malloc(1 << 20);
        size_t n;

        assert_non_null(fp);
        assert_non_null(buf);
        n = fread(buf, 1, (1 << 20) - 1, fp);
        fclose(fp);
        buf[n] = 0;
        if (ret_size)
                *ret_size = n;
        return buf;
}

static void file_write(const Fixture *f, const char *name, const char *data, size_t n) {
        FILE *fp = fopen(file_path(f, name), "wb");

        assert_non_null(fp);
        assert_int_equal(fwrite(data, 1, n, fp), n);
        fclose(fp);
}

static MemGroup *get(MemCore *core, const char *path) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        return g;
}

static void charge_kept(MemCore *core, const char *path, uint64_t bytes, MemStatItem item) {
        MemGroup *g = get(core, path);
        MemChargeResult res;

        assert_int_equal(group_charge_kept(core, g, bytes, item, 0, &res), 0);
        charge_result_done(&res);
        group_unref(g);
}

static void info(MemCore *core, const char *path, MemGroupInfo *ret) {
        MemGroup *g = get(core, path);

        group_read(core, g, NULL, true, ret);
        group_unref(g);
}

/* A small tree with limits, owners and kept charges of two items. */
static void build_tree(MemCore *core) {
        MemGroup *g;

        use(core);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 1000), 0);
        assert_int_equal(group_create(core, "/a/b/c", 1000), 0);
        assert_int_equal(group_create(core, "/z", 2000), 0);

        g = get(core, "/a");
        assert_int_equal(group_set_max(g, 64 * MIB, false), 0);
        group_set_high(g, 48 * MIB);
        group_set_low(g, 8 * MIB);
        group_set_min(g, 4 * MIB);
        group_unref(g);
        g = get(core, "/a/b");
        assert_int_equal(group_set_max(g, 16 * MIB, false), 0);
        group_unref(g);

        charge_kept(core, "/a/b/c", 3 * MIB, MEM_STAT_FILE);
        charge_kept(core, "/a/b/c", 512 * KIB, MEM_STAT_DEVICE);
        charge_kept(core, "/a", 4 * KIB, MEM_STAT_ANON);
        charge_kept(core, "/z", 12 * KIB, MEM_STAT_SHMEM);
}

static void assert_same_group(MemCore *a, MemCore *b, const char *path) {
        MemGroupInfo x, y;

        info(a, path, &x);
        info(b, path, &y);
        assert_true(x.max == y.max);
        assert_true(x.high == y.high);
        assert_true(x.low == y.low);
        assert_true(x.min == y.min);
        assert_int_equal(x.owner, y.owner);
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                assert_true(x.kept[i] == y.kept[i]);
        assert_true(x.current == y.current);
        assert_int_equal(x.nr_children, y.nr_children);
}

static void test_round_trip_restores_groups_limits_owners_and_kept(void **state) {
        static const char *const paths[] = { "/", "/a", "/a/b", "/a/b/c", "/z" };
        Fixture *f = *state;
        MemCore *fresh;
        MemGroupInfo gi;

        build_tree(f->core);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        assert_true(file_exists(f, "state"));
        assert_false(file_exists(f, "state.tmp"));

        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_int_equal(core_group_count(fresh), core_group_count(f->core));
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
                assert_same_group(f->core, fresh, paths[i]);

        /* The numbers themselves, from the formulas. */
        info(fresh, "/a/b/c", &gi);
        assert_true(gi.kept[MEM_STAT_FILE] == 3 * MIB);
        assert_true(gi.kept[MEM_STAT_DEVICE] == 512 * KIB);
        assert_true(gi.current == 3 * MIB + 512 * KIB);
        assert_int_equal(gi.owner, 1000);
        info(fresh, "/a", &gi);
        assert_true(gi.current == 3 * MIB + 512 * KIB + 4 * KIB);
        assert_true(gi.max == 64 * MIB && gi.high == 48 * MIB && gi.low == 8 * MIB && gi.min == 4 * MIB);
        info(fresh, "/", &gi);
        assert_true(gi.current == 3 * MIB + 512 * KIB + 4 * KIB + 12 * KIB);
        assert_true(gi.max == UINT64_MAX);
        info(fresh, "/z", &gi);
        assert_int_equal(gi.owner, 2000);
        core_gone(fresh);
}

static bool is_transient(MemCore *core, const char *path) {
        MemGroup *g = get(core, path);
        bool t = atomic_load(&g->transient);

        group_unref(g);
        return t;
}

static void test_the_transient_mark_is_saved_and_restored(void **state) {
        Fixture *f = *state;
        MemCore *fresh;
        MemGroup *g;
        char *text = NULL;
        size_t n;

        build_tree(f->core);
        g = get(f->core, "/a/b/c");
        atomic_store(&g->transient, true);
        group_unref(g);
        assert_int_equal(persist_format(f->core, &text, &n), 0);
        /* On its group's line only. */
        assert_non_null(strstr(text, "group /a/b/c owner=1000"));
        assert_non_null(strstr(strstr(text, "group /a/b/c "), " transient=1\n"));
        assert_null(strstr(strstr(text, "transient=") + 1, "transient="));
        free(text);

        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_true(is_transient(fresh, "/a/b/c"));
        assert_false(is_transient(fresh, "/a/b"));
        assert_false(is_transient(fresh, "/z"));
        assert_same_group(f->core, fresh, "/a/b/c");
        core_gone(fresh);
}

static void test_session_charges_are_not_saved(void **state) {
        Fixture *f = *state;
        MemSession *s = NULL;
        MemGroup *g;
        MemCore *fresh;
        MemGroupInfo gi;

        build_tree(f->core);
        g = get(f->core, "/z");
        use(f->core);
        assert_int_equal(session_new(f->core, 42, 0, 0, &s), 0);
        assert_int_equal(session_attach(s, g), 0);
        assert_int_equal(session_charge(s, 1 * MIB, MEM_STAT_ANON, 0, NULL), 0);
        info(f->core, "/z", &gi);
        assert_true(gi.current == 1 * MIB + 12 * KIB);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        session_free(s);
        group_unref(g);

        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        info(fresh, "/z", &gi);
        assert_true(gi.current == 12 * KIB);
        assert_true(gi.kept[MEM_STAT_ANON] == 0);
        core_gone(fresh);
}

static void test_kept_charges_above_a_lowered_max_are_restored(void **state) {
        Fixture *f = *state;
        MemCore *fresh;
        MemGroup *g;
        MemGroupInfo gi;

        use(f->core);
        assert_int_equal(group_create(f->core, "/tight", 0), 0);
        charge_kept(f->core, "/tight", 1 * MIB, MEM_STAT_FILE);
        g = get(f->core, "/tight");
        /* A forced max below usage: the state now holds more than max. */
        assert_int_equal(group_set_max(g, 256 * KIB, true), 1);
        group_unref(g);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);

        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        info(fresh, "/tight", &gi);
        assert_true(gi.current == 1 * MIB);
        assert_true(gi.max == 256 * KIB);
        core_gone(fresh);
}

static void test_save_keeps_the_previous_state_as_old(void **state) {
        Fixture *f = *state;
        char *first, *old, *second;
        size_t n1, n2;

        build_tree(f->core);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        assert_false(file_exists(f, "state.old"));
        first = file_read(f, "state", &n1);

        use(f->core);
        assert_int_equal(group_create(f->core, "/later", 0), 0);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        old = file_read(f, "state.old", NULL);
        second = file_read(f, "state", &n2);
        assert_string_equal(old, first);
        assert_true(strstr(second, "group /later ") != NULL);
        assert_true(strstr(first, "group /later ") == NULL);
        assert_false(file_exists(f, "state.tmp"));
        assert_false(file_exists(f, "state.old.tmp"));

        /* Both are complete, valid files. */
        assert_int_equal(persist_check(first, n1, 32, 65536, NULL), 5);
        assert_int_equal(persist_check(second, n2, 32, 65536, NULL), 6);
        free(first);
        free(old);
        free(second);
}

static void test_truncated_state_falls_back_to_old(void **state) {
        Fixture *f = *state;
        MemCore *fresh;
        MemGroup *g;
        char *text;
        size_t n;

        build_tree(f->core);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0); /* the good one, soon state.old */
        use(f->core);
        assert_int_equal(group_create(f->core, "/lost", 0), 0);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);

        /* Cut the newest state in the middle, as a crash of the storage would. */
        text = file_read(f, "state", &n);
        file_write(f, "state", text, n / 2);

        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        /* The previous state is in force, the damaged file kept aside. */
        assert_int_equal(core_group_count(fresh), 5);
        assert_int_equal(group_get(fresh, "/lost", &g), -ENOENT);
        assert_same_group(f->core, fresh, "/a/b/c");
        assert_true(file_exists(f, "state.bad"));
        assert_false(file_exists(f, "state"));
        assert_true(file_exists(f, "state.old"));
        core_gone(fresh);

        /* The next save neither touches state.bad nor loses state.old. */
        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_int_equal(persist_save(fresh, f->dir, -1, true, NULL, NULL), 0);
        assert_true(file_exists(f, "state"));
        assert_true(file_exists(f, "state.old"));
        {
                size_t nb;
                char *bad = file_read(f, "state.bad", &nb);

                assert_int_equal(nb, n / 2);
                assert_memory_equal(bad, text, nb);
                free(bad);
        }
        core_gone(fresh);
        free(text);
}

static void test_garbage_without_old_starts_empty_and_keeps_it(void **state) {
        Fixture *f = *state;
        const char garbage[] = "\x7f" "ELF this is not a state file\n";
        MemCore *fresh;

        file_write(f, "state", garbage, sizeof(garbage) - 1);
        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_int_equal(core_group_count(fresh), 1);
        assert_true(file_exists(f, "state.bad"));
        assert_false(file_exists(f, "state"));
        core_gone(fresh);
}

/* A second damaged state never replaces the first: it gets a name of its own, with the time. */
static void test_damaged_states_are_never_overwritten(void **state) {
        Fixture *f = *state;
        const char first[] = "junk one\n", second[] = "junk two, longer\n";
        unsigned found = 0;
        struct dirent *e;
        MemCore *fresh;
        DIR *d;

        for (int round = 0; round < 3; round++) {
                file_write(f, "state", round == 0 ? first : second, round == 0 ? sizeof(first) - 1 : sizeof(second) - 1);
                fresh = core_fresh();
                assert_int_equal(persist_restore(fresh, f->dir), 0);
                core_gone(fresh);
        }
        {
                size_t nb;
                char *bad = file_read(f, "state.bad", &nb);

                assert_int_equal(nb, sizeof(first) - 1);
                assert_memory_equal(bad, first, nb);
                free(bad);
        }
        d = opendir(f->dir);
        assert_non_null(d);
        while ((e = readdir(d)))
                if (strncmp(e->d_name, "state.bad.", 10) == 0) {
                        found += strlen(e->d_name) >= 10 + 16; /* YYYYmmddTHHMMSSZ */
                        assert_int_equal(unlinkat(dirfd(d), e->d_name, 0), 0);
                }
        closedir(d);
        assert_int_equal(found, 2);
}

static void test_damaged_old_is_set_aside_too(void **state) {
        Fixture *f = *state;
        MemCore *fresh;

        file_write(f, "state", "junk\n", 5);
        file_write(f, "state.old", "memacctd-state 1\ngroup / owner=0", 32);
        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_int_equal(core_group_count(fresh), 1);
        assert_true(file_exists(f, "state.bad"));
        assert_true(file_exists(f, "state.old.bad"));
        core_gone(fresh);
}

static void test_missing_state_uses_old(void **state) {
        Fixture *f = *state;
        MemCore *fresh;

        build_tree(f->core);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        assert_int_equal(rename(file_path(f, "state"), file_path(f, "state.old")), 0);
        fresh = core_fresh();
        assert_int_equal(persist_restore(fresh, f->dir), 0);
        assert_int_equal(core_group_count(fresh), 5);
        core_gone(fresh);
}

static void test_no_state_is_an_empty_tree_and_creates_the_dir(void **state) {
        Fixture *f = *state;
        char sub[128];

        snprintf(sub, sizeof(sub), "%s/sub", f->dir);
        assert_int_equal(persist_restore(f->core, sub), 0);
        assert_int_equal(core_group_count(f->core), 1);
        {
                struct stat st;

                assert_int_equal(stat(sub, &st), 0);
                assert_true(S_ISDIR(st.st_mode));
                assert_int_equal(st.st_mode & 0777, 0700);
        }
        assert_int_equal(rmdir(sub), 0);
}

/* Every single-byte change and every truncation of a valid file is caught. */
static void test_check_catches_any_flipped_byte_or_cut(void **state) {
        Fixture *f = *state;
        char *text;
        size_t n;

        build_tree(f->core);
        assert_int_equal(persist_format(f->core, &text, &n), 0);
        assert_int_equal(persist_check(text, n, 32, 65536, NULL), 5);
        for (size_t i = 0; i < n; i++) {
                char *error = NULL;

                text[i] ^= 0x01;
                assert_int_equal(persist_check(text, n, 32, 65536, &error), -EBADMSG);
                assert_non_null(error);
                free(error);
                text[i] ^= 0x01;
        }
        for (size_t cut = 0; cut < n; cut++)
                assert_int_equal(persist_check(text, cut, 32, 65536, NULL), -EBADMSG);
        free(text);
}

static void test_check_refuses_what_does_not_fit_the_config(void **state) {
        Fixture *f = *state;
        char *text, *error = NULL;
        size_t n;

        build_tree(f->core);
        assert_int_equal(persist_format(f->core, &text, &n), 0);
        /* /a/b/c is three deep; five groups. */
        assert_int_equal(persist_check(text, n, 3, 5, NULL), 5);
        assert_int_equal(persist_check(text, n, 2, 65536, &error), -EMLINK);
        assert_non_null(strstr(error, "depth"));
        free(error);
        assert_int_equal(persist_check(text, n, 32, 4, &error), -ENOSPC);
        assert_non_null(strstr(error, "groups"));
        free(error);
        free(text);
}

static void test_restore_refuses_a_state_deeper_than_configured(void **state) {
        Fixture *f = *state;
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *shallow = NULL;

        build_tree(f->core);
        assert_int_equal(persist_save(f->core, f->dir, -1, true, NULL, NULL), 0);
        cc.max_depth = 2;
        assert_int_equal(core_new(&cc, &shallow), 0);
        use(shallow);
        assert_int_equal(persist_restore(shallow, f->dir), -EMLINK);
        /* Not damage: the file stays where it is, nothing is applied. */
        assert_true(file_exists(f, "state"));
        assert_false(file_exists(f, "state.bad"));
        assert_int_equal(core_group_count(shallow), 1);
        core_gone(shallow);
}

static void check_text(const char *text, int want) {
        char *error = NULL;
        int r = persist_check(text, strlen(text), 32, 65536, &error);

        if (r != want)
                fail_msg("expected %d, got %d (%s) from:\n%.2000s", want, r, error ? error : "", text);
        free(error);
}

/* @body framed as a state file (header, trailer with count and checksum), checked against @want. */
static void check_body(const char *body, int want) {
        size_t lines = 0, n, size = strlen(body) + 128;
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        char *text = malloc(size);

        assert_non_null(text);
        for (const char *p = body; *p; p++)
                lines += *p == '\n';
        n = (size_t) snprintf(text, size, "memacctd-state 1\n%s", body);
        for (size_t k = 0; k < n; k++) {
                h ^= (uint8_t) text[k];
                h *= UINT64_C(0x100000001b3);
        }
        snprintf(text + n, size - n, "end %zu fnv1a64=%016llx\n", lines, (unsigned long long) h);
        check_text(text, want);
        free(text);
}

#define ROOT "group / owner=0 max=max high=max low=0 min=0\n"

/* Hand-made files with a correct checksum but wrong content. */
static void test_check_refuses_bad_structure(void **state) {
        static const char *const bodies[] = {
                /* child before parent */
                ROOT "group /a/b owner=0 max=max high=max low=0 min=0\n"
                     "group /a owner=0 max=max high=max low=0 min=0\n",
                /* duplicate sibling */
                ROOT "group /a owner=0 max=max high=max low=0 min=0\n"
                     "group /b owner=0 max=max high=max low=0 min=0\n"
                     "group /a owner=0 max=max high=max low=0 min=0\n",
                /* duplicate sibling deeper down, its parent's other child between */
                ROOT "group /a owner=0 max=max high=max low=0 min=0\n"
                     "group /a/x owner=0 max=max high=max low=0 min=0\n"
                     "group /a/y owner=0 max=max high=max low=0 min=0\n"
                     "group /a/x owner=0 max=max high=max low=0 min=0\n",
                /* no root first */
                "group /a owner=0 max=max high=max low=0 min=0\n",
                /* missing field */
                "group / owner=0 max=max high=max low=0\n",
                /* unknown item */
                "group / owner=0 max=max high=max low=0 min=0 kept.gpu=4\n",
                /* no item at all, and an empty key */
                "group / owner=0 max=max high=max low=0 min=0 kept.=4\n",
                "group / owner=0 max=max high=max low=0 min=0 =4\n",
                /* a token without '=' */
                "group / owner=0 max=max high=max low=0 min=0 transient\n",
                /* a field name's prefix, a longer name, a field given twice */
                "group / owner=0 ma=max high=max low=0 min=0\n",
                "group / owner=0 maxx=max max=max high=max low=0 min=0\n",
                "group / owner=0 max=max high=max low=0 min=0 owner=0\n",
                /* a limit that is almost "max" */
                "group / owner=0 max=ma high=max low=0 min=0\n",
                "group / owner=0 max=maxx high=max low=0 min=0\n",
                /* kept-delegator above kept, of an unknown item */
                ROOT "group /a owner=7 max=max high=max low=0 min=0 kept.file=4 kept-delegator.file=8\n",
                ROOT "group /a owner=7 max=max high=max low=0 min=0 kept-delegator.gpu=8\n",
                /* bad path (one string of two lines) */
                (ROOT "group /a/../b owner=0 max=max high=max low=0 min=0\n"),
                /* bad number */
                "group / owner=0 max=12Q high=max low=0 min=0\n",
                /* transient neither 0 nor 1 */
                ROOT "group /a owner=0 max=max high=max low=0 min=0 transient=2\n",
                /* transient given twice */
                ROOT "group /a owner=0 max=max high=max low=0 min=0 transient=1 transient=1\n",
        };
        static const char *const good[] = {
                /* A file from before the transient mark, and one with it. */
                ROOT "group /a owner=7 max=4096 high=max low=0 min=0 kept.file=8192\n",
                ROOT "group /a owner=7 max=4096 high=max low=0 min=0 transient=1\n",
                /* Runs of spaces between fields, fields in any order. */
                ROOT "group /a   min=0 low=0  high=max max=4096 owner=7   kept.anon=4 kept-delegator.anon=4\n",
        };

        (void) state;
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
                check_body(bodies[i], -EBADMSG);
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                check_body(good[i], 2);
}

/* The duplicate check over many siblings: one repeated far from the first, anywhere in the file. */
static void test_check_finds_a_duplicate_among_many(void **state) {
        enum { N = 3000 };
        size_t size = N * 64 + 128;
        char *body = malloc(size);

        (void) state;
        assert_non_null(body);
        for (unsigned dup = 0; dup <= 3; dup++) {
                size_t n = (size_t) snprintf(body, size, ROOT);

                for (unsigned i = 0; i < N; i++) {
                        /* dup 0: none; else the last group repeats an early, middle or late one */
                        unsigned name = i < N - 1 || dup == 0 ? i : dup == 1 ? 2 : dup == 2 ? N / 2 : N - 2;

                        n += (size_t) snprintf(body + n, size - n,
                                               "group /g%u owner=0 max=max high=max low=0 min=0\n", name);
                }
                check_body(body, dup == 0 ? N + 1 : -EBADMSG);
        }
        free(body);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_damaged_states_are_never_overwritten, setup, teardown),
                cmocka_unit_test_setup_teardown(test_round_trip_restores_groups_limits_owners_and_kept, setup, teardown),
                cmocka_unit_test_setup_teardown(test_the_transient_mark_is_saved_and_restored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_session_charges_are_not_saved, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kept_charges_above_a_lowered_max_are_restored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_save_keeps_the_previous_state_as_old, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncated_state_falls_back_to_old, setup, teardown),
                cmocka_unit_test_setup_teardown(test_garbage_without_old_starts_empty_and_keeps_it, setup, teardown),
                cmocka_unit_test_setup_teardown(test_damaged_old_is_set_aside_too, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_state_uses_old, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_state_is_an_empty_tree_and_creates_the_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_catches_any_flipped_byte_or_cut, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_refuses_what_does_not_fit_the_config, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restore_refuses_a_state_deeper_than_configured, setup, teardown),
                cmocka_unit_test(test_check_refuses_bad_structure),
                cmocka_unit_test(test_check_finds_a_duplicate_among_many),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
