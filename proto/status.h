/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The one table between core errors (negative errno), wire status codes
 * (memacct.v1.Status) and, later, D-Bus error names. Every transport maps
 * through it, so the socket and the bus can never disagree.
 */

#include <stdint.h>

/* Values of memacct.v1.Status, mirrored so that users of this table (the
 * client library among them) need no protobuf-c types. */
typedef enum MemStatus {
        MEM_STATUS_OK = 0,
        MEM_STATUS_INVALID_ARGUMENT = 1,
        MEM_STATUS_NOT_FOUND = 2,
        MEM_STATUS_EXISTS = 3,
        MEM_STATUS_BUSY = 4,
        MEM_STATUS_LIMIT_EXCEEDED = 5,
        MEM_STATUS_UNDERFLOW = 6,
        MEM_STATUS_PERMISSION_DENIED = 7,
        MEM_STATUS_RESOURCE_EXHAUSTED = 8,
        MEM_STATUS_PROTOCOL_ERROR = 9,
        MEM_STATUS_NOT_ATTACHED = 10,
        MEM_STATUS_INTERNAL = 11,
        _MEM_STATUS_MAX,
} MemStatus;

/** status_from_errno() - the wire status for a core error (r <= 0). */
MemStatus status_from_errno(int r);

/** status_to_errno() - the errno a client reports for a wire status. */
int status_to_errno(MemStatus s);

/** status_to_string() - "LIMIT_EXCEEDED" etc.; NULL when out of range. */
const char *status_to_string(MemStatus s);

/** status_to_dbus_error() - "org.memacct1.Error.LimitExceeded" etc. */
const char *status_to_dbus_error(MemStatus s);
