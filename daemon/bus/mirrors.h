/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods about kernel cgroups: the mirrors (ImportCgroups,
 * ImportCgroupsKeepingLimits, PruneMirrors) and the placement rules
 * (Add/Remove/ListPlacementRules), org.memacct1(5). Entries of the
 * manager's vtable (BUS_METHOD(), call.h); userdata is the BusManager.
 */

#include <systemd/sd-bus.h>

/** bus_method_import_cgroups() - ImportCgroups(s from, s under): service_import_cgroups(). */
int bus_method_import_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_import_cgroups_keeping_limits() - ImportCgroupsKeepingLimits(s from, s under, b reset_limits). */
int bus_method_import_cgroups_keeping_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_prune_mirrors() - PruneMirrors(): service_prune_mirrors() as (as removed, a(ss) kept). */
int bus_method_prune_mirrors(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_add_placement_rule() - AddPlacementRule(s cgroup, s group). */
int bus_method_add_placement_rule(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_add_placement_rule_with_flags() - AddPlacementRuleWithFlags(s cgroup, s group, t flags). */
int bus_method_add_placement_rule_with_flags(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_remove_placement_rule() - RemovePlacementRule(s cgroup). */
int bus_method_remove_placement_rule(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_placement_rules() - ListPlacementRules(): the rules the caller may read, as a(ss). */
int bus_method_list_placement_rules(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/**
 * bus_method_list_all_placement_rules() - ListAllPlacementRules(): the
 * explicit rules and the kernel cgroup mirrors the caller may read, by
 * cgroup, as a(ssb) (cgroup, group, mirror).
 */
int bus_method_list_all_placement_rules(sd_bus_message *msg, void *userdata, sd_bus_error *error);
