/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A group's limits on the bus: an a{st} of max, high, low and min
 * (org.memacct1(5)), each at most once, the absent ones not set.
 */

#include <systemd/sd-bus.h>

#include "core/model.h"

/**
 * bus_read_limits() - read an a{st} of limits from @msg into @ret.
 * Return: 0; a negative errno, with @error set for an unknown key or one
 * given twice.
 */
int bus_read_limits(sd_bus_message *msg, MemLimits *ret, sd_bus_error *error);

/** bus_append_limits() - append the limits set in @l to @reply as an a{st}. Return: >= 0, or a negative errno. */
int bus_append_limits(sd_bus_message *reply, const MemLimits *l);
