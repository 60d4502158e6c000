/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The devices both stand-ins show (libcuda.so.1 and libnvidia-ml.so.1):
 * two GPUs at two PCI addresses, each of one capacity, so that a test
 * sees the same figures through the driver API and through NVML, as it
 * would on a host with two real GPUs.
 *
 * The capacity of each device is 4 GiB, or $MEMACCT_STANDIN_CUDA_BYTES:
 * decimal digits, optionally followed by K, M, G or T (1024-based). It is
 * read when the library initialises (cuInit(), nvmlInit()); a value that
 * is not a size makes the initialisation fail, since a test that set one
 * and silently got 4 GiB would check the wrong thing.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define STANDIN_DEVICES 2
#define STANDIN_CAPACITY_ENV "MEMACCT_STANDIN_CUDA_BYTES"
#define STANDIN_CAPACITY_DEFAULT (UINT64_C(4) << 30)

struct standin_device {
        const char *name;
        const char *uuid; /* as NVML prints it, "GPU-" and 36 characters */
        unsigned int domain, bus, dev; /* the PCI address: domain:bus:dev.0 */
        unsigned int pci_device_id;    /* device id << 16 | NVIDIA's vendor id */
};

/*
 * Bus 0x3B and 0x86, the two sockets' root ports of a common
 * dual-socket server; hex digits above 9 on purpose, since the real
 * driver prints them upper-case ("0000:3B:00.0") and a reader that
 * compares with lower-case must fail here as it would there.
 */
static const struct standin_device standin_devices[STANDIN_DEVICES] = {
        { "memacct stand-in GPU 0", "GPU-6d656d61-6363-7400-8000-00000000003b", 0, 0x3B, 0, 0x233010DE },
        { "memacct stand-in GPU 1", "GPU-6d656d61-6363-7400-8000-000000000086", 0, 0x86, 0, 0x233010DE },
};

/**
 * standin_capacity() - each device's capacity in bytes.
 * @ret: where to store it.
 * Return: 0, or -EINVAL when $MEMACCT_STANDIN_CUDA_BYTES is set and not a
 * size (nor 0), -ERANGE when it does not fit in 64 bits.
 */
static inline int standin_capacity(uint64_t *ret) {
        const char *s = getenv(STANDIN_CAPACITY_ENV);
        unsigned int shift = 0;
        uint64_t v = 0;

        if (!s || !*s) {
                *ret = STANDIN_CAPACITY_DEFAULT;
                return 0;
        }
        for (; *s >= '0' && *s <= '9'; s++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
                        return -ERANGE;
        for (unsigned int i = 0; i < 4; i++)
                if (*s == "KMGT"[i]) {
                        shift = 10 * (i + 1);
                        s++;
                        break;
                }
        if (*s || v == 0)
                return -EINVAL;
        if (shift && v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = v << shift;
        return 0;
}

/**
 * memacct_standin_cuda_held() - the bytes this process holds on @device
 * through the stand-in driver, for the NVML stand-in (which finds it with
 * dlsym() when libcuda.so.1 is loaded): NVML reports what the device
 * holds, and in the stand-in that is what the process holds.
 * Return: the bytes, 0 before cuInit() or for a device that is not there.
 */
uint64_t memacct_standin_cuda_held(int device);
typedef uint64_t (*memacct_standin_cuda_held_fn)(int device);
