/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One call of a manager method, being served: what every handler gets
 * (BusCall), the one signature of a handler (BusMethodFn), and what a
 * handler does besides its service call: learn who calls, refuse, reply.
 *
 * The manager's vtable (manager.c) is the one table of methods: member,
 * in and out arguments, and an entry point that BUS_METHOD() makes from a
 * handler and the operation it counts as. Every entry point goes through
 * bus_call_dispatch(), the bus's one dispatch point for the request
 * counts. A handler decodes its arguments, asks for its caller
 * (bus_call_caller()), makes one service call, and encodes the result.
 * Bus thread only.
 */

#include <systemd/sd-bus.h>

#include "base/refusal.h"
#include "base/selfstats.h"
#include "service/service.h"

typedef struct BusManager BusManager;
typedef struct BusPeer BusPeer;
typedef struct BusCall BusCall;

/* A method handler: 0 or more once it replied (or held the call,
 * park.h), a negative errno (with c->error set, or sd-bus makes the
 * error from the errno) when not. */
typedef int (*BusMethodFn)(BusCall *c);

struct BusCall {
        BusManager *manager;
        Service *svc;        /* the manager's */
        sd_bus_message *msg; /* the call: the arguments are read from it */
        sd_bus_error *error; /* set: the error reply */
        BusPeer *caller;     /* NULL until bus_call_caller() */
        Refusal rf;          /* the service's refusal, for bus_call_refused() */
        BusMethodFn fn;      /* the handler serving it, which serves it again after a wait */
        ServiceOp op;        /* what it counts as */
        bool parked;         /* held for a round of reclaim (park.h): not counted yet */
};

/**
 * bus_call_dispatch() - serve @msg with handler @fn and count it as one
 * request of @op, with the status its end maps to (a refusal's error name
 * maps back through proto/status.c); or, when the sender has a call
 * waiting for reclaim, queue it behind that one (park.h). A reply held
 * for a save counts when the handler returns, before the save; a call
 * held for reclaim when it is served for the last time.
 * Return: what @fn returned.
 */
int bus_call_dispatch(BusManager *m, sd_bus_message *msg, sd_bus_error *error, BusMethodFn fn, ServiceOp op);

/** bus_call_serve() - bus_call_dispatch() but the queue: @msg is served now. */
int bus_call_serve(BusManager *m, sd_bus_message *msg, sd_bus_error *error, BusMethodFn fn, ServiceOp op);

/*
 * BUS_METHOD() - the vtable entry point @name (an
 * sd_bus_message_handler_t; userdata is the BusManager) that serves a
 * call with handler @fn, counted as @op.
 */
#define BUS_METHOD(name, fn, op)                                                     \
        int name(sd_bus_message *msg, void *userdata, sd_bus_error *error) {         \
                return bus_call_dispatch(userdata, msg, error, fn, op);              \
        }

/**
 * bus_call_caller() - the service's peer for the sender of @c, known or
 * asked for now (bus_peer_get()), into @ret; counts one request served.
 * Every handler asks, once its arguments are decoded.
 * Return: 0, or a negative errno with c->error set.
 */
int bus_call_caller(BusCall *c, Peer **ret);

/** bus_call_refused() - the service's refusal c->rf as the error reply. Return: a negative errno. */
int bus_call_refused(BusCall *c);

/**
 * bus_call_send() - send @reply to @c now, or hold it until the change
 * the caller's operation just made (if any) is saved; an error reply when
 * that change cannot be saved (held.h). After bus_call_caller().
 * Return: >= 0, or a negative errno.
 */
int bus_call_send(BusCall *c, sd_bus_message *reply);

/** bus_call_return() - the method return of @c with @types (NULL: none) and the values after it, by bus_call_send(). */
int bus_call_return(BusCall *c, const char *types, ...);

/**
 * bus_call_done() - the end of a change that replies nothing: held while
 * reclaim runs when @r is -EINPROGRESS (park.h), the refusal when @r < 0,
 * else the change's signals (bus_manager_flush()) and an empty return,
 * by bus_call_send().
 */
int bus_call_done(BusCall *c, int r);

/** bus_call_new_array() - the method return of @c, with an array of @contents open for a listing to fill. */
int bus_call_new_array(BusCall *c, const char *contents, sd_bus_message **ret);

/** bus_array_send() - close the array of @reply (bus_call_new_array()) and send it now. */
int bus_array_send(sd_bus_message *reply);

/* A service operation whose one argument is a group's (or a rule's) path, or a region's name. */
typedef int (*BusPathOp)(Service *svc, Peer *p, const char *path, Refusal *rf);

/**
 * bus_call_path() - a change whose one argument is a path: read it, ask
 * for the caller, @op, and bus_call_done().
 */
int bus_call_path(BusCall *c, BusPathOp op);
