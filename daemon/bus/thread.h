/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The bus thread: the one thread that owns the sd_bus connection, runs it
 * on its own sd-event loop and serves org.memacct1 (manager.c, groups.c).
 * The service's events reach it through a bounded queue and an eventfd
 * (signals.c), so a slow bus (or bus peer) costs the threads that make
 * changes a mutex and a malloc at most, never a wait.
 */

#include <stdbool.h>

#include "service/service.h"

typedef struct BusThread BusThread;

/**
 * bus_thread_new() - the state of a bus thread for @svc, not started.
 * Sets itself as the sink of @svc's events, so call it before any other
 * thread uses the service. Return: 0, -ENOMEM, or eventfd()'s errno.
 */
int bus_thread_new(Service *svc, BusThread **ret);

/**
 * bus_thread_start() - start the thread: it registers with the service,
 * connects to @address ("system", "user", or a D-Bus address such as
 * "unix:path=/run/x/bus"), registers the objects and acquires the name
 * org.memacct1. Returns once the name is ours, or once the bus was found
 * unreachable (the thread then connects when it can). A connection lost
 * later is made again (thread.c). Main thread.
 * Return: 0, -EEXIST (another process owns the name) or another negative
 * errno (logged).
 */
int bus_thread_start(BusThread *t, const char *address);

/** bus_thread_connected() - is the name ours now? Any thread; false for NULL. */
bool bus_thread_connected(BusThread *t);

/**
 * bus_thread_stop() - stop serving and join the thread: every bus peer's
 * session ends first, the connection is flushed and closed. Main thread;
 * harmless when not started.
 */
void bus_thread_stop(BusThread *t);

/** bus_thread_free() - stop if needed, stop being the event sink, free. */
BusThread *bus_thread_free(BusThread *t);
