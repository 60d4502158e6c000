/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helpers of the region tests (region-test.h). */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/charge.h"
#include "core/region.h"
#include "region-test.h"
#include "state/persist.h"

/* ---- cores ---- */

/* A thread is registered with one core at a time. */
static MemCore *current;

void rt_use(MemCore *core) {
        if (current == core)
                return;
        if (current)
                core_thread_unregister(current);
        assert_int_equal(core_thread_register(core), 0);
        current = core;
}

MemCore *rt_core_new(void) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core = NULL;

        assert_int_equal(core_new(&cc, &core), 0);
        rt_use(core);
        return core;
}

void rt_core_free(MemCore *core) {
        if (current == core) {
                core_thread_unregister(core);
                current = NULL;
        }
        core_free(core);
}

MemGroup *rt_group(MemCore *core, const char *path) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        return g;
}

int rt_key(MemCore *core, const char *region) {
        int key = core_region_lookup(core, region);

        assert_true(key > 0);
        return key;
}

int rt_set_limits(MemCore *core, const char *path, const char *region, MemLimits l) {
        MemGroup *g = rt_group(core, path);
        int r = region_set_limits(core, g, rt_key(core, region), &l, true);

        group_unref(g);
        return r;
}

int rt_kept(MemCore *core, const char *path, const char *region, uint64_t bytes, unsigned flags) {
        MemGroup *g = rt_group(core, path);
        MemChargeResult res = {};
        int r = region_charge_kept(core, g, rt_key(core, region), bytes, flags, &res);

        charge_result_done(&res);
        group_unref(g);
        return r;
}

MemRegionInfo rt_info(MemCore *core, const char *path, const char *region) {
        MemGroup *g = rt_group(core, path);
        MemRegionInfo ri;

        assert_int_equal(region_read_one(core, g, rt_key(core, region), NULL, &ri), 0);
        group_unref(g);
        return ri;
}

uint64_t rt_delegator(MemCore *core, const char *path, const char *region) {
        MemGroup *g = rt_group(core, path);
        uint64_t d = region_kept_delegator(core, g, rt_key(core, region));

        group_unref(g);
        return d;
}

/* @path has the same counters in the same regions, with the same figures, in @a and @b. */
void rt_assert_same_regions(MemCore *a, MemCore *b, const char *path) {
        MemGroupInfo x, y;
        MemGroup *g;

        g = rt_group(a, path);
        group_read(a, g, NULL, true, &x);
        group_unref(g);
        g = rt_group(b, path);
        group_read(b, g, NULL, true, &y);
        group_unref(g);
        if (x.nr_regions != y.nr_regions)
                fail_msg("%s: %u regions, restored %u", path, x.nr_regions, y.nr_regions);
        for (unsigned i = 0; i < x.nr_regions; i++) {
                const MemRegionInfo *p = &x.regions[i], *q = &y.regions[i];

                assert_string_equal(p->name, q->name);
                assert_true(p->capacity == q->capacity);
                assert_true(p->current == q->current);
                assert_true(p->kept == q->kept);
                assert_true(p->max == q->max);
                assert_true(p->high == q->high);
                assert_true(p->low == q->low);
                assert_true(p->min == q->min);
                assert_true(rt_delegator(a, path, p->name) == rt_delegator(b, path, q->name));
        }
        assert_true(x.current == y.current);
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                assert_true(x.kept[i] == y.kept[i]);
}

void rt_assert_same_region_list(MemCore *a, MemCore *b) {
        MemRegionDesc x[MEM_REGION_MAX], y[MEM_REGION_MAX];
        unsigned n = core_region_list(a, x, MEM_REGION_MAX);

        assert_int_equal(core_region_list(b, y, MEM_REGION_MAX), n);
        for (unsigned i = 0; i < n; i++) {
                assert_string_equal(x[i].name, y[i].name);
                assert_true(x[i].capacity == y[i].capacity);
                assert_true(x[i].current == y[i].current);
        }
}

/* ---- state directories ---- */

char *rt_dir_new(void) {
        char *dir = strdup("/tmp/test-regions-XXXXXX");

        assert_non_null(dir);
        assert_non_null(mkdtemp(dir));
        return dir;
}

void rt_dir_free(char *dir) {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        free(dir);
}

void rt_file_write(const char *dir, const char *name, const char *data, size_t n) {
        char path[128];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
}

bool rt_file_exists(const char *dir, const char *name) {
        char path[128];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

/* @state (and @journal, when not NULL) restored into a fresh core. */
MemCore *rt_restored(const char *state, size_t n, const char *journal, size_t jn) {
        char *dir = rt_dir_new();
        MemCore *fresh;

        rt_file_write(dir, "state", state, n);
        if (journal)
                rt_file_write(dir, "journal", journal, jn);
        fresh = rt_core_new();
        assert_int_equal(persist_restore(fresh, dir), 0);
        rt_dir_free(dir);
        return fresh;
}
