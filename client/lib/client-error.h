/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The details of the last failure, per thread, behind memacct_last_error()
 * and memacct_refused_path(). Every failing call of the library records
 * its error here on its way out.
 */

#include <stdbool.h>

#include "memacct.h"

/**
 * client_error() - record @r with @message (NULL or "": strerror()) and
 * @refused_path (the group whose limit refused, or NULL) as this thread's
 * last error on @m. Any thread.
 * Return: @r.
 */
int client_error(const memacct *m, int r, const char *message, const char *refused_path);

/**
 * client_error_is() - whether this thread's last error is @r, on @m: a
 * caller that may or may not have recorded it already asks. Any thread.
 */
bool client_error_is(const memacct *m, int r);

/**
 * client_bus_unsupported() - record and return -EOPNOTSUPP: @what has no
 * D-Bus form. Any thread.
 */
int client_bus_unsupported(const memacct *m, const char *what);

/**
 * client_error_connect_failed() - the handle of a memacct_connect() that
 * failed is closed: keep its error readable through
 * memacct_last_error(NULL). In the thread that connected, after the close.
 */
void client_error_connect_failed(void);

/**
 * client_error_forget() - @m is being closed: this thread's last error no
 * longer belongs to a handle (another may be allocated at its address).
 */
void client_error_forget(const memacct *m);
