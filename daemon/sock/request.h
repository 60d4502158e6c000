/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The socket's requests: one frame body is one memacct.v1.Request. Decode
 * it, make its one service call, encode one Response into the
 * connection's output. No socket I/O here: the connection layer (conn.c)
 * owns file descriptors, buffers and event loops, and hands whole frame
 * bodies in.
 */

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#include "service/service.h"

/* request_serve()'s and request_hot_serve()'s "held, serve it again later". */
#define REQUEST_WAIT 2

/**
 * request_serve() - serve one frame body of peer @p and append exactly
 * one framed Response (prefix + body) to @out.
 * @fd: a file descriptor that arrived with the frame (SCM_RIGHTS), or -1;
 *      closed here in every case
 * @ret_id: optional; the request's id (0 when it had none or was malformed)
 *
 * Return: 0; REQUEST_WAIT: nothing was appended, the request waits for
 * reclaim (service_reclaim_wait_usec()) and is to be served again, the
 * same frame, once that says 0; or -EPROTO when the request was
 * malformed: the PROTOCOL_ERROR response is in @out, and the connection
 * must end once it is written.
 */
int request_serve(Service *svc, Peer *p, const uint8_t *body, size_t len, int fd, struct evbuffer *out,
                  uint64_t *ret_id);

/**
 * request_status_append() - append a Response with id 0, the status of
 * @r and @message: the PROTOCOL_ERROR of a framing error the connection
 * layer found (bad varint, frame over the limit, half frame timed out;
 * the connection then ends), or the one answer a refused connection gets.
 * Return: 0 or a negative errno.
 */
int request_status_append(int r, const char *message, struct evbuffer *out);

/**
 * request_refusal_append() - append the Response to request @id that
 * @rf's refusal is (an OK that could not stand: its change was not saved).
 * Return: 0 or a negative errno.
 */
int request_refusal_append(uint64_t id, const Refusal *rf, struct evbuffer *out);
