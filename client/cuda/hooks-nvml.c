/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NVML's memory figures, as the group's budget: nvmlDeviceGetMemoryInfo()
 * and its _v2 answer what cuMemGetInfo() answers (hooks-mem.c), since
 * programs and their schedulers size themselves from either (vLLM asks
 * NVML). The GPU is found by its PCI bus id, which names its region;
 * "used" follows from the new total and free, so that the three still add
 * up (v2: less what the driver reserves).
 *
 * Monitoring tools and frameworks dlopen() NVML: the hooks are handed out
 * by dlsym() as the driver's are (lookup.c).
 */

#include "account.h"
#include "hooks.h"
#include "nvml-abi.h"
#include "real.h"

#define NVML "libnvidia-ml.so.1"

static void *_Atomic real_get_memory, *_Atomic real_get_memory_v2, *_Atomic real_get_pci;

/* The region of @device, by its PCI bus id. */
static int nvml_region(nvmlDevice_t device, char *buf, size_t size) {
        ma_nvmlDeviceGetPciInfo_v3_fn get = ma_real_get_from(&real_get_pci, "nvmlDeviceGetPciInfo_v3", NVML);
        nvmlPciInfo_t pci;

        if (!get || get(device, &pci) != MA_NVML_SUCCESS)
                return -ENODEV;
        return ma_region_of_pci(((const struct ma_nvml_pci_info *) (const void *) &pci)->busIdLegacy, buf, size);
}

/* @free and @total as the group's budget on @device; @used what is left of the total. */
static void budget(nvmlDevice_t device, unsigned long long *free, unsigned long long *total,
                   unsigned long long *used, unsigned long long reserved) {
        char region[96];

        if (nvml_region(device, region, sizeof(region)) < 0 || ma_budget_region(region, free, total) < 0)
                return;
        *used = *total - *free > reserved ? *total - *free - reserved : 0;
}

_public_ nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
        ma_nvmlDeviceGetMemoryInfo_fn fn = ma_real_get_from(&real_get_memory, "nvmlDeviceGetMemoryInfo", NVML);
        struct ma_nvml_memory *m = (void *) memory;
        nvmlReturn_t r;

        if (!fn)
                return MA_NVML_ERROR_FUNCTION_NOT_FOUND;
        r = fn(device, memory);
        if (r == MA_NVML_SUCCESS && m)
                budget(device, &m->free, &m->total, &m->used, 0);
        return r;
}

_public_ nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
        ma_nvmlDeviceGetMemoryInfo_v2_fn fn =
                ma_real_get_from(&real_get_memory_v2, "nvmlDeviceGetMemoryInfo_v2", NVML);
        struct ma_nvml_memory_v2 *m = (void *) memory;
        nvmlReturn_t r;

        if (!fn)
                return MA_NVML_ERROR_FUNCTION_NOT_FOUND;
        r = fn(device, memory);
        if (r == MA_NVML_SUCCESS && m)
                budget(device, &m->free, &m->total, &m->used, m->reserved);
        return r;
}
