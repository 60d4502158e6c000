/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods on the group hierarchy (org.memacct1(5)): entry
 * points of the manager's vtable (BUS_METHOD(), call.h); userdata is the
 * BusManager.
 */

#include <systemd/sd-bus.h>

/** bus_method_create_group() - CreateGroup(s path, a{st} limits, u owner): the new group's object. */
int bus_method_create_group(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_create_transient_group() - CreateTransientGroup(s path, a{st} limits, u owner), as CreateGroup. */
int bus_method_create_transient_group(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_remove_group() - RemoveGroup(s path). */
int bus_method_remove_group(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_set_limits() - SetLimits(s path, a{st} limits, b force). */
int bus_method_set_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_set_owner() - SetOwner(s path, u owner). */
int bus_method_set_owner(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_get_group() - GetGroup(s path): the group's object. */
int bus_method_get_group(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_groups() - ListGroups(s path, b recursive): a(so), path and object. */
int bus_method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_groups_page() - ListGroupsPage(s path, b recursive, s after, u limit): a page of ListGroups. */
int bus_method_list_groups_page(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_reset_peak() - ResetPeak(s path). */
int bus_method_reset_peak(sd_bus_message *msg, void *userdata, sd_bus_error *error);
