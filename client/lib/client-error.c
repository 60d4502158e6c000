/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The last error, per thread: its errno, its message, the group that
 * refused (for -EDQUOT), and the handle it happened on. Thread-local, so
 * that threads sharing a handle never read each other's errors and no
 * lock is needed. Invariant: memacct_last_error(m) and
 * memacct_refused_path(m) answer only for the handle recorded last
 * (err_owner), and memacct_last_error(NULL) only for a memacct_connect()
 * that failed, whose handle is gone.
 */

#include <stdio.h>
#include <string.h>

#include "client-error.h"
#include "macro.h"

static __thread const memacct *err_owner;
static __thread char err_message[512];
static __thread char err_refused[1024];
static __thread bool err_has_refused;
static __thread int err_r;
static __thread bool err_connect_failed; /* the last error: a failed memacct_connect() */

int client_error(const memacct *m, int r, const char *message, const char *refused_path) {
        err_owner = m;
        err_connect_failed = false;
        err_r = r;
        snprintf(err_message, sizeof(err_message), "%s",
                 message && *message ? message : strerror(-r));
        err_has_refused = refused_path && *refused_path;
        snprintf(err_refused, sizeof(err_refused), "%s", err_has_refused ? refused_path : "");
        return r;
}

bool client_error_is(const memacct *m, int r) {
        return err_owner == m && err_r == r;
}

int client_bus_unsupported(const memacct *m, const char *what) {
        char msg[128];

        snprintf(msg, sizeof(msg), "%s has no D-Bus form: use the socket", what);
        return client_error(m, -EOPNOTSUPP, msg, NULL);
}

void client_error_connect_failed(void) {
        err_owner = NULL;
        err_connect_failed = true;
}

void client_error_forget(const memacct *m) {
        if (err_owner == m)
                err_owner = NULL;
}

_public_ const char *memacct_last_error(memacct *m) {
        if (!m)
                return err_connect_failed ? err_message : NULL;
        return err_owner == m ? err_message : NULL;
}

_public_ const char *memacct_refused_path(memacct *m) {
        return m && err_owner == m && err_has_refused ? err_refused : NULL;
}
