/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods on device memory regions (org.memacct1(5),
 * DEVICE MEMORY): registering and listing regions, charges, limits and
 * peaks in a region, moving a kept charge, and the eviction question.
 * Entry points of the manager's vtable (BUS_METHOD(), call.h); userdata
 * is the BusManager.
 */

#include <systemd/sd-bus.h>

/** bus_method_add_region() - AddRegion(s name, t capacity): service_add_region(). */
int bus_method_add_region(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_remove_region() - RemoveRegion(s name): service_remove_region(). */
int bus_method_remove_region(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_regions() - ListRegions(): a(stttu) of name, capacity, current, peak, groups. */
int bus_method_list_regions(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_charge_region() - ChargeRegion(s path, s region, t bytes, b keep): (t throttle_usec, t over_high). */
int bus_method_charge_region(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_uncharge_region() - UnchargeRegion(s path, s region, t bytes, b keep). */
int bus_method_uncharge_region(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_set_region_limits() - SetRegionLimits(s path, s region, a{st} limits). */
int bus_method_set_region_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/**
 * bus_method_set_limits_with_flags() - SetLimitsWithFlags(s path, s
 * region, a{st} limits, t flags): flags 1 force, 2 no_reclaim (a max
 * below usage asks nobody to give back).
 */
int bus_method_set_limits_with_flags(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_reset_region_peak() - ResetRegionPeak(s path, s region). */
int bus_method_reset_region_peak(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_transfer() - Transfer(s from, s to, s region, t bytes): service_transfer() of anon. */
int bus_method_transfer(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_evict_valuable() - EvictValuable(s limit, s candidate, s region, b ignore_low): "yes", "no" or "hit_low". */
int bus_method_evict_valuable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
