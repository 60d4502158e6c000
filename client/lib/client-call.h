/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Requests on the socket with the handle's lock held and no reconnection:
 * the synchronous call, and the requests the session and the stock are
 * built from (Hello, Attach, Subscribe, Charge and Uncharge).
 */

#include <stdbool.h>
#include <stdint.h>

#include "client.h"

#define MEMACCT_PROTOCOL_VERSION 1

/* A Charge or an Uncharge and the Request that carries it, on the caller's
 * stack (client_charge_request()). */
typedef struct ChargeRequest {
        Request req;
        Memacct__V1__Charge charge;
        Memacct__V1__Uncharge uncharge;
} ChargeRequest;

/**
 * client_wait_msec() - the handle's timeout as the connection takes it.
 * Lock held.
 * Return: the timeout in ms, or -1 for none.
 */
int client_wait_msec(const memacct *m);

/**
 * client_call_locked() - send @req and wait for its reply, lock held, no
 * reconnection. @fd_pass: a descriptor to pass, or -1.
 * Return: 0 and the reply (status OK) in @ret (may be NULL); the reply's
 * error; a transport error. Every error is recorded (client_error()).
 */
int client_call_locked(memacct *m, Request *req, int fd_pass, Response **ret);

/**
 * client_charge_request() - fill @cr with a Charge (@charge) or an
 * Uncharge of @bytes of @item to @path (NULL: the session's group), with
 * MEMACCT_KEEP and, on a charge, MEMACCT_FORCE from @flags. @cr borrows
 * @path. Any thread, on its own @cr.
 * Return: the request, in @cr.
 */
Request *client_charge_request(ChargeRequest *cr, bool charge, const char *path, uint64_t bytes,
                               unsigned item, unsigned flags);

/**
 * client_charge_margin() - the margin the Charge reply @resp reports.
 * Return: it, or UINT64_MAX (MEMACCT_UNLIMITED) when it has none.
 */
uint64_t client_charge_margin(const Response *resp);

/**
 * client_charge_locked() - an exact charge (never through the stock), as
 * client_call_locked(). @ret (may be NULL) receives the reply's outcome.
 * Return: 0 or a recorded error.
 */
int client_charge_locked(memacct *m, const char *path, uint64_t bytes, unsigned item,
                         unsigned flags, memacct_charge_result *ret);

/**
 * client_hello_locked() - the handshake on a fresh connection: check the
 * protocol version and take the server's name, pid, frame limit and
 * charge batch. Lock held.
 * Return: 0; -EPROTONOSUPPORT; a recorded error.
 */
int client_hello_locked(memacct *m);

/**
 * client_attach_locked() - Attach to @path, as client_call_locked(), and
 * note the group the reply names (client_attached_group_set()).
 */
int client_attach_locked(memacct *m, const char *path);

/** client_subscribe_locked() - Subscribe to @path in @region (NULL: memory's), as client_call_locked(). */
int client_subscribe_locked(memacct *m, const char *path, const char *region);
