/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-bus-client's tests of device memory regions through libmemacct's
 * bus handle (bus-client-regions.c), for the table in test-bus-client.c's
 * main(). Each is a cmocka test, run one at a time against the daemon
 * that bus_address names; each removes what it made.
 */
#pragma once

/** test_regions_over_the_bus_handle() - every region call of the bus backend, its results and refusals,
 * and the regions of memacct_get_group() and memacct_list_groups(). */
void test_regions_over_the_bus_handle(void **state);

/** test_region_events_over_the_bus_handle() - subscriptions by region: a device region's events with
 * their region, memory's alone for memory's subscribers, both for "*". */
void test_region_events_over_the_bus_handle(void **state);
