/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The bus thread: the one thread that owns the sd_bus connection, runs it
 * on its own sd-event loop and serves org.memacct1 (bus-manager.c). The
 * core's events reach it through a bounded queue and an eventfd, so a slow
 * bus (or bus peer) costs the socket workers a mutex and a malloc at most,
 * never a wait.
 */

#include <stdint.h>

#include "core.h"
#include "request.h"

/* Events queued for the bus beyond this are dropped (and counted): the
 * groups' Events properties stay exact, only the signals are lost. */
#define BUS_EVENTS_MAX 4096

typedef struct BusThread BusThread;

/* Told, on the bus thread, that the connection to the bus was lost. */
typedef void (*BusLostFn)(void *userdata);

/**
 * bus_thread_new() - the state of a bus thread for @core, not started.
 * Adds itself as @d's event sink, so call it before any other thread uses
 * the core. @changed is called after every persistent change made over
 * the bus (as dispatch's). Return: 0, -ENOMEM, or eventfd()'s errno.
 */
int bus_thread_new(MemCore *core, Dispatch *d, DispatchChangedFn changed, void *changed_userdata,
                   BusThread **ret);

/**
 * bus_thread_start() - start the thread: it registers with the core,
 * connects to @address ("system", "user", or a D-Bus address such as
 * "unix:path=/run/x/bus"), registers the objects and acquires the name
 * org.memacct1. Returns once the name is ours, or failed. @lost is called
 * if the connection is lost later. Main thread.
 * Return: 0 or a negative errno (logged).
 */
int bus_thread_start(BusThread *t, const char *address, BusLostFn lost, void *lost_userdata);

/**
 * bus_thread_stop() - stop serving and join the thread: every bus peer's
 * session ends first, the connection is flushed and closed. Main thread;
 * harmless when not started.
 */
void bus_thread_stop(BusThread *t);

/** bus_thread_free() - stop if needed, stop being @d's event sink, free. */
BusThread *bus_thread_free(BusThread *t);
