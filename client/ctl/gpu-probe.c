/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl region probe: register a device region for each GPU that
 * NVML reports, named from its PCI bus id as the kernel's dmem controller
 * names NVIDIA's ("nvidia/0000:3b:00.0/vidmem"), with the GPU's memory as
 * its capacity: the regions libmemacct-cuda.so charges in.
 *
 * NVML is dlopen()ed, as nvidia-smi and every monitoring tool reach it:
 * memacctctl does not depend on the driver, and a host without one gets
 * a sentence, not a loader error. Its declarations are client/cuda's
 * (nvml-abi.h), checked against nvml.h where one is installed.
 */

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu-probe.h"
#include "gpu-region.h"
#include "nvml-abi.h"
#include "output.h"

typedef struct Nvml {
        void *lib;
        ma_nvmlInit_v2_fn init;
        ma_nvmlShutdown_fn shutdown;
        ma_nvmlDeviceGetCount_v2_fn count;
        ma_nvmlDeviceGetHandleByIndex_v2_fn handle;
        ma_nvmlDeviceGetPciInfo_v3_fn pci;
        ma_nvmlDeviceGetMemoryInfo_fn memory;
} Nvml;

static int nvml_open(Nvml *n) {
        n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!n->lib)
                return -ENOENT;
        *(void **) &n->init = dlsym(n->lib, "nvmlInit_v2");
        *(void **) &n->shutdown = dlsym(n->lib, "nvmlShutdown");
        *(void **) &n->count = dlsym(n->lib, "nvmlDeviceGetCount_v2");
        *(void **) &n->handle = dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
        *(void **) &n->pci = dlsym(n->lib, "nvmlDeviceGetPciInfo_v3");
        *(void **) &n->memory = dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
        if (!n->init || !n->shutdown || !n->count || !n->handle || !n->pci || !n->memory) {
                dlclose(n->lib);
                return -ENOSYS;
        }
        return 0;
}

/* Register the GPU @i of @n. Return: 0, or 1 (said on stderr). */
static int probe_one(memacct *m, const Nvml *n, unsigned i) {
        struct ma_nvml_pci_info pci;
        struct ma_nvml_memory mem;
        char name[96];
        nvmlDevice_t dev;
        int r;

        if (n->handle(i, &dev) != MA_NVML_SUCCESS || n->pci(dev, (nvmlPciInfo_t *) (void *) &pci) != MA_NVML_SUCCESS ||
            n->memory(dev, (nvmlMemory_t *) (void *) &mem) != MA_NVML_SUCCESS) {
                fprintf(stderr, "memacctctl: region probe: NVML says nothing of GPU %u\n", i);
                return 1;
        }
        gpu_region_name(pci.busIdLegacy, name, sizeof(name));
        r = memacct_add_region(m, name, mem.total);
        if (r < 0) {
                fprintf(stderr, "memacctctl: region probe: %s (%llu bytes): %s\n", name, mem.total,
                        memacct_last_error(m) ? memacct_last_error(m) : strerror(-r));
                return 1;
        }
        printf("%s %llu\n", name, mem.total);
        return 0;
}

int gpu_probe(memacct **mp, int (*connect)(memacct **ret)) {
        unsigned count = 0;
        Nvml n = {};
        int r, failed = 0;

        r = nvml_open(&n);
        if (r < 0) {
                fprintf(stderr, "memacctctl: region probe: %s\n",
                        r == -ENOENT ? "no NVIDIA driver here (libnvidia-ml.so.1 cannot be loaded)"
                                     : "libnvidia-ml.so.1 lacks the calls it needs");
                return 1;
        }
        if (n.init() != MA_NVML_SUCCESS || n.count(&count) != MA_NVML_SUCCESS) {
                fprintf(stderr, "memacctctl: region probe: NVML does not start (is the driver loaded?)\n");
                dlclose(n.lib);
                return 1;
        }
        r = connect(mp);
        for (unsigned i = 0; r == 0 && i < count; i++)
                failed |= probe_one(*mp, &n, i);
        n.shutdown();
        dlclose(n.lib);
        return r != 0 ? r : failed;
}
