/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's CUDA arrays: cuArrayCreate, cuArray3DCreate,
 * cuMipmappedArrayCreate and their destroys. An array is opaque on the
 * device (no pointer to it is handed out), so it is bookkeeping only: its
 * bytes, by cuda-array-bytes.h's formula, count against the current
 * device's capacity from creation to destruction. The descriptors are read
 * through cuda-abi.h's layouts, which check-cuda-h.c compares with cuda.h.
 */

#include <stdlib.h>

#include "cuda-array-bytes.h"
#include "standin-cuda.h"

struct standin_array {
        struct standin_array *next;
        size_t bytes;
        int device;
        bool mipmapped;
};

void standin_reset_arrays(void) {
        while (standin.arrays) {
                struct standin_array *a = standin.arrays;

                standin.arrays = a->next;
                free(a);
        }
}

/* @bytes (0: a descriptor no driver takes) on the current device, counted. */
static CUresult array_create(size_t bytes, bool mipmapped, struct standin_array **ret) {
        struct standin_array *a;
        CUresult r;
        int dev;

        if (bytes == 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS)
                r = standin_charge(dev, bytes);
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        a = calloc(1, sizeof(*a));
        if (!a) {
                standin_uncharge(dev, bytes);
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        }
        a->bytes = bytes;
        a->device = dev;
        a->mipmapped = mipmapped;
        a->next = standin.arrays;
        standin.arrays = a;
        *ret = a;
        return standin_unlock(MA_CUDA_SUCCESS);
}

static CUresult array_destroy(const void *handle, bool mipmapped) {
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        for (struct standin_array **p = &standin.arrays; *p; p = &(*p)->next)
                if (*p == handle && (*p)->mipmapped == mipmapped) {
                        struct standin_array *a = *p;

                        *p = a->next;
                        standin_uncharge(a->device, a->bytes);
                        free(a);
                        return standin_unlock(MA_CUDA_SUCCESS);
                }
        return standin_unlock(MA_CUDA_ERROR_INVALID_HANDLE);
}

STANDIN_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
        const struct ma_cuda_array_descriptor *d = (const void *)pAllocateArray;
        struct standin_array *a;
        CUresult r;

        if (!pHandle || !d)
                return MA_CUDA_ERROR_INVALID_VALUE;
        r = array_create(ma_cuda_array_bytes(d->width, d->height, 0, d->format, d->num_channels), false, &a);
        if (r == MA_CUDA_SUCCESS)
                *pHandle = (CUarray)a;
        return r;
}

/* Layered, cubemap and the other flags change nothing here: depth counts layers as it counts slices. */
STANDIN_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
        const struct ma_cuda_array3d_descriptor *d = (const void *)pAllocateArray;
        struct standin_array *a;
        CUresult r;

        if (!pHandle || !d)
                return MA_CUDA_ERROR_INVALID_VALUE;
        r = array_create(ma_cuda_array_bytes(d->width, d->height, d->depth, d->format, d->num_channels), false,
                         &a);
        if (r == MA_CUDA_SUCCESS)
                *pHandle = (CUarray)a;
        return r;
}

STANDIN_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
        return array_destroy(hArray, false);
}

STANDIN_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                               unsigned int numMipmapLevels) {
        const struct ma_cuda_array3d_descriptor *d = (const void *)pMipmappedArrayDesc;
        struct standin_array *a;
        CUresult r;

        if (!pHandle || !d)
                return MA_CUDA_ERROR_INVALID_VALUE;
        r = array_create(ma_cuda_mipmapped_array_bytes(d->width, d->height, d->depth, d->format, d->num_channels,
                                                       numMipmapLevels),
                         true, &a);
        if (r == MA_CUDA_SUCCESS)
                *pHandle = (CUmipmappedArray)a;
        return r;
}

STANDIN_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
        return array_destroy(hMipmappedArray, true);
}
