/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/** bench_floor_all() - the machine's floor: floor_atomic (1 and 2 threads, one line), its ratio, floor_clock. */
void bench_floor_all(void);
