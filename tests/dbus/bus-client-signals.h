/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-bus-client's tests of signals (bus-client-signals.c), for the table
 * in test-bus-client.c's main(). Each is a cmocka test: run by
 * cmocka_run_group_tests(), one at a time, against the daemon that
 * bus_address and socket_path name.
 */
#pragma once

/** test_event_signal() - Event signals for events raised over either transport. */
void test_event_signal(void **state);

/** test_properties_changed_and_object_manager() - PropertiesChanged for limits set over the bus,
 * InterfacesAdded/Removed for groups made and removed. */
void test_properties_changed_and_object_manager(void **state);

/** test_peer_leaving_releases_its_charges() - a peer that closes its connection or is killed
 * loses its session charges and keeps its kept ones. */
void test_peer_leaving_releases_its_charges(void **state);

/** test_a_stopped_bus_stalls_no_socket_client() - with the bus daemon stopped
 * ($MEMACCT_BUS_PID), refused charges over the socket, each raising events for the bus, are
 * answered as fast as ever. Leaves the bus daemon with a backlog: run it last. */
void test_a_stopped_bus_stalls_no_socket_client(void **state);
