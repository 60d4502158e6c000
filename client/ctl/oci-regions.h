/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The OCI hook's device limits: the annotations
 * org.memacct.<region>.max (and .high, .low, .min), one device memory
 * region's limits of the container's group (memacct(7), DEVICE MEMORY).
 */

#include <stdbool.h>
#include <stddef.h>

#include <memacct.h>

#include "dmem-limit.h"

/* Each of the daemon's 31 device regions, with its four limits. */
#define OCI_REGION_LIMITS_MAX (32 * 4)

typedef struct OciRegionLimit {
        DmemLimit value; /* .region names the region; bytes, max or a share */
        unsigned bit;    /* MEMACCT_LIMIT_* */
} OciRegionLimit;

typedef struct OciRegionLimits {
        size_t n;
        OciRegionLimit v[OCI_REGION_LIMITS_MAX];
} OciRegionLimits;

/**
 * oci_region_key() - whether @name (an annotation key past "org.memacct.")
 * is meant as a device limit: REGION.KEY, KEY max, high, low or min after
 * the last dot, and something before it.
 */
bool oci_region_key(const char *name);

/**
 * oci_region_annotation() - add the device limit org.memacct.@name=@value
 * to @rl, @name being one oci_region_key() takes.
 * @key: the whole annotation key, for messages
 * @value: the value, a NUL-free string; @quoted its printable form
 * @err: on -EINVAL, the reason, naming the annotation
 *
 * Pure (no I/O): safe from any thread on its own arguments.
 *
 * Return: 0; -EINVAL (a bad region name, "memory", a bad value, too many).
 */
int oci_region_annotation(const char *key, const char *name, const char *value, const char *quoted,
                          OciRegionLimits *rl, char *err, size_t errlen);

/* @rl resolved against the daemon's regions: each region's limits in bytes. */
typedef struct OciRegionSettings {
        size_t n;
        struct {
                char region[DMEM_LIMIT_REGION_MAX + 1];
                memacct_limits limits;
        } v[OCI_REGION_LIMITS_MAX / 4];
} OciRegionSettings;

/**
 * oci_region_limits_resolve() - check @rl against the daemon's regions
 * and turn it into bytes, one entry per region, before the group is made:
 * a region the daemon does not know, or a share of one without a
 * capacity, then leaves nothing behind.
 * @m: the connection; @path: the container's group, for messages
 * @ret: filled on success (n 0 for an empty @rl, with no round trip)
 *
 * Return: 0 or the exit status, said on stderr.
 */
int oci_region_limits_resolve(memacct *m, const char *path, const OciRegionLimits *rl,
                              OciRegionSettings *ret);

/**
 * oci_region_limits_apply() - set each region's limits of @rs on @path,
 * one request per region.
 * Return: 0 or the exit status, said on stderr.
 */
int oci_region_limits_apply(memacct *m, const char *path, const OciRegionSettings *rs);
