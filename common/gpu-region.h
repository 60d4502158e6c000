/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A GPU's device region, named as the kernel's dmem controller names
 * NVIDIA's: nvidia/<PCI bus id, 4-digit domain, lower case>/vidmem. The
 * interposer charges in it and memacctctl region probe registers it:
 * both name it here, so that they agree to the byte.
 */

#include <stdio.h>
#include <string.h>

/* @pci as the driver ("0000:3B:00.0") or NVML ("00000000:3B:00.0") gives it. */
static inline void gpu_region_name(const char *pci, char *buf, size_t size) {
        char id[64];

        /* NVML's bus id has an 8-digit domain; the kernel's and the driver's 4. */
        if (strlen(pci) == 16 && strncmp(pci, "0000", 4) == 0)
                pci += 4;
        snprintf(id, sizeof(id), "%.63s", pci);
        for (char *p = id; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
        snprintf(buf, size, "nvidia/%s/vidmem", id);
}
