/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon at a glance and its sessions over D-Bus (GetInfo). */

#include "client.h"

/** bus_get_info() - memacct_get_info() on a bus handle. */
int bus_get_info(memacct *m, memacct_server_info **ret);

/** bus_list_sessions() - memacct_list_sessions() on a bus handle. */
int bus_list_sessions(memacct *m, const char *path, memacct_sessions **ret);
