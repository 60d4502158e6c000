/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "memacct.h"

/**
 * gpu_probe() - memacctctl region probe: a device region for each GPU
 * NVML reports, with its memory as capacity; prints "NAME BYTES" for each
 * registered. @connect makes *@mp. Return: the exit status (0, 1).
 */
int gpu_probe(memacct **mp, int (*connect)(memacct **ret));
