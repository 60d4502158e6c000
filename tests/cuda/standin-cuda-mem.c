/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's plain allocations: cuMemAlloc, cuMemAllocPitch,
 * cuMemAllocManaged, cuMemFree, cuMemGetInfo, cuMemGetAddressRange.
 *
 * Device memory is host memory here: each allocation is an anonymous
 * read-write mapping of its own (MAP_NORESERVE), whose address is the
 * CUdeviceptr, so a program may write through it and a test may make a
 * 600M allocation for the price of the pages it touches. What counts is
 * the bookkeeping: each allocation is counted against its device's
 * capacity before it is made, and one that would pass the capacity is
 * refused with CUDA_ERROR_OUT_OF_MEMORY, the driver's refusal a test
 * must be able to see. Pool allocations (standin-cuda-pool.c) share the
 * list, so cuMemFree and cuMemFreeAsync free either kind, as the driver
 * lets them.
 *
 * Managed memory counts against the current device, as if it lived
 * there: the stand-in has no migration, and a real device does hold it
 * while a kernel touches it.
 */

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin-cuda.h"

static size_t page_round(size_t bytes) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);

        return (bytes + page - 1) & ~(page - 1);
}

CUresult standin_alloc_add(int device, size_t bytes, struct standin_pool *pool, CUdeviceptr *ret) {
        struct standin_alloc *a = calloc(1, sizeof(*a));

        if (!a)
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        /* bytes is at most the capacity (charged already), so the rounding cannot wrap. */
        a->map_bytes = page_round(bytes);
        a->ptr = standin_map(a->map_bytes);
        if (!a->ptr) {
                free(a);
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        }
        a->bytes = bytes;
        a->device = device;
        a->pool = pool;
        a->next = standin.allocs;
        standin.allocs = a;
        *ret = a->ptr;
        return MA_CUDA_SUCCESS;
}

struct standin_alloc *standin_alloc_take(CUdeviceptr ptr) {
        for (struct standin_alloc **p = &standin.allocs; *p; p = &(*p)->next)
                if ((*p)->ptr == ptr) {
                        struct standin_alloc *a = *p;

                        *p = a->next;
                        return a;
                }
        return NULL;
}

void standin_alloc_free(struct standin_alloc *a) {
        munmap((void *)(uintptr_t)a->ptr, a->map_bytes);
        free(a);
}

void standin_reset_allocs(void) {
        while (standin.allocs) {
                struct standin_alloc *a = standin.allocs;

                standin.allocs = a->next;
                standin_alloc_free(a);
        }
}

/* @bytes on the current device, counted, with the lock taken here. */
static CUresult alloc_current(CUdeviceptr *dptr, size_t bytes) {
        CUresult r;
        int dev;

        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS)
                r = standin_charge(dev, bytes);
        if (r == MA_CUDA_SUCCESS) {
                r = standin_alloc_add(dev, bytes, NULL, dptr);
                if (r != MA_CUDA_SUCCESS)
                        standin_uncharge(dev, bytes);
        }
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
        if (!dptr || bytesize == 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        return alloc_current(dptr, bytesize);
}

/*
 * Rows of @WidthInBytes, each padded to a pitch that is a multiple of 512
 * (the driver's pitch depends on the device; 512 is a common one).
 */
STANDIN_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                           unsigned int ElementSizeBytes) {
        size_t pitch, bytes;
        CUresult r;

        if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
            !(ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16))
                return MA_CUDA_ERROR_INVALID_VALUE;
        if (WidthInBytes > SIZE_MAX - (STANDIN_PITCH_ALIGN - 1))
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        pitch = (WidthInBytes + STANDIN_PITCH_ALIGN - 1) / STANDIN_PITCH_ALIGN * STANDIN_PITCH_ALIGN;
        if (__builtin_mul_overflow(pitch, Height, &bytes))
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        r = alloc_current(dptr, bytes);
        if (r == MA_CUDA_SUCCESS)
                *pPitch = pitch;
        return r;
}

STANDIN_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
        if (!dptr || bytesize == 0 || !(flags == MA_CU_MEM_ATTACH_GLOBAL || flags == MA_CU_MEM_ATTACH_HOST))
                return MA_CUDA_ERROR_INVALID_VALUE;
        return alloc_current(dptr, bytesize);
}

STANDIN_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
        struct standin_alloc *a;
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        a = standin_alloc_take(dptr);
        if (!a)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        if (a->pool)
                standin_pool_free(a);
        else
                standin_uncharge(a->device, a->bytes);
        standin_alloc_free(a);
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* free: the capacity less what this process holds on the current device (the driver's: less what all hold). */
STANDIN_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
        CUresult r;
        int dev;

        if (!free || !total)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS) {
                *free = (size_t)(standin.capacity - standin.held[dev]);
                *total = (size_t)standin.capacity;
        }
        return standin_unlock(r);
}

/* The allocation @dptr points into: its start and the size asked for (either may be NULL). */
STANDIN_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        for (struct standin_alloc *a = standin.allocs; a; a = a->next)
                if (dptr >= a->ptr && dptr - a->ptr < a->bytes) {
                        if (pbase)
                                *pbase = a->ptr;
                        if (psize)
                                *psize = a->bytes;
                        return standin_unlock(MA_CUDA_SUCCESS);
                }
        return standin_unlock(MA_CUDA_ERROR_NOT_FOUND);
}
