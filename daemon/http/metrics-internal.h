/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Inside the metrics listener: the text buffers an answer is built in, and
 * the request-to-response step that metrics.c runs for every request read
 * and tests/fuzz/fuzz-metrics.c runs without a socket.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "http/http-request.h"
#include "service/service.h"

/*
 * Text in pages of its own (anonymous mappings, grown with mremap()), so
 * that freeing an answer gives its memory back to the kernel at once:
 * through malloc, the many small chunks of one big answer stay in the
 * allocator's arena after it is freed, and a few scrapes to clients that
 * never read left the daemon hundreds of MiB larger for good.
 */
typedef struct MetricsText {
        char *p;
        size_t len, cap; /* cap: bytes mapped; 0 with p NULL before the first write */
} MetricsText;

/** metrics_text_add() - append @n bytes. Return: 0 or -ENOMEM. */
int metrics_text_add(MetricsText *t, const void *data, size_t n);

/** metrics_text_printf() - append formatted text. Return: 0 or -ENOMEM. */
int metrics_text_printf(MetricsText *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

/** metrics_text_done() - unmap @t and reset it to empty. An empty one is fine. */
void metrics_text_done(MetricsText *t);

/** metrics_text_steal() - hand @t's pages over (free with metrics_text_unmap()); @t is left empty. */
void *metrics_text_steal(MetricsText *t, size_t *ret_cap);

/** metrics_text_unmap() - free pages taken with metrics_text_steal(). */
void metrics_text_unmap(void *p, size_t cap);

/*
 * metrics_escape_label() - @s as a label value of the exposition format:
 * backslash, double quote and line feed escaped, into @buf, which holds
 * 2 * strlen(@s) + 1 bytes. Pure. Return: the end of what was written
 * (its NUL).
 */
char *metrics_escape_label(const char *s, char *buf);

/** metrics_add_header() - the HELP and TYPE lines of family @name. Return: 0 or -ENOMEM. */
int metrics_add_header(MetricsText *out, const char *name, const char *type, const char *help);

/**
 * metrics_limit_value() - a limit or protection as a sample value:
 * UINT64_MAX ("max") is +Inf, never 18446744073709551615. Return: @buf
 * holding the number, or "+Inf".
 */
const char *metrics_limit_value(uint64_t v, char buf[static 24]);

/* What one scrape exports: the query (metrics-query.c) and the cap. */
typedef struct MetricsQuery {
        char prefix[MEM_PATH_MAX + 1]; /* the subtree exported; "/" unless prefix= */
        unsigned depth;                /* levels below the prefix; UINT_MAX: all */
        int basic;                     /* series=: 1 basic, 0 full; -1 not given: [metrics] series */
} MetricsQuery;

/**
 * metrics_query_parse() - the query string @q (@n bytes, NULL: none) of a
 * scrape: "depth=N", "prefix=/path" (percent-decoded) and
 * "series=basic|full", each at most once, nothing else. The prefix's syntax as a group path is checked by
 * the lookup, not here. Pure; any thread.
 *
 * Return: 0, or -EINVAL with a one-line reason in @reason (@reason_size bytes).
 */
int metrics_query_parse(const char *q, size_t n, MetricsQuery *ret, char *reason, size_t reason_size);

/* A kernel cgroup mirror as a scrape labels it. */
typedef struct MetricsMirror {
        char *group, *cgroup;
} MetricsMirror;

/* A copy of the mirror table, sorted by group (metrics-mirrors.c). */
typedef struct MetricsMirrors {
        MetricsMirror *v;
        size_t n;
        size_t cgroup_max; /* the longest cgroup path, for the label buffer */
} MetricsMirrors;

/**
 * metrics_mirrors_load() - copy @svc's kernel cgroup mirrors (none when
 * there is no cgroup object) into @ret, taking and releasing the cgroup
 * lock; before the walk of the tree, never from inside it. On a thread
 * registered with the service. Return: 0 or -ENOMEM (@ret is then empty).
 */
int metrics_mirrors_load(Service *svc, MetricsMirrors *ret);

/** metrics_mirrors_find() - the cgroup @group mirrors, or NULL; a binary search. */
const char *metrics_mirrors_find(const MetricsMirrors *t, const char *group);

/** metrics_mirrors_done() - free @t's copy and reset it to empty. */
void metrics_mirrors_done(MetricsMirrors *t);

/* A group's families in device regions (metrics-regions.c), one text each while a scrape walks. */
typedef enum MetricsRegionFamily {
        REGION_FAMILY_USAGE,
        REGION_FAMILY_PEAK,
        REGION_FAMILY_MAX,
        REGION_FAMILY_HIGH,
        REGION_FAMILY_LOW,
        REGION_FAMILY_MIN,
        REGION_FAMILY_EFFECTIVE_MIN,
        REGION_FAMILY_EFFECTIVE_LOW,
        REGION_FAMILY_FAILCNT,
        REGION_FAMILY_EVENTS,
        REGION_FAMILY_EVENTS_LOCAL,
        REGION_FAMILY_KEPT,
        _REGION_FAMILY_MAX,
} MetricsRegionFamily;

typedef struct MetricsRegionTexts {
        MetricsText fam[_REGION_FAMILY_MAX];
} MetricsRegionTexts;

/* What a group's label set grows by in a region's series: ,region="NAME", the name escaped. */
#define METRICS_REGION_LABEL_MAX (2 * MEM_REGION_NAME_MAX + sizeof(",region=\"\""))

/**
 * metrics_regions_group() - the samples of @info's device regions (none
 * for a group that has no counters in one) appended to @t's families,
 * each labelled @label and region="NAME"; with @basic only the basic
 * families (usage, peak, the four limits, failcnt, events_local). @label
 * is the group's label set, in a buffer with METRICS_REGION_LABEL_MAX
 * bytes to spare after its NUL: the region's label is written there and
 * taken away again. Pure. Return: 0 or -ENOMEM.
 */
int metrics_regions_group(MetricsRegionTexts *t, char *label, const MemGroupInfo *info, bool basic);

/**
 * metrics_regions_flush() - append each of @t's families that has samples
 * to @out, after its HELP and TYPE, freeing each text as it goes.
 * Return: 0 or -ENOMEM (@t then still needs metrics_regions_done()).
 */
int metrics_regions_flush(MetricsRegionTexts *t, MetricsText *out);

/** metrics_regions_done() - free @t's texts; an empty or flushed one is fine. */
void metrics_regions_done(MetricsRegionTexts *t);

/**
 * metrics_regions_daemon() - the daemon-wide series of each device region
 * (capacity, usage, peak, groups with counters in it) appended to @out;
 * nothing when there is none. On a thread registered with the service.
 * Return: 0 or -ENOMEM.
 */
int metrics_regions_daemon(Service *svc, MetricsText *out);

/**
 * metrics_render() - the exposition of @svc appended to @out: the groups
 * @mq selects (at most @max_groups of them, parents first), how many were
 * exported and why not all, and the daemon-wide metrics. On a thread
 * registered with the service.
 *
 * Return: 0; -ENOMEM (@out may then hold part of it); or the lookup's
 * error for @mq's prefix with @rf (-ENOENT: no such group, -EINVAL and
 * others: not a group path), @out then untouched.
 */
int metrics_render(Service *svc, const MetricsQuery *mq, unsigned max_groups, MetricsText *out, Refusal *rf);

/**
 * metrics_render_self() - the daemon's own series (metrics-self.c):
 * memacctd_* counters, gauges and histograms, process_*, build info,
 * appended to @out. Any thread. Return: 0 or -ENOMEM.
 */
int metrics_render_self(MetricsText *out);

/* One answer: the status line and headers, then the body (empty for HEAD). */
typedef struct MetricsResponse {
        unsigned status;
        MetricsText head, body;
        bool close; /* the connection closes once it is sent */
} MetricsResponse;

/** metrics_response_done() - free both parts. */
void metrics_response_done(MetricsResponse *resp);

/**
 * metrics_respond() - the answer to @req, a request http_request_parse()
 * accepted: the exposition for GET /metrics (the head alone for HEAD) with
 * at most @max_groups groups ([metrics] max-groups), each with the basic
 * series alone when @basic ([metrics] series; the query's series= wins),
 * 400 for a bad query
 * or prefix, 404 for another path or a prefix that is no group, 405 for
 * another method. On a thread registered with the service, as
 * metrics_render().
 *
 * Return: 0, or -ENOMEM (@ret is then empty).
 */
int metrics_respond(Service *svc, const HttpRequest *req, unsigned max_groups, bool basic, MetricsResponse *ret);

/**
 * metrics_respond_error() - the answer that closes a connection for
 * @error: an http_request_parse() error, -ETIMEDOUT (408: the head did not
 * come in time) or -EBUSY (503: too many connections or too much unsent).
 * Any thread.
 *
 * Return: 0, or -ENOMEM.
 */
int metrics_respond_error(int error, MetricsResponse *ret);
