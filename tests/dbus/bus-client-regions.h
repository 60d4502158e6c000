/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-bus-client's tests of device memory regions through libmemacct's
 * bus handle (bus-client-regions.c), for the table in test-bus-client.c's
 * main(). Each is a cmocka test, run one at a time against the daemon
 * that bus_address names; each removes what it made.
 */
#pragma once

/** test_regions_over_the_bus_handle() - every public region call on a bus handle, its results and
 * refusals, the arguments it refuses itself, memory's calls for a region NULL, "" or "memory", and the
 * regions of memacct_get_group() and memacct_list_groups(). */
void test_regions_over_the_bus_handle(void **state);

/** test_region_events_over_the_bus_handle() - subscriptions by region: a device region's events with
 * their region, memory's alone for memory's subscribers (memacct_subscribe() or the region "memory"),
 * both for "*". */
void test_region_events_over_the_bus_handle(void **state);
