/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Inside the metrics listener: the text buffers an answer is built in, and
 * the request-to-response step that metrics.c runs for every request read
 * and tests/fuzz/fuzz-metrics.c runs without a socket.
 */

#include <stdbool.h>
#include <stddef.h>

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

/**
 * metrics_render() - the whole exposition of @svc appended to @out: every
 * group and the daemon-wide metrics. On a thread registered with the
 * service.
 *
 * Return: 0 or -ENOMEM (@out may then hold part of it).
 */
int metrics_render(Service *svc, MetricsText *out);

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
 * accepted: the exposition for GET /metrics (the head alone for HEAD),
 * 404 for another path, 405 for another method. On a thread registered
 * with the service, as metrics_render().
 *
 * Return: 0, or -ENOMEM (@ret is then empty).
 */
int metrics_respond(Service *svc, const HttpRequest *req, MetricsResponse *ret);

/**
 * metrics_respond_error() - the answer that closes a connection for
 * @error: an http_request_parse() error, -ETIMEDOUT (408: the head did not
 * come in time) or -EBUSY (503: too many connections or too much unsent).
 * Any thread.
 *
 * Return: 0, or -ENOMEM.
 */
int metrics_respond_error(int error, MetricsResponse *ret);
