/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods about the daemon and its sessions: GetInfo and
 * ListSessions (org.memacct1(5)). Entries of the manager's vtable;
 * userdata is the BusManager.
 */

#include <systemd/sd-bus.h>

/** bus_method_get_info() - GetInfo: service_get_info() as its out arguments. */
int bus_method_get_info(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_sessions() - ListSessions(s path): service_list_sessions() as a(uussstt). */
int bus_method_list_sessions(sd_bus_message *msg, void *userdata, sd_bus_error *error);
