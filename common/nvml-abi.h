/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The part of NVML (libnvidia-ml.so.1) memacct reads, declared here for
 * the reason cuda-abi.h gives: builds without a toolkit (nvml.h ships
 * with the toolkit or the nvidia-ml-dev package, neither of which a
 * container host or CI has). NVML's ABI is stable the same way: a
 * changed signature or struct gets a _v2/_v3 name or a version field,
 * the old one stays.
 *
 * The types are NVML's when nvml.h was included first, ours otherwise;
 * the constants are ours, MA_-prefixed, so both can be seen at once.
 * tests/cuda/check-nvml-h.c includes nvml.h and then this header where
 * one is installed: a prototype that differs is a conflicting-types
 * error, and every constant and layout is compared with _Static_assert.
 * The layouts are those of NVIDIA's nvml.h (NVML API version 12 and 13).
 */

#include <stddef.h>

/* nvmlReturn_t values. */
#define MA_NVML_SUCCESS 0
#define MA_NVML_ERROR_UNINITIALIZED 1
#define MA_NVML_ERROR_INVALID_ARGUMENT 2
#define MA_NVML_ERROR_NOT_SUPPORTED 3
#define MA_NVML_ERROR_NOT_FOUND 6
#define MA_NVML_ERROR_INSUFFICIENT_SIZE 7
#define MA_NVML_ERROR_DRIVER_NOT_LOADED 9
#define MA_NVML_ERROR_LIBRARY_NOT_FOUND 12
#define MA_NVML_ERROR_FUNCTION_NOT_FOUND 13
#define MA_NVML_ERROR_GPU_IS_LOST 15
#define MA_NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define MA_NVML_ERROR_UNKNOWN 999

/* Buffer sizes NVML guarantees to be enough (with the NUL). */
#define MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define MA_NVML_DEVICE_NAME_BUFFER_SIZE 64
#define MA_NVML_DEVICE_UUID_BUFFER_SIZE 80

/*
 * The two spellings of a PCI address NVML gives: busId with an 8-digit
 * domain ("00000000:3B:00.0"), busIdLegacy with 4 ("0000:3B:00.0", as
 * cuDeviceGetPCIBusId() writes it). Both upper-case hex.
 */
#define MA_NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"
#define MA_NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0"

/* The layouts, under tags of ours (check-nvml-h.c compares them). */
struct ma_nvml_memory {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used; /* reserved + allocated */
};

struct ma_nvml_memory_v2 {
        unsigned int version; /* MA_NVML_MEMORY_V2 */
        unsigned long long total;
        unsigned long long reserved; /* set aside by the driver and firmware */
        unsigned long long free;
        unsigned long long used; /* allocated */
};

struct ma_nvml_pci_info {
        char busIdLegacy[MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;    /* device id << 16 | vendor id */
        unsigned int pciSubSystemId;
        char busId[MA_NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};

/*
 * nvmlMemory_v2: NVML_STRUCT_VERSION(Memory, 2), the struct's size with
 * its version in the top byte; nvmlDeviceGetMemoryInfo_v2() refuses any
 * other with NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
 */
#define MA_NVML_MEMORY_V2 ((unsigned int)(sizeof(struct ma_nvml_memory_v2) | (2U << 24)))

#ifndef NVML_API_VERSION
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct ma_nvml_memory nvmlMemory_t;
typedef struct ma_nvml_memory_v2 nvmlMemory_v2_t;
typedef struct ma_nvml_pci_info nvmlPciInfo_t;
#endif

/*
 * X(name, ret, params): the entry points, in one table. nvmlInit is the
 * pre-v2 export (nvml.h maps it to nvmlInit_v2 unless
 * NVML_NO_UNVERSIONED_FUNC_DEFS); both are exported by every driver.
 */
#define MA_NVML_CALLS(X)                                                                                   \
        X(nvmlInit_v2, nvmlReturn_t, (void))                                                               \
        X(nvmlShutdown, nvmlReturn_t, (void))                                                              \
        X(nvmlErrorString, const char *, (nvmlReturn_t result))                                            \
        X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *deviceCount))                                \
        X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device))         \
        X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char *name, unsigned int length))         \
        X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length))         \
        X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci))                \
        X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t *memory))              \
        X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_v2_t *memory))

#define MA_NVML_PROTOTYPE(name, ret, params) ret name params;
MA_NVML_CALLS(MA_NVML_PROTOTYPE)
#undef MA_NVML_PROTOTYPE

/* The pointer types, for dlsym(): ma_<name>_fn. */
#define MA_NVML_FN_TYPE(name, ret, params) typedef ret (*ma_##name##_fn) params;
MA_NVML_CALLS(MA_NVML_FN_TYPE)
#undef MA_NVML_FN_TYPE
