/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exposition of device memory regions (daemon/http/metrics-regions.c),
 * rendered by metrics_render() from a service driven in-process: regions
 * registered, limited and charged through the service as a transport
 * would, and the text compared line for line with what the test builds
 * itself from the groups the service reads back.
 *
 * - memory's series are byte for byte today's (the names, help texts,
 *   labels and values as before regions existed), with regions or without;
 *   a daemon with no device region has no region series at all;
 * - every device region a group has counters in gives the region families,
 *   labelled group= and region=, basic and full as documented, and each
 *   region daemon-wide its capacity, usage, peak and groups;
 * - the text is well-formed: one HELP and TYPE per family before its
 *   samples, the samples of a family together, no series twice, one label
 *   set per region family; and promtool accepts it when installed;
 * - a group with every region gives the bounded count of series the
 *   manual states, and max-groups still cuts the walk.
 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu/urcu-memb.h>

#include <cmocka.h>

#include "core/core.h"
#include "exposition-check.h"
#include "http/metrics-internal.h"
#include "macro.h"
#include "service/service.h"

#define KIB ((uint64_t) 1 << 10)
#define MIB ((uint64_t) 1 << 20)
#define GIB ((uint64_t) 1 << 30)

#define VRAM "drm/0000:03:00.0/vram0"
#define GPU "gpu0"

typedef struct Fixture {
        MemCore *core;
        Service *svc;
        bool registered;
} Fixture;

static Peer *daemon_peer(Fixture *f) {
        return service_daemon_peer(f->svc);
}

static int setup(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings ss = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
        Fixture *f = calloc(1, sizeof(*f));

        if (!f || core_new(&cc, &f->core) < 0)
                return -1;
        f->registered = core_thread_register(f->core) >= 0;
        if (!f->registered || service_new(f->core, &ss, &f->svc) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        f->svc = service_free(f->svc);
        urcu_memb_barrier();
        if (f->registered)
                core_thread_unregister(f->core);
        f->core = core_free(f->core);
        free(f);
        return 0;
}

/* ---- driving the service ---- */

static void create(Fixture *f, const char *path, const MemLimits *l) {
        Refusal rf;

        refusal_init(&rf);
        assert_int_equal(service_create_group(f->svc, daemon_peer(f), path, l, false, 0, &rf), 0);
}

/* A kept charge of @bytes to @path in @region (NULL: memory) with @stat; the service's answer. */
static int charge(Fixture *f, const char *path, const char *region, const char *stat, uint64_t bytes) {
        ServiceCharge c = { .path = path, .bytes = bytes, .has_bytes = true, .stat = stat, .keep = true,
                            .region = region };
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        return service_charge(f->svc, daemon_peer(f), &c, &res, &rf);
}

static void add_region(Fixture *f, const char *name, uint64_t capacity) {
        Refusal rf;

        refusal_init(&rf);
        assert_int_equal(service_add_region(f->svc, daemon_peer(f), name, capacity, &rf), 0);
}

static void region_limits(Fixture *f, const char *path, const char *region, const MemLimits *l) {
        Refusal rf;

        refusal_init(&rf);
        assert_true(service_set_region_limits(f->svc, daemon_peer(f), path, region, l, false, &rf) >= 0);
}

/* The tree of every test, memory only: /a (limited), /a/b and /c, charged, one charge refused. */
static void make_tree(Fixture *f) {
        MemLimits la = { .set = MEM_LIMIT_MAX | MEM_LIMIT_LOW, .max = 1 * MIB, .low = 64 * KIB };

        create(f, "/a", &la);
        create(f, "/a/b", NULL);
        create(f, "/c", NULL);
        assert_int_equal(charge(f, "/a/b", NULL, "anon", 64 * KIB), 0);
        assert_int_equal(charge(f, "/c", NULL, "file", 8 * KIB), 0);
        /* Over /a's max: a failcnt and a max event in memory. */
        assert_int_equal(charge(f, "/a/b", NULL, "anon", 2 * MIB), -EDQUOT);
}

/*
 * Regions on the same tree: VRAM with a capacity, /a limited there and
 * /a/b charged (one more charge refused by /a's max there), GPU
 * unlimited with /c charged. Memory is not touched.
 */
static void make_regions(Fixture *f) {
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN,
                        .max = 1 * MIB, .high = 768 * KIB, .low = 256 * KIB, .min = 128 * KIB };

        add_region(f, VRAM, 1 * GIB);
        add_region(f, GPU, UINT64_MAX);
        region_limits(f, "/a", VRAM, &l);
        assert_int_equal(charge(f, "/a/b", VRAM, NULL, 64 * KIB), 0);
        assert_int_equal(charge(f, "/a/b", VRAM, NULL, 2 * MIB), -EDQUOT);
        assert_int_equal(charge(f, "/c", GPU, NULL, 4 * KIB), 0);
}

/* ---- what the service reads back ---- */

typedef struct Group {
        char path[64];
        MemGroupInfo info;
} Group;

typedef struct Groups {
        Group v[8];
        size_t n;
} Groups;

static int collect(void *userdata, const char *path, const MemGroupInfo *info) {
        Groups *g = userdata;

        if (g->n == ELEMENTSOF(g->v) || strlen(path) >= sizeof(g->v[0].path))
                return -ENOSPC;
        snprintf(g->v[g->n].path, sizeof(g->v[0].path), "%s", path);
        g->v[g->n++].info = *info;
        return 0;
}

/* Every group, parents first as a scrape walks them, read exactly. */
static Groups *read_groups(Fixture *f) {
        Groups *g = calloc(1, sizeof(*g));
        Refusal rf;

        assert_non_null(g);
        refusal_init(&rf);
        assert_int_equal(service_list_groups(f->svc, daemon_peer(f), "/",
                                             SERVICE_READ_RECURSIVE | SERVICE_READ_EXACT, collect, g, &rf),
                         0);
        return g;
}

static const Group *find_group(const Groups *g, const char *path) {
        for (size_t i = 0; i < g->n; i++)
                if (strcmp(g->v[i].path, path) == 0)
                        return &g->v[i];
        fail_msg("no group %s", path);
        return NULL;
}

static const MemRegionInfo *find_region(const MemGroupInfo *info, const char *name) {
        for (unsigned i = 0; i < info->nr_regions; i++)
                if (strcmp(info->regions[i].name, name) == 0)
                        return &info->regions[i];
        return NULL;
}

/* ---- the expected exposition, built here ---- */

typedef enum Kind {
        KIND_U64,      /* uint64_t */
        KIND_LIMIT,    /* uint64_t, UINT64_MAX: +Inf */
        KIND_UNSIGNED, /* unsigned */
        KIND_EVENTS,   /* uint64_t[_MEM_EVENT_MAX], event= */
        KIND_STAT,     /* int64_t[_MEM_STAT_MAX], item= */
        KIND_MIRROR,   /* kernel_current, for mirrors only */
        KIND_SECONDS,  /* uint64_t µs, in seconds */
} Kind;

typedef struct Family {
        const char *name, *type, *help;
        Kind kind;
        size_t offset; /* in MemGroupInfo, or MemRegionInfo for a region family */
        bool basic;
} Family;

#define G(field) offsetof(MemGroupInfo, field)
#define R(field) offsetof(MemRegionInfo, field)

/* Memory's families as they were before regions (and pressure, after them): names, help texts, order. */
static const Family memory_families[] = {
        { "memacct_group_usage_bytes", "gauge",
          "Bytes charged to the group and its subtree (memory.current).",
          KIND_U64, G(current), true },
        { "memacct_group_peak_bytes", "gauge",
          "Highest usage since creation or the last reset (memory.peak).",
          KIND_U64, G(peak), true },
        { "memacct_group_max_bytes", "gauge",
          "Hard limit (memory.max); +Inf when not set.",
          KIND_LIMIT, G(max), true },
        { "memacct_group_high_bytes", "gauge",
          "Throttle limit (memory.high); +Inf when not set.",
          KIND_LIMIT, G(high), true },
        { "memacct_group_low_bytes", "gauge",
          "Best-effort protection (memory.low); +Inf for max.",
          KIND_LIMIT, G(low), true },
        { "memacct_group_min_bytes", "gauge",
          "Hard protection (memory.min); +Inf for max.",
          KIND_LIMIT, G(min), true },
        { "memacct_group_effective_min_bytes", "gauge",
          "Hard protection in effect, relative to the root; +Inf for max.",
          KIND_LIMIT, G(effective_min), false },
        { "memacct_group_effective_low_bytes", "gauge",
          "Best-effort protection in effect, relative to the root; +Inf for max.",
          KIND_LIMIT, G(effective_low), false },
        { "memacct_group_kernel_usage_bytes", "gauge",
          "The kernel cgroup's usage at the last sample, for cgroup mirrors only.",
          KIND_MIRROR, G(kernel_current), true },
        { "memacct_group_sessions", "gauge",
          "Sessions attached to the group itself.",
          KIND_UNSIGNED, G(nr_attached), false },
        { "memacct_group_failcnt_total", "counter",
          "Charges the group's max refused (failcnt).",
          KIND_U64, G(failcnt), true },
        { "memacct_group_events_total", "counter",
          "Events of the group and its subtree (memory.events).",
          KIND_EVENTS, G(events), false },
        { "memacct_group_events_local_total", "counter",
          "Events of the group itself (memory.events.local).",
          KIND_EVENTS, G(events_local), true },
        { "memacct_group_stat_bytes", "gauge",
          "Bytes by item of the group and its subtree (memory.stat).",
          KIND_STAT, G(stat), false },
        { "memacct_group_stat_local_bytes", "gauge",
          "Bytes by item charged to the group itself.",
          KIND_STAT, G(stat_local), false },
        { "memacct_pressure_waiting_seconds_total", "counter",
          "Time at least one charge of the subtree waited for reclaim (memory.pressure some total).",
          KIND_SECONDS, G(pressure[MEM_PRESSURE_SOME].total_usec), false },
        { "memacct_pressure_stalled_seconds_total", "counter",
          "Time every session attached in the subtree waited for reclaim (memory.pressure full total).",
          KIND_SECONDS, G(pressure[MEM_PRESSURE_FULL].total_usec), false },
};

/* The device regions' families, as the manual lists them. */
static const Family region_families[] = {
        { "memacct_group_region_usage_bytes", "gauge",
          "Usage in a device region of the group and its subtree (dmem.current).",
          KIND_U64, R(current), true },
        { "memacct_group_region_peak_bytes", "gauge",
          "Peak usage in a device region of the group and its subtree.",
          KIND_U64, R(peak), true },
        { "memacct_group_region_max_bytes", "gauge",
          "Hard limit in a device region (dmem.max); +Inf when not set.",
          KIND_LIMIT, R(max), true },
        { "memacct_group_region_high_bytes", "gauge",
          "Throttle limit in a device region; +Inf when not set.",
          KIND_LIMIT, R(high), true },
        { "memacct_group_region_low_bytes", "gauge",
          "Best-effort protection in a device region (dmem.low); +Inf for max.",
          KIND_LIMIT, R(low), true },
        { "memacct_group_region_min_bytes", "gauge",
          "Hard protection in a device region (dmem.min); +Inf for max.",
          KIND_LIMIT, R(min), true },
        { "memacct_group_region_effective_min_bytes", "gauge",
          "Hard protection in effect in a device region, relative to the root; +Inf for max.",
          KIND_LIMIT, R(effective_min), false },
        { "memacct_group_region_effective_low_bytes", "gauge",
          "Best-effort protection in effect in a device region, relative to the root; +Inf for max.",
          KIND_LIMIT, R(effective_low), false },
        { "memacct_group_region_failcnt_total", "counter",
          "Charges in a device region the group's max refused (failcnt).",
          KIND_U64, R(failcnt), true },
        { "memacct_group_region_events_total", "counter",
          "Events in a device region of the group and its subtree.",
          KIND_EVENTS, R(events), false },
        { "memacct_group_region_events_local_total", "counter",
          "Events in a device region of the group itself.",
          KIND_EVENTS, R(events_local), true },
        { "memacct_group_region_kept_bytes", "gauge",
          "Kept charges of the group itself in a device region.",
          KIND_U64, R(kept), false },
};

/* Samples one record gives in family @fam (the mirror family: none here). */
static unsigned family_samples(const Family *fam) {
        return fam->kind == KIND_EVENTS ? _MEM_EVENT_MAX : fam->kind == KIND_STAT ? _MEM_STAT_MAX
                                                         : fam->kind == KIND_MIRROR ? 0
                                                                                   : 1;
}

/* One record's samples of @fam, labelled @label, to @out. */
static void format_record(FILE *out, const Family *fam, const void *rec, const char *label) {
        const char *p = (const char *) rec + fam->offset;
        uint64_t v;

        switch (fam->kind) {
        case KIND_U64:
                memcpy(&v, p, sizeof(v));
                fprintf(out, "%s{%s} %llu\n", fam->name, label, (unsigned long long) v);
                break;
        case KIND_LIMIT:
                memcpy(&v, p, sizeof(v));
                if (v == UINT64_MAX)
                        fprintf(out, "%s{%s} +Inf\n", fam->name, label);
                else
                        fprintf(out, "%s{%s} %llu\n", fam->name, label, (unsigned long long) v);
                break;
        case KIND_UNSIGNED: {
                unsigned u;

                memcpy(&u, p, sizeof(u));
                fprintf(out, "%s{%s} %u\n", fam->name, label, u);
                break;
        }
        case KIND_EVENTS:
                for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++) {
                        memcpy(&v, p + e * sizeof(v), sizeof(v));
                        fprintf(out, "%s{%s,event=\"%s\"} %llu\n", fam->name, label, mem_event_to_string(e),
                                (unsigned long long) v);
                }
                break;
        case KIND_STAT:
                for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                        int64_t s;

                        memcpy(&s, p + i * sizeof(s), sizeof(s));
                        fprintf(out, "%s{%s,item=\"%s\"} %lld\n", fam->name, label,
                                mem_stat_item_to_string(i), (long long) s);
                }
                break;
        case KIND_MIRROR:
                break;
        case KIND_SECONDS:
                memcpy(&v, p, sizeof(v));
                fprintf(out, "%s{%s} %llu.%06llu\n", fam->name, label, (unsigned long long) (v / 1000000),
                        (unsigned long long) (v % 1000000));
                break;
        }
}

/* What memory's families of @g are: HELP, TYPE and each group's samples, family by family. */
static char *want_memory(const Groups *g, bool basic) {
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);

        assert_non_null(out);
        for (size_t f = 0; f < ELEMENTSOF(memory_families); f++) {
                const Family *fam = &memory_families[f];

                if ((basic && !fam->basic) || fam->kind == KIND_MIRROR)
                        continue;
                fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
                for (size_t i = 0; i < g->n; i++) {
                        char label[128];

                        snprintf(label, sizeof(label), "group=\"%s\"", g->v[i].path);
                        format_record(out, fam, &g->v[i].info, label);
                }
        }
        assert_int_equal(fclose(out), 0);
        return text;
}

/* What the region families of @g are: a family with no sample is left out. */
static char *want_regions(const Groups *g, bool basic) {
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        bool any = false;

        assert_non_null(out);
        for (size_t i = 0; i < g->n; i++)
                any |= g->v[i].info.nr_regions > 0;
        for (size_t f = 0; f < ELEMENTSOF(region_families) && any; f++) {
                const Family *fam = &region_families[f];

                if (basic && !fam->basic)
                        continue;
                fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
                for (size_t i = 0; i < g->n; i++)
                        for (unsigned k = 0; k < g->v[i].info.nr_regions; k++) {
                                char label[256];

                                snprintf(label, sizeof(label), "group=\"%s\",region=\"%s\"", g->v[i].path,
                                         g->v[i].info.regions[k].name);
                                format_record(out, fam, &g->v[i].info.regions[k], label);
                        }
        }
        assert_int_equal(fclose(out), 0);
        return text;
}

/* ---- rendering and cutting the answer ---- */

static char *render_cap(Fixture *f, bool basic, unsigned max_groups) {
        MetricsQuery mq = { .prefix = "/", .depth = UINT_MAX, .basic = basic };
        MetricsText t = {};
        Refusal rf;
        char *s;

        refusal_init(&rf);
        assert_int_equal(metrics_render(f->svc, &mq, max_groups, &t, &rf), 0);
        s = strndup(t.p, t.len);
        assert_non_null(s);
        metrics_text_done(&t);
        return s;
}

static char *render(Fixture *f, bool basic) {
        return render_cap(f, basic, 10000);
}

/* @body from the line that starts with @from (NULL: the start) to the one that starts with @to. */
static char *cut(const char *body, const char *from, const char *to) {
        const char *a = body, *b;

        if (from) {
                a = strstr(body, from);
                if (!a)
                        return strdup("");
        }
        b = strstr(a, to);
        assert_non_null(b);
        return strndup(a, (size_t) (b - a));
}

/* Memory's families: the answer up to the first region family, or the scrape's own series. */
static char *memory_part(const char *body) {
        const char *r = strstr(body, "# HELP memacct_group_region_");

        if (r)
                return strndup(body, (size_t) (r - body));
        return cut(body, NULL, "# HELP memacctd_metrics_groups_exported ");
}

static char *regions_part(const char *body) {
        return cut(body, "# HELP memacct_group_region_", "# HELP memacctd_metrics_groups_exported ");
}

static void assert_has_line(const char *body, const char *line) {
        char *l;

        assert_true(asprintf(&l, "\n%s\n", line) > 0);
        if (!strstr(body, l))
                fail_msg("no line '%s' in:\n%s", line, body);
        free(l);
}

/* Lines of @body that start with @prefix and have @needle in them. */
static unsigned count_lines(const char *body, const char *prefix, const char *needle) {
        unsigned n = 0;

        for (const char *p = body; *p;) {
                const char *e = strchrnul(p, '\n');

                if (strncmp(p, prefix, strlen(prefix)) == 0 && (!needle || memmem(p, (size_t) (e - p), needle,
                                                                                    strlen(needle))))
                        n++;
                p = *e ? e + 1 : e;
        }
        return n;
}

/* ---- the tests ---- */

/* A daemon with no device region: memory's families as before, and nothing of regions. */
static void test_memory_alone(void **state) {
        Fixture *f = *state;
        Groups *g;
        char *body, *part, *want;

        make_tree(f);
        g = read_groups(f);
        /* The state the expectation is built from is the one make_tree() made. */
        assert_int_equal(g->n, 4);
        assert_int_equal(find_group(g, "/a/b")->info.current, 64 * KIB);
        assert_int_equal(find_group(g, "/a")->info.current, 64 * KIB);
        assert_int_equal(find_group(g, "/")->info.current, 64 * KIB + 8 * KIB);
        assert_int_equal(find_group(g, "/a")->info.failcnt, 1);
        for (bool basic = false;; basic = true) {
                body = render(f, basic);
                part = memory_part(body);
                want = want_memory(g, basic);
                assert_string_equal(part, want);
                assert_null(strstr(body, "memacct_region_"));
                assert_null(strstr(body, "memacct_group_region_"));
                exposition_check(body);
                free(want);
                free(part);
                free(body);
                if (basic)
                        break;
        }
        free(g);
}

/* Regions on the same tree leave memory's families byte for byte as they were. */
static void test_memory_unchanged_by_regions(void **state) {
        Fixture *f = *state;
        char *before[2], *after;
        Groups *g;

        make_tree(f);
        for (int basic = 0; basic < 2; basic++) {
                char *body = render(f, basic);

                before[basic] = memory_part(body);
                free(body);
        }
        make_regions(f);
        g = read_groups(f);
        /* The regions are there, and in the groups' reads. */
        assert_int_equal(find_group(g, "/a/b")->info.nr_regions, 1);
        assert_int_equal(find_group(g, "/")->info.nr_regions, 2);
        for (int basic = 0; basic < 2; basic++) {
                char *body = render(f, basic);

                assert_non_null(strstr(body, "\nmemacct_group_region_usage_bytes{"));
                after = memory_part(body);
                assert_string_equal(after, before[basic]);
                free(after);
                free(body);
                free(before[basic]);
        }
        free(g);
}

/* Each group's counters in each region it uses, exactly, full and basic. */
static void test_region_series(void **state) {
        Fixture *f = *state;
        const MemRegionInfo *vb, *va, *vr, *gr;
        char *body, *part, *want;
        Groups *g;

        make_tree(f);
        make_regions(f);
        g = read_groups(f);
        vb = find_region(&find_group(g, "/a/b")->info, VRAM);
        va = find_region(&find_group(g, "/a")->info, VRAM);
        vr = find_region(&find_group(g, "/")->info, VRAM);
        gr = find_region(&find_group(g, "/")->info, GPU);
        assert_non_null(vb);
        assert_non_null(va);
        assert_non_null(vr);
        assert_non_null(gr);
        /* /c uses GPU alone, /a/b VRAM alone. */
        assert_null(find_region(&find_group(g, "/c")->info, VRAM));
        assert_null(find_region(&find_group(g, "/a/b")->info, GPU));
        /* What the expectation rests on, from what make_regions() did. */
        assert_int_equal(vb->current, 64 * KIB);
        assert_int_equal(vb->kept, 64 * KIB);
        assert_int_equal(va->current, 64 * KIB);
        assert_int_equal(va->kept, 0);
        assert_int_equal(va->max, 1 * MIB);
        assert_int_equal(va->failcnt, 1);
        assert_int_equal(vr->max, 1 * GIB);
        assert_int_equal(gr->max, UINT64_MAX);
        assert_int_equal(gr->current, 4 * KIB);

        for (bool basic = false;; basic = true) {
                body = render(f, basic);
                part = regions_part(body);
                want = want_regions(g, basic);
                assert_string_equal(part, want);
                exposition_check(body);
                free(want);
                free(part);
                /* The full-only families are left out of a basic scrape, whole. */
                assert_true(!strstr(body, "memacct_group_region_kept_bytes") == basic);
                assert_true(!strstr(body, "memacct_group_region_events_total") == basic);
                assert_true(!strstr(body, "memacct_group_region_effective_min_bytes") == basic);
                free(body);
                if (basic)
                        break;
        }
        /* A few lines spelled out: the names and labels a dashboard will use. */
        body = render(f, false);
        assert_has_line(body, "memacct_group_region_usage_bytes{group=\"/a/b\",region=\"" VRAM "\"} 65536");
        assert_has_line(body, "memacct_group_region_max_bytes{group=\"/a\",region=\"" VRAM "\"} 1048576");
        assert_has_line(body, "memacct_group_region_max_bytes{group=\"/\",region=\"" GPU "\"} +Inf");
        assert_has_line(body, "memacct_group_region_kept_bytes{group=\"/c\",region=\"" GPU "\"} 4096");
        assert_has_line(body, "memacct_group_region_failcnt_total{group=\"/a\",region=\"" VRAM "\"} 1");
        /* Memory's family is not where a device region's refusal goes. */
        assert_has_line(body, "memacct_group_failcnt_total{group=\"/a\"} 1");
        free(body);
        free(g);
}

/* Each region daemon-wide: capacity, usage, peak, groups; memory not among them. */
static void test_region_daemon(void **state) {
        Fixture *f = *state;
        MemRegionDesc d[MEM_REGION_MAX];
        char *body, line[256];
        Refusal rf;
        int n;

        make_tree(f);
        make_regions(f);
        refusal_init(&rf);
        n = service_list_regions(f->svc, daemon_peer(f), d, MEM_REGION_MAX, &rf);
        assert_int_equal(n, 3);
        body = render(f, true);
        exposition_check(body);
        for (int i = 1; i < n; i++) {
                /* VRAM: /, /a (its limits) and /a/b (its charge); GPU: / and /c. */
                assert_int_equal(d[i].groups, strcmp(d[i].name, VRAM) == 0 ? 3 : 2);
                if (d[i].capacity == UINT64_MAX)
                        snprintf(line, sizeof(line), "memacct_region_capacity_bytes{region=\"%s\"} +Inf",
                                 d[i].name);
                else
                        snprintf(line, sizeof(line), "memacct_region_capacity_bytes{region=\"%s\"} %llu",
                                 d[i].name, (unsigned long long) d[i].capacity);
                assert_has_line(body, line);
                snprintf(line, sizeof(line), "memacct_region_usage_bytes{region=\"%s\"} %llu", d[i].name,
                         (unsigned long long) d[i].current);
                assert_has_line(body, line);
                snprintf(line, sizeof(line), "memacct_region_peak_bytes{region=\"%s\"} %llu", d[i].name,
                         (unsigned long long) d[i].peak);
                assert_has_line(body, line);
                snprintf(line, sizeof(line), "memacct_region_groups{region=\"%s\"} %u", d[i].name,
                         d[i].groups);
                assert_has_line(body, line);
        }
        assert_has_line(body, "memacct_region_capacity_bytes{region=\"" VRAM "\"} 1073741824");
        assert_has_line(body, "memacct_region_capacity_bytes{region=\"" GPU "\"} +Inf");
        assert_has_line(body, "memacct_region_usage_bytes{region=\"" VRAM "\"} 65536");
        assert_has_line(body, "memacct_region_usage_bytes{region=\"" GPU "\"} 4096");
        /* One sample per device region per family, and none for memory. */
        assert_int_equal(count_lines(body, "memacct_region_", NULL), 4 * (n - 1));
        assert_null(strstr(body, "region=\"memory\""));
        free(body);
}

/*
 * The bound: a group in every device region there can be has memory's
 * series and, per region, the region families' (counted from the
 * families: 10 + 2 * _MEM_EVENT_MAX full, 7 + _MEM_EVENT_MAX basic); the
 * registry refuses one region more; max-groups still cuts the walk.
 */
static void test_every_region(void **state) {
        Fixture *f = *state;
        unsigned mem_full = 0, mem_basic = 0, reg_full = 0, reg_basic = 0;
        char name[32], *body;
        Refusal rf;

        create(f, "/a", NULL);
        for (int i = 0; i < MEM_REGION_MAX - 1; i++) {
                snprintf(name, sizeof(name), "dev%d", i);
                add_region(f, name, 1 * GIB);
                assert_int_equal(charge(f, "/a", name, NULL, 4 * KIB), 0);
        }
        refusal_init(&rf);
        assert_int_equal(service_add_region(f->svc, daemon_peer(f), "one-more", 1 * GIB, &rf), -ENOSPC);
        for (size_t i = 0; i < ELEMENTSOF(memory_families); i++) {
                mem_full += family_samples(&memory_families[i]);
                mem_basic += memory_families[i].basic ? family_samples(&memory_families[i]) : 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(region_families); i++) {
                reg_full += family_samples(&region_families[i]);
                reg_basic += region_families[i].basic ? family_samples(&region_families[i]) : 0;
        }
        /* The manual's figures. */
        assert_int_equal(mem_full, 36);
        assert_int_equal(mem_basic, 11);
        assert_int_equal(reg_full, 18);
        assert_int_equal(reg_basic, 11);

        body = render(f, false);
        exposition_check(body);
        assert_int_equal(count_lines(body, "memacct_group_", "{group=\"/a\"") +
                                 count_lines(body, "memacct_pressure_", "{group=\"/a\""),
                         mem_full + (MEM_REGION_MAX - 1) * reg_full);
        assert_int_equal(count_lines(body, "memacct_region_", NULL), 4 * (MEM_REGION_MAX - 1));
        free(body);
        body = render(f, true);
        exposition_check(body);
        assert_int_equal(count_lines(body, "memacct_group_", "{group=\"/a\"") +
                                 count_lines(body, "memacct_pressure_", "{group=\"/a\""),
                         mem_basic + (MEM_REGION_MAX - 1) * reg_basic);
        free(body);
        /* max-groups 1: the root alone, its regions with it; /a's are not read. */
        body = render_cap(f, false, 1);
        exposition_check(body);
        assert_int_equal(count_lines(body, "memacct_group_", "{group=\"/a\""), 0);
        assert_int_equal(count_lines(body, "memacct_group_region_usage_bytes{group=\"/\"", NULL),
                         MEM_REGION_MAX - 1);
        assert_has_line(body, "memacctd_metrics_groups_truncated 1");
        free(body);
}

/* promtool, where installed, reads the whole answer with regions as Prometheus would. */
static void test_promtool(void **state) {
        Fixture *f = *state;
        char *body;
        int r;

        make_tree(f);
        make_regions(f);
        body = render(f, false);
        r = exposition_promtool(body);
        free(body);
        if (r < 0)
                skip();
        assert_int_equal(r, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_memory_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_memory_unchanged_by_regions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_region_series, setup, teardown),
                cmocka_unit_test_setup_teardown(test_region_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_every_region, setup, teardown),
                cmocka_unit_test_setup_teardown(test_promtool, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
