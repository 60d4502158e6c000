/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client/cuda/nvml-abi.h against NVIDIA's nvml.h, at compile time: built
 * only where nvml.h is installed (meson finds it; the CUDA toolkit and
 * Debian's nvidia-ml-dev ship it). Every prototype of nvml-abi.h is
 * declared again after nvml.h's own, so a signature that differs is a
 * conflicting-types error; every constant and every layout the stand-in
 * and the interposer use is compared here. Nothing of it runs.
 */

#include <nvml.h>
#include <stddef.h>

#include "nvml-abi.h"

#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " differs from nvml.h's " #theirs)

SAME(MA_NVML_SUCCESS, NVML_SUCCESS);
SAME(MA_NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNINITIALIZED);
SAME(MA_NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_INVALID_ARGUMENT);
SAME(MA_NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_SUPPORTED);
SAME(MA_NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_FOUND);
SAME(MA_NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_SIZE);
SAME(MA_NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_DRIVER_NOT_LOADED);
SAME(MA_NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_LIBRARY_NOT_FOUND);
SAME(MA_NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND);
SAME(MA_NVML_ERROR_GPU_IS_LOST, NVML_ERROR_GPU_IS_LOST);
SAME(MA_NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
SAME(MA_NVML_ERROR_UNKNOWN, NVML_ERROR_UNKNOWN);
SAME(MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
SAME(MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE);
SAME(MA_NVML_DEVICE_NAME_BUFFER_SIZE, NVML_DEVICE_NAME_BUFFER_SIZE);
SAME(MA_NVML_DEVICE_UUID_BUFFER_SIZE, NVML_DEVICE_UUID_BUFFER_SIZE);
SAME(MA_NVML_MEMORY_V2, nvmlMemory_v2);

/* The formats are strings: compared where they are, at compile time. */
_Static_assert(sizeof(MA_NVML_DEVICE_PCI_BUS_ID_FMT) == sizeof(NVML_DEVICE_PCI_BUS_ID_FMT) &&
                       __builtin_memcmp(MA_NVML_DEVICE_PCI_BUS_ID_FMT, NVML_DEVICE_PCI_BUS_ID_FMT,
                                        sizeof(NVML_DEVICE_PCI_BUS_ID_FMT)) == 0,
               "busId format differs");

#define LAYOUT(ours, theirs, f) SAME(offsetof(ours, f), offsetof(theirs, f))
SAME(sizeof(struct ma_nvml_memory), sizeof(nvmlMemory_t));
LAYOUT(struct ma_nvml_memory, nvmlMemory_t, total);
LAYOUT(struct ma_nvml_memory, nvmlMemory_t, free);
LAYOUT(struct ma_nvml_memory, nvmlMemory_t, used);
SAME(sizeof(struct ma_nvml_memory_v2), sizeof(nvmlMemory_v2_t));
LAYOUT(struct ma_nvml_memory_v2, nvmlMemory_v2_t, version);
LAYOUT(struct ma_nvml_memory_v2, nvmlMemory_v2_t, total);
LAYOUT(struct ma_nvml_memory_v2, nvmlMemory_v2_t, reserved);
LAYOUT(struct ma_nvml_memory_v2, nvmlMemory_v2_t, free);
LAYOUT(struct ma_nvml_memory_v2, nvmlMemory_v2_t, used);
SAME(sizeof(struct ma_nvml_pci_info), sizeof(nvmlPciInfo_t));
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, busIdLegacy);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, domain);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, bus);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, device);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, pciDeviceId);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, pciSubSystemId);
LAYOUT(struct ma_nvml_pci_info, nvmlPciInfo_t, busId);
/* nvmlDevice_t is a pointer (go-nvml's copy of nvml.h wraps it in a
 * struct for cgo; NVIDIA's does not): passed in one register either way. */
SAME(sizeof(nvmlDevice_t), sizeof(void *));

int ma_check_nvml_h(void);
int ma_check_nvml_h(void) {
        return NVML_API_VERSION;
}
