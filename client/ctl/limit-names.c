/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Limits by name: one table from the names users write to the bits and
 * fields of memacct_limits, for the command line and the OCI hook alike,
 * so that both accept exactly the same four names.
 */

#include <string.h>

#include "limit-names.h"
#include "macro.h"

static const struct {
        const char *name;
        unsigned bit;
} limit_names[] = {
        { "max", MEMACCT_LIMIT_MAX },
        { "high", MEMACCT_LIMIT_HIGH },
        { "low", MEMACCT_LIMIT_LOW },
        { "min", MEMACCT_LIMIT_MIN },
};

unsigned limit_by_name(const char *name, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(limit_names); i++)
                if (strlen(limit_names[i].name) == n && strncmp(name, limit_names[i].name, n) == 0)
                        return limit_names[i].bit;
        return 0;
}

void limits_set(memacct_limits *l, unsigned bit, uint64_t bytes) {
        l->set |= bit;
        switch (bit) {
        case MEMACCT_LIMIT_MAX:
                l->max = bytes;
                break;
        case MEMACCT_LIMIT_HIGH:
                l->high = bytes;
                break;
        case MEMACCT_LIMIT_LOW:
                l->low = bytes;
                break;
        default:
                l->min = bytes;
                break;
        }
}
