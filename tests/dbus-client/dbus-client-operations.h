/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-dbus-client's tests on twin trees (dbus-client-operations.c), for
 * the tables in test-dbus-client.c's main(). Each is a cmocka test, run
 * one at a time by cmocka_run_group_tests() against the daemon that
 * bus_address and socket_path name.
 */
#pragma once

/** test_same_operations() - every operation, made on both handles, gives the same results. */
void test_same_operations(void **state);

/** test_same_refusals_nonroot() - a uid delegated a subtree is refused the same over both. */
void test_same_refusals_nonroot(void **state);

/** test_same_refusals_restricted() - what [access] read = owner and [limits]
 * sessions-per-uid = 2 refuse, the same over both; only with MEMACCT_TEST_RESTRICTED=1. */
void test_same_refusals_restricted(void **state);
