/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reclaim on the bus: the methods a holder and an administrator call
 * (org.memacct1(5), memacct(7) "RECLAIM"), and how a request reaches a
 * bus peer: the ReclaimRequest signal, sent to that peer alone.
 */

#include <systemd/sd-bus.h>

#include "service/events.h"

/* How the service's requests reach a bus peer: every bus peer's delivery (userdata: its BusPeer). */
extern const EventDelivery bus_reclaim_delivery;

/** bus_method_set_reclaimable() - SetReclaimable(s region, s stat, b on). */
int bus_method_set_reclaimable(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_reclaim_done() - ReclaimDone(t id, b cannot). */
int bus_method_reclaim_done(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/** bus_method_reclaim() - Reclaim(s path, s region, t bytes): (t released), once the round ends. */
int bus_method_reclaim(sd_bus_message *msg, void *userdata, sd_bus_error *error);
