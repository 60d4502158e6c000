/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The device memory regions in the exposition
 *
 * A group's counters in a device region (dmem's pool: drm/0000:03:00.0/
 * vram0, gpu0) are families of their own, memacct_group_region_*, the
 * group's labels and region="NAME"; each region daemon-wide is
 * memacct_region_*{region="NAME"}. "memory" is in neither: its series
 * stay memacct_group_* with no region label, byte for byte what they
 * were, and a daemon with no device region exports nothing more.
 *
 * Why not memory's family names with region="NAME" added to a device
 * region's samples (legal in the exposition format): every query that
 * does not name the label would take the device regions in. The shipped
 * rules sum memacct_group_events_local_total by (group, event) and alert
 * that a group "hit its max ... memory.max": with a GPU region's samples
 * in that family, a vram refusal would be summed into memory's rate and
 * alerted on as memory's, and a topk() or sum() of usage would add vram
 * bytes to RAM bytes. Nor region="memory" on memory's series: every
 * existing series would change its identity (a new series in the TSDB,
 * the old one ended) and dashboards would need to add the label to stay
 * correct. Families of their own keep every existing query's meaning,
 * and give each family one label set, which tools that assume it (some
 * exporters' parsers, recording rules without an on()) are happy with.
 * memory is not repeated in the region families: its per-group series
 * are already there once, and a second copy of each would double the
 * larger part of the answer.
 *
 * Bounds: a group read carries at most MEM_REGION_MAX - 1 device
 * regions, those it has counters in (created by a charge or a limit there,
 * with its ancestors'), so a group's samples stay bounded: 11 basic or
 * 18 full per region it uses, on top of memory's 11 or 34 (one more for
 * a mirror), 352 or 592 at most. [metrics] max-groups still bounds the
 * groups of a scrape, and the output-buffer bound counts the bytes of
 * the answers, whatever made them.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/metrics-internal.h"
#include "macro.h"

static const struct {
        const char *name, *type, *help;
        /* In a series=basic scrape too: memory's basic ones (render_group()), so
         * that basic means the same in every region: what an operator watches
         * and alerts on, near-max and max or oom events included. */
        bool basic;
} region_families[_REGION_FAMILY_MAX] = {
        [REGION_FAMILY_USAGE] = { "memacct_group_region_usage_bytes", "gauge",
                                  "Usage in a device region of the group and its subtree (dmem.current).",
                                  true },
        [REGION_FAMILY_PEAK] = { "memacct_group_region_peak_bytes", "gauge",
                                 "Peak usage in a device region of the group and its subtree.", true },
        [REGION_FAMILY_MAX] = { "memacct_group_region_max_bytes", "gauge",
                                "Hard limit in a device region (dmem.max); +Inf when not set.", true },
        [REGION_FAMILY_HIGH] = { "memacct_group_region_high_bytes", "gauge",
                                 "Throttle limit in a device region; +Inf when not set.", true },
        [REGION_FAMILY_LOW] = { "memacct_group_region_low_bytes", "gauge",
                                "Best-effort protection in a device region (dmem.low); +Inf for max.", true },
        [REGION_FAMILY_MIN] = { "memacct_group_region_min_bytes", "gauge",
                                "Hard protection in a device region (dmem.min); +Inf for max.", true },
        [REGION_FAMILY_EFFECTIVE_MIN] = {
                "memacct_group_region_effective_min_bytes", "gauge",
                "Hard protection in effect in a device region, relative to the root; +Inf for max.", false },
        [REGION_FAMILY_EFFECTIVE_LOW] = {
                "memacct_group_region_effective_low_bytes", "gauge",
                "Best-effort protection in effect in a device region, relative to the root; +Inf for max.",
                false },
        [REGION_FAMILY_FAILCNT] = { "memacct_group_region_failcnt_total", "counter",
                                    "Charges in a device region the group's max refused (failcnt).", true },
        [REGION_FAMILY_EVENTS] = { "memacct_group_region_events_total", "counter",
                                   "Events in a device region of the group and its subtree.", false },
        [REGION_FAMILY_EVENTS_LOCAL] = { "memacct_group_region_events_local_total", "counter",
                                         "Events in a device region of the group itself.", true },
        [REGION_FAMILY_KEPT] = { "memacct_group_region_kept_bytes", "gauge",
                                 "Kept charges of the group itself in a device region.", false },
};

/* Where one region of one group goes: @label already says region="NAME". */
typedef struct RegionSink {
        MetricsRegionTexts *t;
        const char *label;
        bool basic; /* series=basic: the families marked basic alone */
} RegionSink;

/* One sample of family @f into its text, unless the scrape leaves the family out. */
static int add_value(const RegionSink *k, MetricsRegionFamily f, const char *event, const char *value) {
        int n;

        if (k->basic && !region_families[f].basic)
                return 0;
        if (event)
                n = metrics_text_printf(&k->t->fam[f], "%s{%s,event=\"%s\"} %s\n", region_families[f].name,
                                        k->label, event, value);
        else
                n = metrics_text_printf(&k->t->fam[f], "%s{%s} %s\n", region_families[f].name, k->label, value);
        return n < 0 ? -ENOMEM : 0;
}

static int add_u64(const RegionSink *k, MetricsRegionFamily f, uint64_t v) {
        char num[24];

        snprintf(num, sizeof(num), "%" PRIu64, v);
        return add_value(k, f, NULL, num);
}

static int add_limit(const RegionSink *k, MetricsRegionFamily f, uint64_t v) {
        char num[24];

        return add_value(k, f, NULL, metrics_limit_value(v, num));
}

static int add_events(const RegionSink *k, MetricsRegionFamily f, const uint64_t v[_MEM_EVENT_MAX]) {
        int r = 0;

        for (MemEvent e = 0; e < _MEM_EVENT_MAX && r >= 0; e++) {
                char num[24];

                snprintf(num, sizeof(num), "%" PRIu64, v[e]);
                r = add_value(k, f, mem_event_to_string(e), num);
        }
        return r;
}

static int render_region(const RegionSink *k, const MemRegionInfo *ri) {
        int r = 0;

        r |= add_u64(k, REGION_FAMILY_USAGE, ri->current);
        r |= add_u64(k, REGION_FAMILY_PEAK, ri->peak);
        r |= add_limit(k, REGION_FAMILY_MAX, ri->max);
        r |= add_limit(k, REGION_FAMILY_HIGH, ri->high);
        r |= add_limit(k, REGION_FAMILY_LOW, ri->low);
        r |= add_limit(k, REGION_FAMILY_MIN, ri->min);
        r |= add_limit(k, REGION_FAMILY_EFFECTIVE_MIN, ri->effective_min);
        r |= add_limit(k, REGION_FAMILY_EFFECTIVE_LOW, ri->effective_low);
        r |= add_u64(k, REGION_FAMILY_FAILCNT, ri->failcnt);
        r |= add_events(k, REGION_FAMILY_EVENTS, ri->events);
        r |= add_events(k, REGION_FAMILY_EVENTS_LOCAL, ri->events_local);
        r |= add_u64(k, REGION_FAMILY_KEPT, ri->kept);
        return r < 0 ? -ENOMEM : 0;
}

int metrics_regions_group(MetricsRegionTexts *t, char *label, const MemGroupInfo *info, bool basic) {
        char *end = label + strlen(label);
        int r = 0;

        for (unsigned i = 0; i < MIN(info->nr_regions, (unsigned) ELEMENTSOF(info->regions)) && r >= 0; i++) {
                /* The name is at most MEM_REGION_NAME_MAX bytes: escaped, METRICS_REGION_LABEL_MAX fits. */
                char *p = stpcpy(end, ",region=\"");

                p = metrics_escape_label(info->regions[i].name, p);
                strcpy(p, "\"");
                r = render_region(&(RegionSink) { .t = t, .label = label, .basic = basic }, &info->regions[i]);
        }
        /* The caller's label set as it was. */
        *end = 0;
        return r;
}

int metrics_regions_flush(MetricsRegionTexts *t, MetricsText *out) {
        int r = 0;

        for (size_t f = 0; f < _REGION_FAMILY_MAX && r >= 0; f++) {
                /* A family without samples (no group uses a region, or series=basic) is left out. */
                if (t->fam[f].len == 0)
                        continue;
                r = metrics_add_header(out, region_families[f].name, region_families[f].type,
                                       region_families[f].help);
                if (r >= 0)
                        r = metrics_text_add(out, t->fam[f].p, t->fam[f].len);
                metrics_text_done(&t->fam[f]);
        }
        return r;
}

void metrics_regions_done(MetricsRegionTexts *t) {
        for (size_t f = 0; f < _REGION_FAMILY_MAX; f++)
                metrics_text_done(&t->fam[f]);
}

/* The daemon-wide families, one sample per device region each. */
typedef enum RegionDaemonFamily {
        REGION_DAEMON_CAPACITY,
        REGION_DAEMON_USAGE,
        REGION_DAEMON_PEAK,
        REGION_DAEMON_GROUPS,
        _REGION_DAEMON_MAX,
} RegionDaemonFamily;

static const struct {
        const char *name, *help;
} region_daemon[_REGION_DAEMON_MAX] = {
        [REGION_DAEMON_CAPACITY] = { "memacct_region_capacity_bytes",
                                     "A device region's capacity, the root's max in it; +Inf when unlimited." },
        [REGION_DAEMON_USAGE] = { "memacct_region_usage_bytes",
                                  "Bytes charged in a device region in the whole tree." },
        [REGION_DAEMON_PEAK] = { "memacct_region_peak_bytes", "Peak of a device region's usage." },
        [REGION_DAEMON_GROUPS] = { "memacct_region_groups",
                                   "Groups with counters in a device region, the root included." },
};

static int region_daemon_sample(MetricsText *out, RegionDaemonFamily f, const char *label,
                                const MemRegionDesc *d) {
        char num[24];
        int n;

        switch (f) {
        case REGION_DAEMON_CAPACITY:
                n = metrics_text_printf(out, "%s{%s} %s\n", region_daemon[f].name, label,
                                        metrics_limit_value(d->capacity, num));
                break;
        case REGION_DAEMON_USAGE:
                n = metrics_text_printf(out, "%s{%s} %" PRIu64 "\n", region_daemon[f].name, label, d->current);
                break;
        case REGION_DAEMON_PEAK:
                n = metrics_text_printf(out, "%s{%s} %" PRIu64 "\n", region_daemon[f].name, label, d->peak);
                break;
        default:
                n = metrics_text_printf(out, "%s{%s} %u\n", region_daemon[f].name, label, d->groups);
                break;
        }
        return n < 0 ? -ENOMEM : 0;
}

int metrics_regions_daemon(Service *svc, MetricsText *out) {
        char label[METRICS_REGION_LABEL_MAX];
        MemRegionDesc *v;
        unsigned n = 0;
        Refusal rf;
        int r;

        /* Off the listener's stack: MEM_REGION_MAX descriptions are a few KiB. */
        v = calloc(MEM_REGION_MAX, sizeof(*v));
        if (!v)
                return -ENOMEM;
        refusal_init(&rf);
        /* The daemon's own peer reads the daemon's info: it is never refused. */
        r = service_list_regions(svc, service_daemon_peer(svc), v, MEM_REGION_MAX, &rf);
        /* "memory" (the first) is left out: its series are memacct_group_* and memacct_groups. */
        for (int i = 0; i < r; i++)
                if (strcmp(v[i].name, MEM_REGION_MEMORY_NAME) != 0)
                        v[n++] = v[i];
        r = 0;
        for (int f = 0; f < _REGION_DAEMON_MAX && n > 0 && r >= 0; f++) {
                r = metrics_add_header(out, region_daemon[f].name, "gauge", region_daemon[f].help);
                for (unsigned i = 0; i < n && r >= 0; i++) {
                        char *p = stpcpy(label, "region=\"");

                        p = metrics_escape_label(v[i].name, p);
                        strcpy(p, "\"");
                        r = region_daemon_sample(out, (RegionDaemonFamily) f, label, &v[i]);
                }
        }
        free(v);
        return r < 0 ? -ENOMEM : 0;
}
