/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacct_import_cgroups_report() over D-Bus: ImportCgroupsKeepingLimits
 * and its reply, apart from client-import.c so that a socket-only build
 * (client-bus-none.c) leaves sd-bus out.
 */

#include "memacct.h"

/* An import's report: the counts, and the kept limits group by group
 * (memacct_import_report_*()); the socket's and the bus's readers fill it. */
struct memacct_import_report {
        memacct_import_result counts;
        unsigned kernel_limits;
        uint32_t kept;
        memacct_kept_limits *v;
        size_t n;
};

/** client_bus_import_report() - the import on a bus handle, its report into @r. Return: 0, < 0. */
int client_bus_import_report(memacct *m, const char *from, const char *under, unsigned flags,
                             memacct_import_report *r);
