/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Status table: core errno <-> wire status <-> D-Bus error name. Several
 * errno values map to one status (a bad path is INVALID_ARGUMENT whether
 * it is too long or holds a bad character); each status maps back to the
 * errno the core uses for its most common cause.
 */

#include <errno.h>
#include <stddef.h>

#include "status.h"

static const struct {
        const char *name;
        const char *dbus;
        int errno_value;
} statuses[_MEM_STATUS_MAX] = {
        [MEM_STATUS_OK] = { "OK", NULL, 0 },
        [MEM_STATUS_INVALID_ARGUMENT] = { "INVALID_ARGUMENT", "org.memacct1.Error.InvalidArgument", EINVAL },
        [MEM_STATUS_NOT_FOUND] = { "NOT_FOUND", "org.memacct1.Error.NotFound", ENOENT },
        [MEM_STATUS_EXISTS] = { "EXISTS", "org.memacct1.Error.Exists", EEXIST },
        [MEM_STATUS_BUSY] = { "BUSY", "org.memacct1.Error.Busy", EBUSY },
        [MEM_STATUS_LIMIT_EXCEEDED] = { "LIMIT_EXCEEDED", "org.memacct1.Error.LimitExceeded", EDQUOT },
        [MEM_STATUS_UNDERFLOW] = { "UNDERFLOW", "org.memacct1.Error.Underflow", ERANGE },
        [MEM_STATUS_PERMISSION_DENIED] = { "PERMISSION_DENIED", "org.memacct1.Error.PermissionDenied", EPERM },
        [MEM_STATUS_RESOURCE_EXHAUSTED] = { "RESOURCE_EXHAUSTED", "org.memacct1.Error.ResourceExhausted", ENOSPC },
        [MEM_STATUS_PROTOCOL_ERROR] = { "PROTOCOL_ERROR", "org.memacct1.Error.ProtocolError", EPROTO },
        [MEM_STATUS_NOT_ATTACHED] = { "NOT_ATTACHED", "org.memacct1.Error.NotAttached", ENOTCONN },
        [MEM_STATUS_INTERNAL] = { "INTERNAL", "org.memacct1.Error.Internal", EIO },
};

MemStatus status_from_errno(int r) {
        switch (r) {
        case 0:
                return MEM_STATUS_OK;
        case -EINVAL:
        case -ENAMETOOLONG:
        case -EOVERFLOW:
                return MEM_STATUS_INVALID_ARGUMENT;
        case -ENOENT:
        case -ESRCH:
                return MEM_STATUS_NOT_FOUND;
        case -EEXIST:
                return MEM_STATUS_EXISTS;
        case -EBUSY:
                return MEM_STATUS_BUSY;
        case -EDQUOT:
                return MEM_STATUS_LIMIT_EXCEEDED;
        case -ERANGE:
                return MEM_STATUS_UNDERFLOW;
        case -EPERM:
        case -EACCES:
                return MEM_STATUS_PERMISSION_DENIED;
        case -ENOSPC:
        case -EMLINK:
        case -ENOMEM:
        case -EUSERS:
                return MEM_STATUS_RESOURCE_EXHAUSTED;
        case -EPROTO:
        case -EBADMSG:
        case -EMSGSIZE:
                return MEM_STATUS_PROTOCOL_ERROR;
        case -ENOTCONN:
                return MEM_STATUS_NOT_ATTACHED;
        default:
                return MEM_STATUS_INTERNAL;
        }
}

int status_to_errno(MemStatus s) {
        if ((unsigned) s >= _MEM_STATUS_MAX)
                return -EIO;
        return -statuses[s].errno_value;
}

const char *status_to_string(MemStatus s) {
        if ((unsigned) s >= _MEM_STATUS_MAX)
                return NULL;
        return statuses[s].name;
}

const char *status_to_dbus_error(MemStatus s) {
        if ((unsigned) s >= _MEM_STATUS_MAX)
                return NULL;
        return statuses[s].dbus;
}
