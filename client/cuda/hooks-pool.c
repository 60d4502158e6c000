/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hooks of stream-ordered pools (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync, cuMemPoolTrimTo) and of the
 * VMM API's physical memory (cuMemCreate, cuMemRelease); docs/cuda.md,
 * "Pools".
 *
 * A pool holds device memory whether or not it is allocated from it: its
 * reserved bytes (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) are what is
 * charged, for each pool, and brought in line with the driver's figure
 * after every operation on it. An allocation the pool's unused reserve
 * cannot cover may grow the pool by up to its size (rounded up to the
 * pool's 2 MiB granule): that much is charged first, so that a refusal
 * comes before the driver allocates, and what the pool did not grow by
 * is given back after. The driver may also shrink a pool at a
 * synchronisation (its release threshold): that is seen at the pool's
 * next operation, so for a while more may be charged than held, never
 * less.
 *
 * One mutex covers the pools' bookkeeping: stream-ordered allocation is
 * the program's fast path only where the pool's reserve covers it, and
 * then the lock is held for two attribute reads.
 */

#include <pthread.h>
#include <stdatomic.h>

#include "account.h"
#include "hooks.h"
#include "real.h"
#include "reclaim.h"

#define POOL_GRANULE (UINT64_C(2) << 20)

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* A pool was ever charged: a synchronisation has something to settle.
 * Relaxed: a synchronisation that misses the first charge's store
 * settles at the pool's next operation. */
static _Atomic bool pools_charged;

static uint64_t pool_attr(CUmemoryPool pool, int attr) {
        ma_cuMemPoolGetAttribute_fn get = MA_REAL(cuMemPoolGetAttribute);
        cuuint64_t v = 0;

        if (!get || get(pool, (CUmemPool_attribute) attr, &v) != MA_CUDA_SUCCESS)
                return 0;
        return v;
}

/* The pool that cuMemAllocAsync() on @device allocates from. */
static CUmemoryPool current_pool(int device) {
        ma_cuDeviceGetMemPool_fn cur = MA_REAL(cuDeviceGetMemPool);
        ma_cuDeviceGetDefaultMemPool_fn def = MA_REAL(cuDeviceGetDefaultMemPool);
        CUmemoryPool pool = NULL;

        if (device < 0)
                return NULL;
        if (cur && cur(&pool, device) == MA_CUDA_SUCCESS)
                return pool;
        if (def && def(&pool, device) == MA_CUDA_SUCCESS)
                return pool;
        return NULL;
}

/*
 * Bring @pool's charge to its reserved bytes, @pending of which are
 * charged already and not recorded. Growth past what was charged is
 * charged now; the charge may be refused (the pool grew more than the
 * allocation asked): then false. Pools lock held.
 */
static bool settle(CUmemoryPool pool, int device, uint64_t pending) {
        uint64_t key = (uint64_t) (uintptr_t) pool, reserved = pool_attr(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
        MaEntry e = { .device = (int8_t) device };
        bool ok = true;

        if (ma_ledger_get(MA_KIND_POOL, key, &e))
                device = e.device;
        e.bytes += pending;
        if (reserved > e.bytes) {
                bool charged;

                if (ma_charge(device, reserved - e.bytes, &charged) == 0)
                        e.bytes += charged ? reserved - e.bytes : 0;
                else
                        ok = false;
        }
        /* A reserve is what the daemon may ask back (reclaim.h). */
        if (reserved > 0) {
                atomic_store_explicit(&pools_charged, true, memory_order_relaxed);
                ma_reclaim_declare(device);
        } else if (reserved < e.bytes) {
                ma_uncharge(device, e.bytes - reserved);
                e.bytes = reserved;
        }
        e.device = (int8_t) device;
        (void) ma_ledger_put(MA_KIND_POOL, key, &e);
        return ok;
}

typedef CUresult (*PoolAllocFn)(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream);

/* An allocation from @pool on @device by @alloc, charged by the pool's growth. */
static CUresult pool_alloc(CUmemoryPool pool, int device, CUdeviceptr *dptr, size_t bytes, CUstream stream,
                           PoolAllocFn alloc) {
        uint64_t unused, pending = 0;
        CUresult cr;
        bool charged = false;

        if (!pool || !dptr)
                return alloc(dptr, bytes, pool, stream);
        pthread_mutex_lock(&pools_lock);
        unused = pool_attr(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) -
                 pool_attr(pool, MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
        if (unused < bytes) {
                pending = ((uint64_t) bytes + POOL_GRANULE - 1) / POOL_GRANULE * POOL_GRANULE;
                if (ma_charge(device, pending, &charged) < 0) {
                        pthread_mutex_unlock(&pools_lock);
                        return MA_CUDA_ERROR_OUT_OF_MEMORY;
                }
                pending = charged ? pending : 0;
        }
        cr = alloc(dptr, bytes, pool, stream);
        if (!settle(pool, device, pending) && cr == MA_CUDA_SUCCESS) {
                /* The pool grew past what its group admits. */
                ma_cuMemFreeAsync_fn fr = MA_REAL(cuMemFreeAsync);

                if (fr)
                        (void) fr(*dptr, stream);
                cr = MA_CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&pools_lock);
        return cr;
}

/* The real entry points, as a PoolAllocFn each (cuMemAllocAsync has no pool argument). */
static CUresult real_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
        ma_cuMemAllocAsync_fn fn = MA_REAL(cuMemAllocAsync);

        (void) pool;
        return fn ? fn(dptr, bytesize, stream) : MA_CUDA_ERROR_NOT_FOUND;
}

static CUresult real_alloc_async_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
        ma_cuMemAllocAsync_ptsz_fn fn = MA_REAL(cuMemAllocAsync_ptsz);

        (void) pool;
        return fn ? fn(dptr, bytesize, stream) : MA_CUDA_ERROR_NOT_FOUND;
}

static CUresult real_alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
        ma_cuMemAllocFromPoolAsync_fn fn = MA_REAL(cuMemAllocFromPoolAsync);

        return fn ? fn(dptr, bytesize, pool, stream) : MA_CUDA_ERROR_NOT_FOUND;
}

static CUresult real_alloc_from_pool_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
        ma_cuMemAllocFromPoolAsync_ptsz_fn fn = MA_REAL(cuMemAllocFromPoolAsync_ptsz);

        return fn ? fn(dptr, bytesize, pool, stream) : MA_CUDA_ERROR_NOT_FOUND;
}

_public_ CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
        int device = ma_device_of_current();

        return pool_alloc(current_pool(device), device, dptr, bytesize, hStream, real_alloc_async);
}

_public_ CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
        int device = ma_device_of_current();

        return pool_alloc(current_pool(device), device, dptr, bytesize, hStream, real_alloc_async_ptsz);
}

_public_ CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
        return pool_alloc(pool, ma_device_of_current(), dptr, bytesize, hStream, real_alloc_from_pool);
}

_public_ CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                               CUstream hStream) {
        return pool_alloc(pool, ma_device_of_current(), dptr, bytesize, hStream, real_alloc_from_pool_ptsz);
}

/* After a free or a trim: every pool this process charged, settled (a free names no pool). */
static void settle_one(uint64_t key, const MaEntry *e, void *userdata) {
        (void) userdata;
        (void) settle((CUmemoryPool) (uintptr_t) key, e->device, 0);
}

static void settle_all(void) {
        pthread_mutex_lock(&pools_lock);
        ma_ledger_for_each(MA_KIND_POOL, settle_one, NULL);
        pthread_mutex_unlock(&pools_lock);
}

/* After a successful cuMemFreeAsync() of @dptr: what cuMemAlloc() gave it
 * (cuMemFreeAsync() frees that too) given back, else the pools settled. */
static CUresult freed_async(CUresult cr, CUdeviceptr dptr) {
        MaEntry e;

        if (cr != MA_CUDA_SUCCESS)
                return cr;
        if (ma_ledger_take(MA_KIND_PTR, dptr, &e))
                ma_uncharge(e.device, e.bytes);
        else
                settle_all();
        return cr;
}

_public_ CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
        ma_cuMemFreeAsync_fn fn = MA_REAL(cuMemFreeAsync);

        return freed_async(fn ? fn(dptr, hStream) : MA_CUDA_ERROR_NOT_FOUND, dptr);
}

_public_ CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
        ma_cuMemFreeAsync_ptsz_fn fn = MA_REAL(cuMemFreeAsync_ptsz);

        return freed_async(fn ? fn(dptr, hStream) : MA_CUDA_ERROR_NOT_FOUND, dptr);
}

/*
 * The driver gives a pool's reserve above its release threshold back at a
 * synchronisation of a stream, an event or the context: after one, every
 * pool this process charged is settled. Only when there is one: a
 * training loop synchronises at every step.
 */
static CUresult synchronised(CUresult cr) {
        if (cr == MA_CUDA_SUCCESS && atomic_load_explicit(&pools_charged, memory_order_relaxed))
                settle_all();
        return cr;
}

_public_ CUresult cuStreamSynchronize(CUstream hStream) {
        ma_cuStreamSynchronize_fn fn = MA_REAL(cuStreamSynchronize);

        return synchronised(fn ? fn(hStream) : MA_CUDA_ERROR_NOT_FOUND);
}

_public_ CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
        ma_cuStreamSynchronize_ptsz_fn fn = MA_REAL(cuStreamSynchronize_ptsz);

        return synchronised(fn ? fn(hStream) : MA_CUDA_ERROR_NOT_FOUND);
}

_public_ CUresult cuCtxSynchronize(void) {
        ma_cuCtxSynchronize_fn fn = MA_REAL(cuCtxSynchronize);

        return synchronised(fn ? fn() : MA_CUDA_ERROR_NOT_FOUND);
}

_public_ CUresult cuEventSynchronize(CUevent hEvent) {
        ma_cuEventSynchronize_fn fn = MA_REAL(cuEventSynchronize);

        return synchronised(fn ? fn(hEvent) : MA_CUDA_ERROR_NOT_FOUND);
}

_public_ CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
        ma_cuMemPoolTrimTo_fn fn = MA_REAL(cuMemPoolTrimTo);
        CUresult cr = fn ? fn(pool, minBytesToKeep) : MA_CUDA_ERROR_NOT_FOUND;

        if (cr == MA_CUDA_SUCCESS) {
                MaEntry e;

                pthread_mutex_lock(&pools_lock);
                if (ma_ledger_get(MA_KIND_POOL, (uint64_t) (uintptr_t) pool, &e))
                        (void) settle(pool, e.device, 0);
                pthread_mutex_unlock(&pools_lock);
        }
        return cr;
}

/* A reclaim request's trim: each pool of the device down by its share of @bytes, its unused reserve at most. */
typedef struct Trim {
        int device;
        uint64_t left, released;
} Trim;

static void trim_one(uint64_t key, const MaEntry *e, void *userdata) {
        ma_cuMemPoolTrimTo_fn fn = MA_REAL(cuMemPoolTrimTo);
        CUmemoryPool pool = (CUmemoryPool) (uintptr_t) key;
        uint64_t reserved, used, keep;
        Trim *t = userdata;
        MaEntry after;

        if (!fn || e->device != t->device || t->left == 0)
                return;
        reserved = pool_attr(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
        used = pool_attr(pool, MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
        keep = reserved - used > t->left ? reserved - t->left : used;
        if (fn(pool, keep) != MA_CUDA_SUCCESS)
                return;
        (void) settle(pool, e->device, 0);
        if (ma_ledger_get(MA_KIND_POOL, key, &after) && after.bytes < e->bytes) {
                t->released += e->bytes - after.bytes;
                t->left -= MIN(t->left, e->bytes - after.bytes);
        }
}

uint64_t ma_pools_trim(int device, uint64_t bytes) {
        Trim t = { .device = device, .left = bytes };

        pthread_mutex_lock(&pools_lock);
        ma_ledger_for_each(MA_KIND_POOL, trim_one, &t);
        pthread_mutex_unlock(&pools_lock);
        return t.released;
}

/* ---- the VMM API's physical memory ---- */

typedef struct VmmAlloc {
        CUmemGenericAllocationHandle *handle;
        size_t size;
        const CUmemAllocationProp *prop;
        unsigned long long flags;
} VmmAlloc;

static CUresult vmm_alloc(void *userdata, uint64_t *ret_key) {
        ma_cuMemCreate_fn fn = MA_REAL(cuMemCreate);
        VmmAlloc *a = userdata;
        CUresult cr = fn ? fn(a->handle, a->size, a->prop, a->flags) : MA_CUDA_ERROR_NOT_FOUND;

        if (cr == MA_CUDA_SUCCESS)
                *ret_key = *a->handle;
        return cr;
}

_public_ CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                              unsigned long long flags) {
        const struct ma_cu_mem_allocation_prop *p = (const void *) prop;
        VmmAlloc a = { .handle = handle, .size = size, .prop = prop, .flags = flags };
        uint64_t key;

        if (!handle || !p)
                return MA_CUDA_ERROR_INVALID_VALUE;
        /* Physical memory on the host is the kernel's to count. */
        if (p->location.type != MA_CU_MEM_LOCATION_TYPE_DEVICE) {
                ma_cuMemCreate_fn fn = MA_REAL(cuMemCreate);

                return fn ? fn(handle, size, prop, flags) : MA_CUDA_ERROR_NOT_FOUND;
        }
        return ma_alloc_charged(MA_KIND_VMM, p->location.id, size, vmm_alloc, &a, &key);
}

static CUresult vmm_free(void *userdata) {
        ma_cuMemRelease_fn fn = MA_REAL(cuMemRelease);

        return fn ? fn(*(CUmemGenericAllocationHandle *) userdata) : MA_CUDA_ERROR_NOT_FOUND;
}

_public_ CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
        return ma_free_charged(MA_KIND_VMM, handle, vmm_free, &handle);
}
