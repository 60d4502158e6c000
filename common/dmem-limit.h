/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A write to a dmem limit file (dmem.max, dmem.low, dmem.min) in the
 * kernel's grammar (kernel/cgroup/dmem.c, dmemcg_limit_write()), as
 * memacctctl's `set PATH dmem.max="REGION 8G"` takes it:
 *
 * - one region per line, "\n"-separated: several regions in one write;
 * - each line stripped of leading and trailing white space, and an empty
 *   line skipped;
 * - the region's name up to the first space or tab, then exactly that one
 *   separator, then a value that is not empty: "max", a size
 *   (parse_size(): digits with an optional K, M, G, T, P or E suffix), or,
 *   beyond the kernel, a share of the region's capacity "N%" or "N.NN%"
 *   as systemd's DeviceMemoryMax= takes it.
 *
 * Where the kernel applies the lines before a bad one, a bad line here
 * refuses the whole write: nothing is applied. The kernel's memparse()
 * also reads hex and octal; parse_size() does not (parse-size.h).
 */

#include <stddef.h>
#include <stdint.h>

#define DMEM_LIMIT_REGION_MAX 63 /* bytes in a region name, as the daemon's */

typedef enum DmemValueKind {
        DMEM_VALUE_BYTES,
        DMEM_VALUE_MAX,     /* "max": no limit */
        DMEM_VALUE_PERCENT, /* a share of the capacity, in permyriad */
} DmemValueKind;

typedef struct DmemLimit {
        char region[DMEM_LIMIT_REGION_MAX + 1];
        DmemValueKind kind;
        uint64_t bytes;      /* DMEM_VALUE_BYTES */
        unsigned permyriad;  /* DMEM_VALUE_PERCENT: 1 to 10000 */
} DmemLimit;

/**
 * dmem_limit_parse() - parse @text into @ret, at most @max lines.
 * @ret_line: on -EINVAL, the 1-based line that is wrong (optional)
 * Return: the number of regions (0 for an empty write); -EINVAL;
 * -ENAMETOOLONG (a region name over DMEM_LIMIT_REGION_MAX); -E2BIG (more
 * than @max lines).
 */
int dmem_limit_parse(const char *text, DmemLimit *ret, size_t max, unsigned *ret_line);

/**
 * dmem_value_parse() - one value: "max", a size or a share ("50%"), as
 * in a line of dmem_limit_parse() and in memacctctl's REGION.max=VALUE.
 * Return: 0, -EINVAL.
 */
int dmem_value_parse(const char *s, DmemLimit *ret);

/**
 * dmem_limit_bytes() - @l in bytes for a region of @capacity
 * (UINT64_MAX: unlimited): a share of an unlimited capacity is -EINVAL.
 * Rounded down, as systemd rounds a percentage of memory.
 */
int dmem_limit_bytes(const DmemLimit *l, uint64_t capacity, uint64_t *ret);
