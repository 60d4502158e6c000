/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stat item names: one table, indexed by enum memacct_stat, which is also
 * the index of the item's counter in the stock page (STOCK_ITEMS, equal to
 * MEMACCT_STAT_MAX), so the table, the enum and the page grow together.
 */

#include <errno.h>
#include <string.h>

#include "client-stat.h"
#include "macro.h"
#include "memacct.h"

static const char *const stat_names[MEMACCT_STAT_MAX] = {
        "anon", "file", "shmem", "kernel", "sock", "swap", "device", "other",
};

const char *client_stat_name(unsigned item) {
        return item < MEMACCT_STAT_MAX ? stat_names[item] : NULL;
}

_public_ const char *memacct_stat_to_string(int item) {
        return item >= 0 ? client_stat_name((unsigned) item) : NULL;
}

_public_ int memacct_stat_from_string(const char *name) {
        if (!name || !*name)
                return MEMACCT_STAT_ANON;
        for (unsigned i = 0; i < MEMACCT_STAT_MAX; i++)
                if (strcmp(name, stat_names[i]) == 0)
                        return (int) i;
        return -EINVAL;
}
