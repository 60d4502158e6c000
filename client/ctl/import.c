/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl import-cgroups: what the daemon reports of an import, in
 * words. A limit a user set on a mirror is the user's and an import
 * keeps it (memacct(7), KERNEL CGROUP MIRRORS); saying so after the
 * counts is what keeps that rule from looking like a lost update.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "import.h"
#include "macro.h"
#include "output.h"

static const struct {
        const char *name;
        unsigned bit;
} limits[] = {
        { "max", MEMACCT_LIMIT_MAX },
        { "high", MEMACCT_LIMIT_HIGH },
        { "low", MEMACCT_LIMIT_LOW },
        { "min", MEMACCT_LIMIT_MIN },
};

static uint64_t limit_value(const memacct_limits *l, unsigned bit) {
        switch (bit) {
        case MEMACCT_LIMIT_MAX: return l->max;
        case MEMACCT_LIMIT_HIGH: return l->high;
        case MEMACCT_LIMIT_LOW: return l->low;
        default: return l->min;
        }
}

/* A limit as `set` takes it: "max", or bytes in the largest exact unit. */
static const char *limit_text(uint64_t v, char buf[static 32]) {
        static const char units[] = "KMGTPE";
        int u = -1;

        if (v == MEMACCT_UNLIMITED)
                return "max";
        while (v != 0 && v % 1024 == 0 && u < 5) {
                v /= 1024;
                u++;
        }
        if (u < 0)
                snprintf(buf, 32, "%" PRIu64, v);
        else
                snprintf(buf, 32, "%" PRIu64 "%c", v, units[u]);
        return buf;
}

int print_import_report(const memacct_import_report *r, bool json) {
        unsigned owned = memacct_import_report_kernel_limits(r);
        const memacct_kept_limits *k;
        const char *sep = "";
        int res;

        res = print_import(memacct_import_report_counts(r), json);
        if (res != 0 || json)
                return res;
        printf("kept: %" PRIu32 "\n", memacct_import_report_kept(r));
        if (owned) {
                printf("kernel owns:");
                for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                        if (owned & limits[i].bit)
                                printf(" %s", limits[i].name);
                printf(" (a limit set on a mirror is kept until import-cgroups --reset-limits)\n");
        }
        for (size_t n = 0; (k = memacct_import_report_get(r, n)); n++) {
                printf("%s: kept", k->group);
                sep = " ";
                for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                        char a[32], b[32];

                        if (!(k->ours.set & limits[i].bit))
                                continue;
                        printf("%s%s=%s (set by a user; the kernel has %s)", sep, limits[i].name,
                               limit_text(limit_value(&k->ours, limits[i].bit), a),
                               limit_text(limit_value(&k->kernel, limits[i].bit), b));
                        sep = ", ";
                }
                printf("\n");
        }
        return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}
