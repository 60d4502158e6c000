/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The names org.memacct1(5) defines, and the object path of a group:
 * sd_bus_path_encode() of its path under BUS_GROUP_PREFIX ("/" is
 * .../group/_2f, "/a/b" is .../group/_2fa_2fb); sd_bus_path_decode() is
 * its inverse.
 */

#include <systemd/sd-bus.h>

#define BUS_NAME "org.memacct1"
#define BUS_MANAGER_PATH "/org/memacct1"
#define BUS_MANAGER_INTERFACE "org.memacct1.Manager"
#define BUS_GROUP_PREFIX "/org/memacct1/group"
#define BUS_GROUP_INTERFACE "org.memacct1.Group"

/* CreateGroup's owner argument when no owner is given. */
#define BUS_NO_OWNER UINT32_MAX

/** bus_group_object_path() - the object path of group @path, in a new string. Return: 0 or -ENOMEM. */
static inline int bus_group_object_path(const char *path, char **ret) {
        return sd_bus_path_encode(BUS_GROUP_PREFIX, path, ret);
}
