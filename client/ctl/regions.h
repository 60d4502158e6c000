/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Device memory regions from the command line: region add|remove|list,
 * transfer, evict-valuable, the limits of set in a region (REGION.max=,
 * and dmem.max="REGION VALUE" in the kernel's grammar), and a group read
 * in one region for tree and top (memacct(7), DEVICE MEMORY).
 */

#include <stdbool.h>

#include <memacct.h>

/* The region settings of one set, parsed before anything is sent. */
typedef struct RegionSettings RegionSettings;

/**
 * region_setting_parse() - add @s to *@rs if it is a region setting
 * (REGION.KEY=VALUE or dmem.KEY=TEXT; KEY max high low min). Allocates
 * *@rs on first use.
 * Return: 1 taken, 0 not a region setting, or EXIT_USAGE (said).
 */
int region_setting_parse(const char *s, RegionSettings **rs);

/**
 * region_settings_apply() - set every region's limits of @rs on @path;
 * shares of a capacity are resolved against the daemon's regions first.
 * Return: 0 or the exit status of the failure (said).
 */
int region_settings_apply(memacct *m, const char *path, const RegionSettings *rs);

/** region_settings_free() - free @rs (NULL is fine). Return: NULL. */
RegionSettings *region_settings_free(RegionSettings *rs);
static inline void region_settings_freep(RegionSettings **rs) {
        region_settings_free(*rs);
}

/** region_verb_main() - region add NAME [capacity=SIZE] | remove NAME | list. */
int region_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret));

/** transfer_verb_main() - transfer FROM TO SIZE [--region R]. */
int transfer_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret));

/** evict_verb_main() - evict-valuable LIMIT CANDIDATE [--region R] [--ignore-low]. */
int evict_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret));

/**
 * region_view() - @g as seen in @region: a copy whose byte counts and
 * events are its counters in that region (nothing charged and no limit
 * when it has none there); memory's own (NULL or "memory"): @g as it is.
 * The copy points into @g and @scratch (2 × 4 counters): use it while
 * both live.
 */
void region_view(const memacct_group_info *g, const char *region, memacct_group_info *ret,
                 memacct_counter scratch[8]);

/** region_is_memory() - does @region name memory (NULL, "" or "memory")? */
bool region_is_memory(const char *region);
