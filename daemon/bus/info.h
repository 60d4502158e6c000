/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's method about the daemon itself: GetInfo
 * (org.memacct1(5)), an entry point of the manager's vtable (BUS_METHOD(),
 * call.h); userdata is the BusManager.
 */

#include <systemd/sd-bus.h>

/** bus_method_get_info() - GetInfo: service_get_info() as its out arguments. */
int bus_method_get_info(sd_bus_message *msg, void *userdata, sd_bus_error *error);
