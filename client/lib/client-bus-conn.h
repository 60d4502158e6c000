/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus transport's connection, shared by its modules: the transport's
 * state in the handle, the lock, method calls on the manager, and the
 * mapping of errors to the errno the socket reports.
 */

#include <stdint.h>

#include <systemd/sd-bus.h>

#include "client-event-queue.h"
#include "client.h"

#define BUS_NAME "org.memacct1"
#define BUS_PATH "/org/memacct1"
#define BUS_MANAGER BUS_NAME ".Manager"
#define BUS_GROUP BUS_NAME ".Group"

/* A subscription: a subtree and whose events (client-bus-events.c). */
typedef struct BusSubscription {
        char *path;
        char *region; /* NULL: memory's; "*": every region's; else a device region's */
} BusSubscription;

struct BusConn {
        sd_bus *bus;
        sd_bus_slot *match;        /* Event or EventBy, from the first subscription to memory's on */
        sd_bus_slot *region_match; /* RegionEvent or RegionEventBy, from the first to a device region's */
        BusSubscription *subs;
        size_t n_subs;
        EventQueue events;       /* what subs want, each path behind its region (client-bus-events.c) */
        const char *last_region; /* the region of the event popped last, in events.last; NULL: none yet */
        int wake_fd;             /* kicked when a call ends while a thread sleeps (bus_sleep_locked()) */
        unsigned sleepers;
        /* Reclaim (client-bus-reclaim.c). */
        sd_bus_slot *reclaim_match; /* ReclaimRequest, from the first declaration on */
        char *reclaim_sender;       /* the daemon's unique name, as its last SetReclaimable reply said */
        int notify_fd;              /* kicked when something waits in a queue: memacct_fd() polls it */
        int poll_fd;                /* memacct_fd(): an epoll of the bus fd and notify_fd; -1 until asked */
};

/** bus_lock() - take the handle's lock for a use of sd-bus. */
void bus_lock(memacct *m);

/**
 * bus_unlock() - release it, waking a thread asleep in
 * memacct_next_event(): this thread's calls may have read its signals.
 */
void bus_unlock(memacct *m);

/**
 * bus_sleep_locked() - wait up to @left_msec (-1: forever) for the bus fd,
 * another thread's call to end, or sd-bus's own deadline, with the lock
 * released meanwhile; taken again before it returns. Lock held.
 * Return: 0; -EINTR (a signal) or a transport error, recorded.
 */
int bus_sleep_locked(memacct *m, int left_msec);

/** bus_call_timeout_usec() - the handle's timeout as sd-bus takes it (UINT64_MAX: none). */
uint64_t bus_call_timeout_usec(const memacct *m);

/**
 * bus_fail() - record a failure: @e the error reply, if there was one;
 * else @r, what sd-bus returned. Lock held (or in a reply callback).
 * Return: the errno the socket would report for the same failure.
 */
int bus_fail(const memacct *m, const sd_bus_error *e, int r);

/**
 * bus_manager_call_new() - a method call of @member on the manager, in
 * @ret. Lock held.
 * Return: 0 or the recorded error.
 */
int bus_manager_call_new(memacct *m, const char *member, sd_bus_message **ret);

/**
 * bus_call_locked() - send @call and wait for its reply. Lock held.
 * Return: 0 and the reply in @ret_reply (if not NULL), or the recorded
 * error.
 */
int bus_call_locked(memacct *m, sd_bus_message *call, sd_bus_message **ret_reply);

/**
 * bus_send_locked() - bus_call_locked() of @call, built with the outcome
 * @r (< 0: building it failed, and that is recorded instead), then unref
 * @call. Lock held.
 * Return: as bus_call_locked().
 */
int bus_send_locked(memacct *m, sd_bus_message *call, int r, sd_bus_message **ret_reply);

/**
 * bus_manager_call_locked() - call @member on the manager with basic
 * arguments of @types (sd_bus_message_append() types), and wait. Lock
 * held.
 * Return: as bus_call_locked().
 */
int bus_manager_call_locked(memacct *m, const char *member, sd_bus_message **ret_reply,
                            const char *types, ...);

/**
 * bus_manager_path_call() - call @member, whose one argument is a group
 * @path and whose reply is empty. Takes the lock.
 * Return: as bus_call_locked().
 */
int bus_manager_path_call(memacct *m, const char *member, const char *path);
