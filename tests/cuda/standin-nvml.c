/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in NVML (libnvidia-ml.so.1): the same two devices as the
 * stand-in driver (standin-devices.h), with the same capacity, names, PCI
 * addresses and UUIDs, for what memacct reads through NVML: the devices,
 * where they sit on the bus, and their memory.
 *
 * Memory used is what this process holds through the stand-in driver,
 * asked of libcuda.so.1 with dlsym() when it is loaded (0 otherwise): the
 * real NVML reports the device's use by every process, and in the
 * stand-in each process has devices of its own, so within one process
 * NVML and cuMemGetInfo() agree, as they do on a GPU one process uses.
 * Nothing is reserved by "firmware" (nvmlMemory_v2_t.reserved is 0), so
 * total = free + used in both forms.
 *
 * nvmlInit()/nvmlShutdown() count, as NVML's do; every query between an
 * init and its shutdown is answered, others with NVML_ERROR_UNINITIALIZED.
 */

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "nvml-abi.h"
#include "standin-devices.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))

/* nvml.h maps nvmlInit to nvmlInit_v2; the library exports both names. */
nvmlReturn_t nvmlInit(void);

struct nvmlDevice_st {
        unsigned int index;
};

static struct nvmlDevice_st devices[STANDIN_DEVICES] = { { 0 }, { 1 } };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int init_count;
/* Written by the first init only, before any query can be answered; the
 * same value again after a shutdown to 0 and a new init. */
static uint64_t capacity;

static nvmlReturn_t init(void) {
        nvmlReturn_t r = MA_NVML_SUCCESS;

        pthread_mutex_lock(&lock);
        if (init_count == 0 && standin_capacity(&capacity) < 0) {
                fprintf(stderr, "stand-in libnvidia-ml: $%s=\"%s\" is not a byte count\n", STANDIN_CAPACITY_ENV,
                        getenv(STANDIN_CAPACITY_ENV));
                r = MA_NVML_ERROR_UNKNOWN;
        }
        if (r == MA_NVML_SUCCESS)
                init_count++;
        pthread_mutex_unlock(&lock);
        return r;
}

STANDIN_EXPORT nvmlReturn_t nvmlInit_v2(void) {
        return init();
}

STANDIN_EXPORT nvmlReturn_t nvmlInit(void) {
        return init();
}

STANDIN_EXPORT nvmlReturn_t nvmlShutdown(void) {
        nvmlReturn_t r = MA_NVML_SUCCESS;

        pthread_mutex_lock(&lock);
        if (init_count == 0)
                r = MA_NVML_ERROR_UNINITIALIZED;
        else
                init_count--;
        pthread_mutex_unlock(&lock);
        return r;
}

STANDIN_EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
        switch ((int)result) {
        case MA_NVML_SUCCESS:
                return "Success";
        case MA_NVML_ERROR_UNINITIALIZED:
                return "Uninitialized";
        case MA_NVML_ERROR_INVALID_ARGUMENT:
                return "Invalid Argument";
        case MA_NVML_ERROR_NOT_SUPPORTED:
                return "Not Supported";
        case MA_NVML_ERROR_NOT_FOUND:
                return "Not Found";
        case MA_NVML_ERROR_INSUFFICIENT_SIZE:
                return "Insufficient Size";
        case MA_NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
                return "Argument version mismatch";
        default:
                return "Unknown Error";
        }
}

static bool initialised(void) {
        bool r;

        pthread_mutex_lock(&lock);
        r = init_count > 0;
        pthread_mutex_unlock(&lock);
        return r;
}

/* @device as one of ours: the index, or -1 for a handle NVML never gave. */
static int device_index(nvmlDevice_t device) {
        for (unsigned int i = 0; i < STANDIN_DEVICES; i++)
                if (device == &devices[i])
                        return (int)i;
        return -1;
}

/* The checks of every device query: Return: the index, or a negated nvmlReturn_t. */
static int device_check(nvmlDevice_t device, const void *out) {
        int i;

        if (!initialised())
                return -MA_NVML_ERROR_UNINITIALIZED;
        i = device_index(device);
        if (i < 0 || !out)
                return -MA_NVML_ERROR_INVALID_ARGUMENT;
        return i;
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
        if (!initialised())
                return MA_NVML_ERROR_UNINITIALIZED;
        if (!deviceCount)
                return MA_NVML_ERROR_INVALID_ARGUMENT;
        *deviceCount = STANDIN_DEVICES;
        return MA_NVML_SUCCESS;
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
        if (!initialised())
                return MA_NVML_ERROR_UNINITIALIZED;
        if (!device || index >= STANDIN_DEVICES)
                return MA_NVML_ERROR_INVALID_ARGUMENT;
        *device = &devices[index];
        return MA_NVML_SUCCESS;
}

/* @s into @buf of @length bytes, whole or not at all, as NVML copies strings. */
static nvmlReturn_t copy_string(char *buf, unsigned int length, const char *s) {
        size_t n = strlen(s) + 1;

        if (length < n)
                return MA_NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(buf, s, n);
        return MA_NVML_SUCCESS;
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
        int i = device_check(device, name);

        return i < 0 ? -i : copy_string(name, length, standin_devices[i].name);
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
        int i = device_check(device, uuid);

        return i < 0 ? -i : copy_string(uuid, length, standin_devices[i].uuid);
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
        int i = device_check(device, pci);
        const struct standin_device *d;

        if (i < 0)
                return -i;
        d = &standin_devices[i];
        memset(pci, 0, sizeof(*pci));
        pci->domain = d->domain;
        pci->bus = d->bus;
        pci->device = d->dev;
        pci->pciDeviceId = d->pci_device_id;
        pci->pciSubSystemId = 0;
        snprintf(pci->busId, sizeof(pci->busId), MA_NVML_DEVICE_PCI_BUS_ID_FMT, d->domain, d->bus, d->dev);
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), MA_NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, d->domain, d->bus,
                 d->dev);
        return MA_NVML_SUCCESS;
}

/* What the stand-in driver in this process holds on device @i. */
static uint64_t held(int i) {
        memacct_standin_cuda_held_fn fn;

        *(void **)&fn = dlsym(RTLD_DEFAULT, "memacct_standin_cuda_held");
        return fn ? fn(i) : 0;
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
        int i = device_check(device, memory);
        uint64_t used;

        if (i < 0)
                return -i;
        used = held(i);
        memory->total = capacity;
        memory->used = used;
        memory->free = capacity - used;
        return MA_NVML_SUCCESS;
}

STANDIN_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
        int i = device_check(device, memory);
        uint64_t used;

        if (i < 0)
                return -i;
        if (memory->version != MA_NVML_MEMORY_V2)
                return MA_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        used = held(i);
        memory->total = capacity;
        memory->reserved = 0;
        memory->used = used;
        memory->free = capacity - used;
        return MA_NVML_SUCCESS;
}
