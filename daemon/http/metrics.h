/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The Prometheus metrics listener: GET /metrics in the text exposition
 * format 0.0.4, on a thread of its own with bufferevents of its own,
 * every connection bounded (metrics.c). Opt-in ([metrics] listen,
 * --metrics), without authentication: every group is exposed to whoever
 * can connect, so the address is loopback or a Unix socket unless the
 * configuration says otherwise.
 */

#include "base/config.h"
#include "service/service.h"

typedef struct Metrics Metrics;

/* The exposition format's media type. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * The name of the listener systemd may pass (FileDescriptorName= of
 * memacctd-metrics.socket): systemd opens it in the host's network
 * namespace, which a service with PrivateNetwork=yes cannot reach itself.
 */
#define METRICS_FDNAME "metrics"

/**
 * metrics_new() - take the listening socket systemd passed named
 * METRICS_FDNAME, or else bind and listen on @c's metrics_listen
 * (config_listen_parse() syntax), in the calling thread, so that a bad or
 * busy address fails the start, with the bounds of @c's [metrics] (read
 * once: @c may go after the call). A Unix socket file left by a dead
 * daemon is replaced.
 *
 * Return: 0, with *@ret NULL when there is nothing to serve (no socket
 * passed, no address); -EINVAL for an address that does not parse or a
 * passed socket that is not a listening stream socket; -errno of
 * socket(), bind() or listen(); -ENOMEM. Logged.
 */
int metrics_new(Service *svc, const Config *c, Metrics **ret);

/**
 * metrics_name() - what the listener is bound to, for messages (the port
 * the kernel chose when the address said 0).
 */
const char *metrics_name(Metrics *m);

/**
 * metrics_start() - start the thread serving the listener; it registers
 * with the service. Return: 0 or a negative errno (logged).
 */
int metrics_start(Metrics *m);

/** metrics_stop() - stop serving and join the thread; from the thread that started it. NULL is fine. */
void metrics_stop(Metrics *m);

/** metrics_free() - close the listener (removing its Unix socket file) and free a stopped Metrics. */
Metrics *metrics_free(Metrics *m);
