/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Failures as D-Bus errors: the name from the one status table
 * (proto/status.c, "org.memacct1.Error.LimitExceeded" etc.), the message
 * the service layer wrote, word for word as the socket sends it.
 */

#include <systemd/sd-bus.h>

#include "base/refusal.h"

/**
 * bus_fail() - set @error to the D-Bus error of errno @r with a formatted
 * message (for what the bus decodes itself: its argument types). Return:
 * a negative errno, for a method handler to return.
 */
int bus_fail(sd_bus_error *error, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** bus_refusal() - set @error from a service refusal. Return: a negative errno. */
int bus_refusal(sd_bus_error *error, const Refusal *rf);
