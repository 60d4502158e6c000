/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct without its D-Bus transport: what the socket's files call of
 * it, answered "not here". Linked instead of client-bus*.c into the
 * socket-only copy of the library that libmemacct-cuda.so carries
 * (client/cuda/meson.build), so that a preloaded interposer needs nothing
 * of a container's image but libc: no libsystemd, and none of what
 * libsystemd needs.
 */

#include <errno.h>

#include "client-bus-import.h"
#include "client-error.h"
#include "macro.h"

_public_ int memacct_connect_bus(const char *address, memacct **ret) {
        (void) address, (void) ret;
        return -EOPNOTSUPP;
}

int client_bus_import_report(memacct *m, const char *from, const char *under, unsigned flags,
                             memacct_import_report *r) {
        (void) from, (void) under, (void) flags, (void) r;
        return client_bus_unsupported(m, "D-Bus in this copy of libmemacct");
}
