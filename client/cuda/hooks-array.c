/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hooks of CUDA arrays (cuArrayCreate, cuArray3DCreate,
 * cuMipmappedArrayCreate and their destroys), charged by what the
 * descriptor says they hold. The driver pads and tiles arrays as it
 * likes, and says nothing of it; the charge is the elements' bytes, a
 * floor of what the array takes.
 */

#include "account.h"
#include "hooks.h"
#include "real.h"

/* The bytes of one channel of @format (CUarray_format): the low nibble of
 * the plain formats is their size code; the packed and compressed ones
 * count 1 byte a channel, a floor. */
static unsigned format_bytes(int format) {
        switch (format) {
        case 0x01: case 0x08: /* (un)signed 8-bit */
                return 1;
        case 0x02: case 0x09: case 0x10: /* (un)signed 16-bit, half */
                return 2;
        case 0x03: case 0x0a: case 0x20: /* (un)signed 32-bit, float */
                return 4;
        default:
                return 1;
        }
}

uint64_t ma_array_bytes(size_t width, size_t height, size_t depth, int format, unsigned channels) {
        unsigned __int128 b = (unsigned __int128) width * (height ? height : 1) * (depth ? depth : 1) *
                              (channels ? channels : 1) * format_bytes(format);

        return b > UINT64_MAX ? UINT64_MAX : (uint64_t) b;
}

typedef struct ArrayAlloc {
        void *handle; /* CUarray * or CUmipmappedArray * */
        const CUDA_ARRAY_DESCRIPTOR *d2;
        const CUDA_ARRAY3D_DESCRIPTOR *d3;
        unsigned levels; /* mipmapped: the levels; 0: a plain array */
} ArrayAlloc;

static CUresult array_alloc(void *userdata, uint64_t *ret_key) {
        ArrayAlloc *a = userdata;
        CUresult cr = MA_CUDA_ERROR_NOT_FOUND;

        if (a->d2) {
                ma_cuArrayCreate_v2_fn fn = MA_REAL(cuArrayCreate_v2);

                cr = fn ? fn(a->handle, a->d2) : cr;
        } else if (a->levels == 0) {
                ma_cuArray3DCreate_v2_fn fn = MA_REAL(cuArray3DCreate_v2);

                cr = fn ? fn(a->handle, a->d3) : cr;
        } else {
                ma_cuMipmappedArrayCreate_fn fn = MA_REAL(cuMipmappedArrayCreate);

                cr = fn ? fn(a->handle, a->d3, a->levels) : cr;
        }
        if (cr == MA_CUDA_SUCCESS)
                *ret_key = (uint64_t) (uintptr_t) *(void **) a->handle;
        return cr;
}

/* The bytes of @d over @levels mipmap levels (each half the last in every dimension, down to 1). */
static uint64_t levels_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels) {
        const struct ma_cuda_array3d_descriptor *o = (const void *) d;
        size_t w = o->width, h = o->height, z = o->depth;
        uint64_t sum = 0;

        for (unsigned i = 0; i < (levels ? levels : 1); i++) {
                uint64_t b = ma_array_bytes(w, h, z, o->format, o->num_channels);

                sum = sum > UINT64_MAX - b ? UINT64_MAX : sum + b;
                w = w > 1 ? w / 2 : 1;
                h = h > 1 ? h / 2 : h;
                z = z > 1 ? z / 2 : z;
        }
        return sum;
}

static CUresult create_array(ArrayAlloc *a, uint64_t bytes) {
        uint64_t key;

        if (!a->handle || (!a->d2 && !a->d3))
                return MA_CUDA_ERROR_INVALID_VALUE;
        return ma_alloc_charged(MA_KIND_ARRAY, ma_device_of_current(), bytes, array_alloc, a, &key);
}

_public_ CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
        const struct ma_cuda_array_descriptor *o = (const void *) pAllocateArray;
        ArrayAlloc a = { .handle = pHandle, .d2 = pAllocateArray };

        return create_array(&a, o ? ma_array_bytes(o->width, o->height, 1, o->format, o->num_channels) : 0);
}

_public_ CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
        ArrayAlloc a = { .handle = pHandle, .d3 = pAllocateArray };

        return create_array(&a, pAllocateArray ? levels_bytes(pAllocateArray, 1) : 0);
}

_public_ CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                         unsigned int numMipmapLevels) {
        ArrayAlloc a = { .handle = pHandle, .d3 = pMipmappedArrayDesc, .levels = numMipmapLevels ? numMipmapLevels : 1 };

        return create_array(&a, pMipmappedArrayDesc ? levels_bytes(pMipmappedArrayDesc, a.levels) : 0);
}

static CUresult array_free(void *userdata) {
        ma_cuArrayDestroy_fn fn = MA_REAL(cuArrayDestroy);

        return fn ? fn(userdata) : MA_CUDA_ERROR_NOT_FOUND;
}

_public_ CUresult cuArrayDestroy(CUarray hArray) {
        return ma_free_charged(MA_KIND_ARRAY, (uint64_t) (uintptr_t) hArray, array_free, hArray);
}

static CUresult mipmapped_free(void *userdata) {
        ma_cuMipmappedArrayDestroy_fn fn = MA_REAL(cuMipmappedArrayDestroy);

        return fn ? fn(userdata) : MA_CUDA_ERROR_NOT_FOUND;
}

_public_ CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
        return ma_free_charged(MA_KIND_ARRAY, (uint64_t) (uintptr_t) hMipmappedArray, mipmapped_free,
                               hMipmappedArray);
}
