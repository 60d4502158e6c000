/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hooks of device allocations that give a pointer or a handle back:
 * cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemFree, the arrays,
 * and cuMemGetInfo.
 *
 * Every allocation is charged first and made only once the charge
 * passed: a refusal is CUDA_ERROR_OUT_OF_MEMORY and the driver is never
 * asked. A failed allocation gives its charge back; a free gives back
 * what its allocation charged (the ledger), and only once the driver
 * freed it.
 */

#include <errno.h>

#include "account.h"
#include "hooks.h"
#include "ledger.h"
#include "real.h"

CUresult ma_alloc_charged(MaKind kind, int device, uint64_t bytes, MaAllocFn alloc, void *userdata,
                          uint64_t *ret_key) {
        MaEntry e = { .device = (int8_t) device };
        bool charged;
        CUresult cr;
        int r;

        r = ma_charge(device, bytes, &charged);
        if (r < 0)
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        cr = alloc(userdata, ret_key);
        if (cr != MA_CUDA_SUCCESS) {
                if (charged)
                        ma_uncharge(device, bytes);
                return cr;
        }
        e.bytes = charged ? bytes : 0;
        if (ma_ledger_put(kind, *ret_key, &e) < 0 && charged) {
                /* Not recorded, so its free could not give it back: give it back now. */
                ma_uncharge(device, bytes);
        }
        return cr;
}

CUresult ma_free_charged(MaKind kind, uint64_t key, MaFreeFn free_fn, void *userdata) {
        MaEntry e;
        bool known = ma_ledger_take(kind, key, &e);
        CUresult cr = free_fn(userdata);

        if (!known)
                return cr;
        if (cr == MA_CUDA_SUCCESS)
                ma_uncharge(e.device, e.bytes);
        else
                (void) ma_ledger_put(kind, key, &e); /* still allocated */
        return cr;
}

/* ---- cuMemAlloc and its kin ---- */

typedef struct PtrAlloc {
        CUdeviceptr *dptr;
        size_t bytes;
        size_t *pitch;
        size_t width, height;
        unsigned element, flags;
        int how; /* 0 cuMemAlloc, 1 pitch, 2 managed */
} PtrAlloc;

static CUresult ptr_alloc(void *userdata, uint64_t *ret_key) {
        PtrAlloc *a = userdata;
        CUresult cr = MA_CUDA_ERROR_NOT_FOUND;

        if (a->how == 0) {
                ma_cuMemAlloc_v2_fn fn = MA_REAL(cuMemAlloc_v2);

                cr = fn ? fn(a->dptr, a->bytes) : cr;
        } else if (a->how == 1) {
                ma_cuMemAllocPitch_v2_fn fn = MA_REAL(cuMemAllocPitch_v2);

                cr = fn ? fn(a->dptr, a->pitch, a->width, a->height, a->element) : cr;
        } else {
                ma_cuMemAllocManaged_fn fn = MA_REAL(cuMemAllocManaged);

                cr = fn ? fn(a->dptr, a->bytes, a->flags) : cr;
        }
        if (cr == MA_CUDA_SUCCESS)
                *ret_key = *a->dptr;
        return cr;
}

static CUresult alloc_ptr(PtrAlloc *a) {
        uint64_t key;

        if (!a->dptr || (a->how == 1 && !a->pitch))
                return MA_CUDA_ERROR_INVALID_VALUE;
        return ma_alloc_charged(MA_KIND_PTR, ma_device_of_current(), a->bytes, ptr_alloc, a, &key);
}

_public_ CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
        PtrAlloc a = { .dptr = dptr, .bytes = bytesize };

        return alloc_ptr(&a);
}

/* The pitch is the driver's choice: charged as if rounded up to 512 bytes, the driver's alignment. */
#define PITCH_ALIGN 512u

_public_ CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                     unsigned int ElementSizeBytes) {
        size_t pitch = (WidthInBytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
        PtrAlloc a = {
                .dptr = dptr, .pitch = pPitch, .width = WidthInBytes, .height = Height,
                .element = ElementSizeBytes, .how = 1,
        };

        if (Height != 0 && pitch > SIZE_MAX / Height)
                return MA_CUDA_ERROR_INVALID_VALUE;
        a.bytes = pitch * Height;
        return alloc_ptr(&a);
}

_public_ CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
        PtrAlloc a = { .dptr = dptr, .bytes = bytesize, .flags = flags, .how = 2 };

        /* Managed memory can live on any device or the host: it is charged
         * where it is allocated from, the current device, as the most it
         * can take there. */
        return alloc_ptr(&a);
}

static CUresult ptr_free(void *userdata) {
        ma_cuMemFree_v2_fn fn = MA_REAL(cuMemFree_v2);

        return fn ? fn(*(CUdeviceptr *) userdata) : MA_CUDA_ERROR_NOT_FOUND;
}

_public_ CUresult cuMemFree_v2(CUdeviceptr dptr) {
        return ma_free_charged(MA_KIND_PTR, dptr, ptr_free, &dptr);
}

/* ---- the session, made when the program starts the driver ---- */

/*
 * The session, and its stock's page, are set up once the program has
 * started the driver: its first allocation then waits for at most the
 * refill of its GPU's stock, one round trip, not for a connection, an
 * attach and the page as well. A program that never allocates costs the
 * daemon a session.
 */
_public_ CUresult cuInit(unsigned int Flags) {
        ma_cuInit_fn fn = MA_REAL(cuInit);
        CUresult cr = fn ? fn(Flags) : MA_CUDA_ERROR_NOT_FOUND;

        if (cr == MA_CUDA_SUCCESS)
                ma_account_prepare();
        return cr;
}

/* ---- the budget ---- */

_public_ CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
        ma_cuMemGetInfo_v2_fn fn = MA_REAL(cuMemGetInfo_v2);
        CUresult cr;

        if (!fn)
                return MA_CUDA_ERROR_NOT_FOUND;
        cr = fn(free, total);
        if (cr == MA_CUDA_SUCCESS && free && total)
                (void) ma_budget(ma_device_of_current(), free, total);
        return cr;
}
