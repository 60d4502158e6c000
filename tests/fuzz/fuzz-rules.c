/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The placement rules file (cgroup/placement.c) on arbitrary bytes: the
 * parse never crashes, and what it accepts is a table the daemon could
 * have written: sorted by cgroup with no cgroup twice, every cgroup and
 * group well formed, the confining count that of the rules that confine,
 * and each look-up answers within the table.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/placement.h"
#include "core/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Seen {
        char last[PLACEMENT_CGROUP_MAX + 1];
        size_t n, confining;
} Seen;

static int check_rule(void *userdata, const char *cgroup, const char *group, unsigned flags) {
        Seen *s = userdata;

        if (placement_cgroup_check(cgroup) < 0 || mem_path_check(group, UINT32_MAX, NULL) < 0)
                abort();
        if (s->n > 0 && strcmp(s->last, cgroup) >= 0)
                abort(); /* unsorted, or one cgroup twice */
        if (flags & ~(unsigned) _PLACEMENT_FLAGS_ALL)
                abort();
        snprintf(s->last, sizeof(s->last), "%s", cgroup);
        s->n++;
        s->confining += (flags & PLACEMENT_CONFINE) != 0;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const probes[] = { "/", "/a", "/a/b", "/c/x/y" };
        char group[MEM_PATH_MAX + 1];
        Placement *pl = NULL;
        Seen seen = {};
        int r;

        if (size > 1 << 20 || placement_new(NULL, &pl) < 0)
                return 0;
        r = placement_parse(pl, (const char *) data, size);
        if (r < 0 && placement_count(pl) != 0)
                abort(); /* a refused file leaves no rule */
        if (r >= 0) {
                if (placement_list(pl, check_rule, &seen) < 0 || seen.n != (size_t) r ||
                    seen.n != placement_count(pl) || seen.confining != placement_confining(pl))
                        abort();
                for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
                        if (placement_match(pl, probes[i], group, sizeof(group), NULL, 0) == 0 &&
                            mem_path_check(group, UINT32_MAX, NULL) < 0)
                                abort();
                        if (placement_confinement(pl, probes[i], group, sizeof(group)) == 0 &&
                            (seen.confining == 0 || mem_path_check(group, UINT32_MAX, NULL) < 0))
                                abort();
                }
        }
        placement_free(pl);
        return 0;
}
