/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-dbus-client's tests of reclaim (dbus-client-reclaim.c), for the
 * table in test-dbus-client.c's main(): a reclaimable holder on a bus
 * handle against the same on a socket handle. Each is a cmocka test, run
 * one at a time against the daemon that bus_address and socket_path name.
 */
#pragma once

/** test_reclaim_both_ways() - a charge refused at max waits while a holder gives back, over either transport, holder and charger alike. */
void test_reclaim_both_ways(void **state);

/** test_reclaim_proactive() - memacct_reclaim() over the bus as over the socket. */
void test_reclaim_proactive(void **state);

/** test_reclaim_no_wait() - MEMACCT_NO_WAIT charges and limits are refused at once, nobody asked. */
void test_reclaim_no_wait(void **state);

/** test_reclaim_cannot() - a holder whose callback says it cannot: the charge is refused. */
void test_reclaim_cannot(void **state);

/** test_reclaim_region() - a device region's holder, asked for the region's charges. */
void test_reclaim_region(void **state);

/** test_reclaim_shared_handle() - a bus handle's requests are served while other threads call on it. */
void test_reclaim_shared_handle(void **state);

/** test_reclaim_fd_after_call() - memacct_fd() is readable for a request a call of the handle read off the bus. */
void test_reclaim_fd_after_call(void **state);

/** test_reclaim_not_from_others() - a ReclaimRequest from anyone but the daemon is ignored. */
void test_reclaim_not_from_others(void **state);
