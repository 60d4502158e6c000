/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI hook's device limits (oci-regions.h): org.memacct.<region>.max
 * and its kin. A region's name has dots, slashes and colons of its own
 * ("nvidia/0000:3b:00.0/vidmem"), so the key is what follows the last
 * dot, as memacctctl set's REGION.max= reads it.
 *
 * Invariants, as the hook's: every annotation is checked before the
 * daemon is asked anything, and every region is checked against the
 * daemon's before the group is made; a refusal after that removes the
 * group again (oci.c).
 */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limit-names.h"
#include "macro.h"
#include "oci-regions.h"
#include "output.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_regions *, memacct_regions_free);

/* The daemon's grammar of a region name (mem_region_name_check()),
 * checked here so a bad name is refused before any daemon call. */
static bool region_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("._:/@+-", c));
}

/* The key of @bit, for messages: the annotation as it was written. */
static const char *key_of(unsigned bit) {
        switch (bit) {
        case MEMACCT_LIMIT_MAX:
                return "max";
        case MEMACCT_LIMIT_HIGH:
                return "high";
        case MEMACCT_LIMIT_LOW:
                return "low";
        default:
                return "min";
        }
}

bool oci_region_key(const char *name) {
        const char *dot = strrchr(name, '.');

        return dot && dot != name && limit_by_name(dot + 1, strlen(dot + 1)) != 0;
}

int oci_region_annotation(const char *key, const char *name, const char *value, const char *quoted,
                          OciRegionLimits *rl, char *err, size_t errlen) {
        const char *dot = strrchr(name, '.');
        OciRegionLimit l = {};
        size_t n;

        if (!oci_region_key(name))
                return errorf(err, errlen, -EINVAL, "annotation %s: not org.memacct.REGION.max (.high .low .min)",
                            key);
        l.bit = limit_by_name(dot + 1, strlen(dot + 1));
        n = (size_t) (dot - name);
        if (n > DMEM_LIMIT_REGION_MAX)
                return errorf(err, errlen, -EINVAL, "annotation %s: a region name is at most %d bytes", key,
                            DMEM_LIMIT_REGION_MAX);
        for (size_t i = 0; i < n; i++)
                if (!region_char_ok(name[i]))
                        return errorf(err, errlen, -EINVAL,
                                    "annotation %s: not a region name (a region name may only "
                                    "hold [A-Za-z0-9._:/@+-])", key);
        memcpy(l.value.region, name, n);
        if (strcmp(l.value.region, MEMACCT_REGION_MEMORY) == 0)
                return errorf(err, errlen, -EINVAL,
                            "annotation %s: memory's limits are org.memacct.max, .high, .low "
                            "and .min", key);
        if (dmem_value_parse(value, &l.value) < 0)
                return errorf(err, errlen, -EINVAL,
                            "annotation %s: invalid value '%s' (bytes with an optional K/M/G/T "
                            "suffix, max, or a share of the region's capacity: N%%)",
                            key, quoted);
        if (rl->n == ELEMENTSOF(rl->v))
                return errorf(err, errlen, -EINVAL, "annotation %s: more than %d device limits", key,
                            OCI_REGION_LIMITS_MAX);
        rl->v[rl->n++] = l;
        return 0;
}

/* The capacity of @name among @list; -ENOENT when the daemon has no such region. */
static int capacity_of(const memacct_regions *list, const char *name, uint64_t *ret) {
        for (size_t i = 0; i < memacct_regions_size(list); i++) {
                const memacct_region *r = memacct_regions_get(list, i);

                if (strcmp(r->name, name) == 0) {
                        *ret = r->capacity;
                        return 0;
                }
        }
        return -ENOENT;
}

/* The entry of @region in @rs, added if need be; SIZE_MAX when @rs is full
 * (the daemon has fewer device regions than it holds, but that is its
 * bound, not ours to assume). */
static size_t settings_slot(OciRegionSettings *rs, const char *region) {
        size_t i;

        for (i = 0; i < rs->n; i++)
                if (strcmp(rs->v[i].region, region) == 0)
                        return i;
        if (i == ELEMENTSOF(rs->v))
                return SIZE_MAX;
        snprintf(rs->v[i].region, sizeof(rs->v[i].region), "%s", region);
        rs->v[i].limits = (memacct_limits) {};
        rs->n++;
        return i;
}

int oci_region_limits_resolve(memacct *m, const char *path, const OciRegionLimits *rl,
                              OciRegionSettings *ret) {
        _cleanup_(memacct_regions_freep) memacct_regions *list = NULL;
        int r;

        ret->n = 0;
        if (rl->n == 0)
                return 0;
        r = memacct_list_regions(m, &list);
        if (r < 0) {
                const char *msg = memacct_last_error(m);

                fprintf(stderr, "memacctctl: oci-hook: list of the device regions for %s: %s\n",
                        path, msg ? msg : strerror(-r));
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < rl->n; i++) {
                const OciRegionLimit *l = &rl->v[i];
                uint64_t capacity, v;
                size_t k;

                if (capacity_of(list, l->value.region, &capacity) < 0) {
                        fprintf(stderr,
                                "memacctctl: oci-hook: annotation org.memacct.%s.%s: memacctd has no "
                                "region '%s' (memacctctl region list)\n",
                                l->value.region, key_of(l->bit), l->value.region);
                        return EXIT_FAILURE;
                }
                if (dmem_limit_bytes(&l->value, capacity, &v) < 0) {
                        fprintf(stderr,
                                "memacctctl: oci-hook: annotation org.memacct.%s.%s: region %s has "
                                "no capacity: a share of it means nothing\n",
                                l->value.region, key_of(l->bit), l->value.region);
                        return EXIT_FAILURE;
                }
                k = settings_slot(ret, l->value.region);
                if (k == SIZE_MAX) {
                        fprintf(stderr, "memacctctl: oci-hook: device limits in more than %zu "
                                        "regions\n", ELEMENTSOF(ret->v));
                        return EXIT_FAILURE;
                }
                limits_set(&ret->v[k].limits, l->bit, v);
        }
        return 0;
}

int oci_region_limits_apply(memacct *m, const char *path, const OciRegionSettings *rs) {
        for (size_t i = 0; i < rs->n; i++) {
                int r = memacct_set_region_limits(m, path, rs->v[i].region, &rs->v[i].limits);

                if (r < 0) {
                        const char *msg = memacct_last_error(m);

                        fprintf(stderr, "memacctctl: oci-hook: device limits of %s in %s: %s\n",
                                path, rs->v[i].region,
                                message_past_path(msg ? msg : strerror(-r), path));
                        return EXIT_FAILURE;
                }
        }
        return 0;
}
