/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * RCU callbacks made synchronous for the fuzz targets (fuzz-rcu.c, linked
 * into every one): urcu_memb_call_rcu() only queues, and
 * urcu_memb_barrier() waits out a grace period and runs the queue on the
 * calling thread, in microseconds rather than the 10 ms liburcu's worker
 * thread takes. A persistent target calls it at the end of each input,
 * so that the input frees everything it allocated.
 */

#include <urcu/urcu-memb.h>
