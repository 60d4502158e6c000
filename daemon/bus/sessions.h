/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods on sessions and the charges they hold
 * (org.memacct1(5)): entry points of the manager's vtable (BUS_METHOD(),
 * call.h); userdata is the BusManager.
 */

#include <systemd/sd-bus.h>

#include "bus/call.h"
#include "service/service.h"

/* Reads a charge's arguments from the call: Charge's and ChargeRegion's differ. */
typedef int (*BusChargeReader)(BusCall *c, ServiceCharge *ret);

/**
 * bus_charge_read_by() - a charge whose arguments @read takes from the
 * call, replied (t throttle_usec, t over_high); bus_uncharge_read_by()
 * its uncharge, replied with nothing. The one body of Charge and
 * ChargeRegion, Uncharge and UnchargeRegion.
 */
int bus_charge_read_by(BusCall *c, BusChargeReader read);
int bus_uncharge_read_by(BusCall *c, BusChargeReader read);

/** bus_method_charge() - Charge(s path, t bytes, s stat, b keep): (t throttle_usec, t over_high). */
int bus_method_charge(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/**
 * bus_method_charge_with_flags() - ChargeWithFlags(s path, s region, t
 * bytes, s stat, t flags): Charge and ChargeRegion in one, flags 1 keep,
 * 2 no_wait (refused at once rather than wait for reclaim).
 */
int bus_method_charge_with_flags(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_uncharge() - Uncharge(s path, t bytes, s stat, b keep). */
int bus_method_uncharge(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_attach() - Attach(s path): the group the caller's session is attached to. */
int bus_method_attach(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_move_process() - MoveProcess(u pid, s path): the sessions moved. */
int bus_method_move_process(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_get_client() - GetClient(u pid, b exact): the client's rss as a{st}. */
int bus_method_get_client(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_list_sessions() - ListSessions(s path): service_list_sessions() as a(uussstt). */
int bus_method_list_sessions(sd_bus_message *msg, void *userdata, sd_bus_error *error);
