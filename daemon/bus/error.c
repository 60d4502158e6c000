/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * D-Bus errors from errno values and refusals (error.h).
 */

#include <stdarg.h>
#include <stdio.h>

#include "bus/error.h"
#include "status.h"

int bus_fail(sd_bus_error *error, int r, const char *fmt, ...) {
        char text[REFUSAL_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return sd_bus_error_set(error, status_to_dbus_error(status_from_errno(r)), text);
}

int bus_refusal(sd_bus_error *error, const Refusal *rf) {
        return sd_bus_error_set(error, status_to_dbus_error(status_from_errno(rf->error)), rf->message);
}
