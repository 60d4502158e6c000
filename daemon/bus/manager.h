/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus transport's objects (org.memacct1(5)): the manager object
 * /org/memacct1 (interface org.memacct1.Manager, plus the ObjectManager),
 * and one object per group under /org/memacct1/group/ (interface
 * org.memacct1.Group), served by a fallback vtable so that groups need no
 * registration of their own. proto/org.memacct1.xml is the reference; the
 * vtables match it (tests/dbus checks).
 *
 * Everything here runs on the bus thread (bus-thread.c), which owns the
 * sd_bus and is registered with the core: sd-bus is not thread-safe.
 */

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "core.h"
#include "request.h"

#define BUS_NAME "org.memacct1"
#define BUS_MANAGER_PATH "/org/memacct1"
#define BUS_MANAGER_INTERFACE "org.memacct1.Manager"
#define BUS_GROUP_PREFIX "/org/memacct1/group"
#define BUS_GROUP_INTERFACE "org.memacct1.Group"

/* CreateGroup's owner argument when no owner is given. */
#define BUS_NO_OWNER UINT32_MAX

/* What the Group property getters read: the group the last find callback
 * resolved, copied, so that no reference outlives the message. */
typedef struct BusGroupView {
        char path[MEM_PATH_MAX + 1];
        MemGroupInfo info;
} BusGroupView;

typedef struct BusManager {
        sd_bus *bus;
        MemCore *core;      /* NULL: only introspection is served */
        Dispatch *dispatch; /* read access, sessions of bus peers */
        DispatchChangedFn changed;
        void *changed_userdata;
        void *peers;        /* tsearch() tree of BusPeer, by unique name */
        BusGroupView view;
} BusManager;

/**
 * bus_manager_register() - add the manager's and the groups' vtables, the
 * node enumerator and the ObjectManager to @m->bus. The slots live as long
 * as the connection. Return: 0 or a negative errno.
 */
int bus_manager_register(BusManager *m);

/** bus_manager_done() - forget every peer: their sessions end, their charges are released. */
void bus_manager_done(BusManager *m);

/** bus_manager_may_broadcast() - may signals carry group data? Only while reads are open to all. */
bool bus_manager_may_broadcast(BusManager *m);

/**
 * bus_fail() - set @error to the D-Bus error of core error @r
 * (status_to_dbus_error(status_from_errno(@r))) with a formatted message.
 * Return: a negative errno, for a method handler to return.
 */
int bus_fail(sd_bus_error *error, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** bus_group_object_path() - the object path of group @path (sd_bus_path_encode()). */
int bus_group_object_path(const char *path, char **ret);

/** bus_group_register() - the Group fallback vtable and the node enumerator (bus-group.c). */
int bus_group_register(BusManager *m);

/**
 * bus_introspect() - --bus-introspect: print the introspection XML of
 * @object_path ("list": the object paths there are) to @out, from the
 * vtables, over an in-process peer-to-peer connection. No core needed.
 * Return: 0 or a negative errno (logged).
 */
int bus_introspect(const char *object_path, FILE *out);
