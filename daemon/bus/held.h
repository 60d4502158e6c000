/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Replies held back until the change they report is saved, on the bus
 * (the socket's are sock/held.h). D-Bus matches a reply to its call by
 * serial, so held replies need no order: a durable change's reply is
 * built at once and held with the change's sequence number, and goes
 * when that change is saved (or, when the save failed, the refusal that
 * replaces it goes instead). The bus thread goes on serving other calls
 * meanwhile. Bus thread only.
 */

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "service/service.h"

typedef struct BusHeldReply BusHeldReply;

/**
 * bus_held_send() - send @reply to @call now if change @seq (0: none) is
 * saved, the refusal that replaces it if it cannot be, or else hold it
 * in @held until bus_held_release() finds it saved.
 * Return: >= 0, or a negative errno.
 */
int bus_held_send(BusHeldReply **held, Service *svc, uint64_t seq, sd_bus_message *call,
                  sd_bus_message *reply);

/**
 * bus_held_release() - a save ended: send every reply in @held whose
 * change is saved, or the refusal that replaces it when the save failed;
 * keep the others.
 */
void bus_held_release(BusHeldReply **held, Service *svc);

/** bus_held_clear() - drop every reply in @held unsent (the connection is closing). */
void bus_held_clear(BusHeldReply **held);
