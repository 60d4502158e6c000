/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in CUDA driver (libcuda.so.1): initialisation, the two
 * devices, contexts, streams, error names, and the state every other
 * file of it shares. The tests build it because neither this machine nor
 * CI has a GPU or a driver; a program linked with -lcuda against it, or
 * the interposer preloaded in front of it, sees the driver API behave as
 * documented for everything the tests reach.
 *
 * Invariants: standin.held[d] is the sum of what counts against device
 * d's capacity (plain and managed allocations, pools' reserved memory,
 * VMM handles, arrays) and never exceeds standin.capacity; every change
 * of it happens under standin.lock. A context is the calling thread's
 * (thread-local), as the driver's current context is. In a child forked
 * from a process that used the stand-in, the stand-in starts over,
 * uninitialised and holding nothing: the real driver does not work in
 * such a child at all, and a fresh driver is what lets a test see what
 * the interposer does there.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "standin-cuda.h"

struct standin_state standin = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
};

static struct CUctx_st primary_ctx[STANDIN_DEVICES] = {
        { .device = 0, .primary = true },
        { .device = 1, .primary = true },
};

static _Thread_local CUcontext current_ctx;

void standin_lock(void) {
        pthread_mutex_lock(&standin.lock);
}

CUresult standin_unlock(CUresult r) {
        pthread_mutex_unlock(&standin.lock);
        return r;
}

CUresult standin_ready(void) {
        return standin.initialised ? MA_CUDA_SUCCESS : MA_CUDA_ERROR_NOT_INITIALIZED;
}

CUresult standin_current_device(int *ret) {
        if (!current_ctx)
                return MA_CUDA_ERROR_INVALID_CONTEXT;
        *ret = current_ctx->device;
        return MA_CUDA_SUCCESS;
}

CUresult standin_charge(int device, uint64_t bytes) {
        if (bytes > standin.capacity - standin.held[device])
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        standin.held[device] += bytes;
        return MA_CUDA_SUCCESS;
}

void standin_uncharge(int device, uint64_t bytes) {
        standin.held[device] -= bytes;
}

CUdeviceptr standin_map(size_t bytes) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        return p == MAP_FAILED ? 0 : (CUdeviceptr)(uintptr_t)p;
}

static bool device_valid(CUdevice dev) {
        return dev >= 0 && dev < STANDIN_DEVICES;
}

/* ---- fork ---- */

static void atfork_prepare(void) {
        standin_lock();
}

static void atfork_parent(void) {
        standin_unlock(MA_CUDA_SUCCESS);
}

/* The child's only thread, with the lock copied held: start over. */
static void atfork_child(void) {
        standin_reset_allocs();
        standin_reset_pools();
        standin_reset_vmm();
        standin_reset_arrays();
        memset(standin.held, 0, sizeof(standin.held));
        memset(standin.primary_refs, 0, sizeof(standin.primary_refs));
        standin.initialised = false;
        current_ctx = NULL;
        pthread_mutex_init(&standin.lock, NULL);
}

__attribute__((constructor)) static void standin_constructor(void) {
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- initialisation, version, devices ---- */

STANDIN_EXPORT CUresult cuInit(unsigned int Flags) {
        uint64_t capacity;
        int r;

        if (Flags != 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        if (standin.initialised)
                return standin_unlock(MA_CUDA_SUCCESS);
        r = standin_capacity(&capacity);
        if (r < 0) {
                fprintf(stderr, "stand-in libcuda: $%s=\"%s\" is not a byte count\n", STANDIN_CAPACITY_ENV,
                        getenv(STANDIN_CAPACITY_ENV));
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        }
        standin.capacity = capacity;
        for (int d = 0; d < STANDIN_DEVICES; d++)
                standin.default_pool[d] = (struct standin_pool){ .device = d, .is_default = true };
        standin.initialised = true;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* Like the driver's, answered before cuInit(). */
STANDIN_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
        if (!driverVersion)
                return MA_CUDA_ERROR_INVALID_VALUE;
        *driverVersion = STANDIN_DRIVER_VERSION;
        return MA_CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuDeviceGetCount(int *count) {
        CUresult r;

        if (!count)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                *count = STANDIN_DEVICES;
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
        CUresult r;

        if (!device)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(ordinal))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS)
                *device = ordinal;
        return standin_unlock(r);
}

/* A string of the device's into @buf of @len bytes, cut short as the driver cuts it. */
static CUresult device_string(char *buf, int len, CUdevice dev, bool bus_id) {
        CUresult r;

        if (!buf || len <= 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(dev))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS) {
                const struct standin_device *d = &standin_devices[dev];

                /* Upper-case hex, as the real driver writes it. */
                if (bus_id)
                        snprintf(buf, (size_t)len, "%04X:%02X:%02X.0", d->domain, d->bus, d->dev);
                else
                        snprintf(buf, (size_t)len, "%s", d->name);
        }
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
        return device_string(name, len, dev, false);
}

STANDIN_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
        return device_string(pciBusId, len, dev, true);
}

STANDIN_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
        CUresult r;

        if (!bytes)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(dev))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS)
                *bytes = (size_t)standin.capacity;
        return standin_unlock(r);
}

/* ---- contexts ---- */

STANDIN_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
        CUresult r;

        if (!pctx)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(dev))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS) {
                standin.primary_refs[dev]++;
                *pctx = &primary_ctx[dev];
        }
        return standin_unlock(r);
}

/*
 * The last release keeps what the context's allocations hold: the real
 * driver frees them with the context, a case no test needs yet.
 */
STANDIN_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(dev))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS && standin.primary_refs[dev] == 0)
                r = MA_CUDA_ERROR_INVALID_CONTEXT;
        if (r == MA_CUDA_SUCCESS)
                standin.primary_refs[dev]--;
        return standin_unlock(r);
}

/*
 * The driver pushes a new context on the thread's stack; here it replaces
 * the current one. (Entry points never call each other: a call through an
 * exported name would reach the interposer in front of the stand-in, and
 * it would count one call twice.)
 */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev) {
        struct CUctx_st *ctx;
        CUresult r;

        if (!pctx || flags != 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && !device_valid(dev))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS) {
                ctx = calloc(1, sizeof(*ctx));
                if (!ctx)
                        return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
                ctx->device = dev;
                current_ctx = *pctx = ctx;
        }
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
        return ctx_create(pctx, flags, dev);
}

/* CUDA 12.5's form (what cuGetProcAddress("cuCtxCreate") gives from 12050): no parameters taken. */
STANDIN_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                       CUdevice dev) {
        if (ctxCreateParams)
                return MA_CUDA_ERROR_NOT_SUPPORTED;
        return ctx_create(pctx, flags, dev);
}

/* Only this thread forgets it as current; another thread's pointer to it dangles, as it must not exist. */
STANDIN_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
        if (!ctx || ctx->primary)
                return MA_CUDA_ERROR_INVALID_CONTEXT;
        if (current_ctx == ctx)
                current_ctx = NULL;
        free(ctx);
        return MA_CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                current_ctx = ctx;
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
        CUresult r;

        if (!pctx)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                *pctx = current_ctx;
        return standin_unlock(r);
}

/* The device of @ctx, or of the thread's current context when NULL. */
static CUresult ctx_get_device(CUdevice *device, CUcontext ctx) {
        CUresult r;
        int dev = 0;

        if (!device)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && ctx)
                dev = ctx->device;
        else if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS)
                *device = dev;
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
        return ctx_get_device(device, NULL);
}

/* CUDA 13.0's form, what cuGetProcAddress("cuCtxGetDevice") gives from 13000. */
STANDIN_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
        return ctx_get_device(device, ctx);
}

/* ---- streams: everything is done when it returns ---- */

static CUresult stream_synchronize(CUstream hStream) {
        CUresult r;
        int dev;

        if (hStream && hStream != MA_CU_STREAM_LEGACY && hStream != MA_CU_STREAM_PER_THREAD)
                return MA_CUDA_ERROR_INVALID_HANDLE; /* the stand-in makes no streams */
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS)
                standin_pools_release();
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
        return stream_synchronize(hStream);
}

STANDIN_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
        return stream_synchronize(hStream);
}

/* ---- error names ---- */

static const struct {
        int code;
        const char *name, *text;
} errors[] = {
        { MA_CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
        { MA_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
        { MA_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
        { MA_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
        { MA_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
        { MA_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
        { MA_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
        { MA_CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped" },
        { MA_CUDA_ERROR_NOT_MAPPED, "CUDA_ERROR_NOT_MAPPED", "resource not mapped" },
        { MA_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
        { MA_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
        { MA_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
};

/* An unknown code: CUDA_ERROR_INVALID_VALUE and *pStr NULL, as the driver answers. */
static CUresult error_lookup(CUresult error, const char **pStr, bool name) {
        if (!pStr)
                return MA_CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
                if (errors[i].code == (int)error) {
                        *pStr = name ? errors[i].name : errors[i].text;
                        return MA_CUDA_SUCCESS;
                }
        *pStr = NULL;
        return MA_CUDA_ERROR_INVALID_VALUE;
}

STANDIN_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
        return error_lookup(error, pStr, true);
}

STANDIN_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
        return error_lookup(error, pStr, false);
}

/* ---- for the NVML stand-in ---- */

STANDIN_EXPORT uint64_t memacct_standin_cuda_held(int device) {
        uint64_t held = 0;

        standin_lock();
        if (standin.initialised && device >= 0 && device < STANDIN_DEVICES)
                held = standin.held[device];
        standin_unlock(MA_CUDA_SUCCESS);
        return held;
}
