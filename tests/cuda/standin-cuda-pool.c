/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's stream-ordered allocator: memory pools (each
 * device's default one and created ones), cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync (each with its _ptsz twin),
 * cuMemPoolTrimTo and the pool attributes.
 *
 * The model, the real pool's in its broad lines, kept simple enough that
 * a test computes every figure:
 *   - a pool hands out "used" bytes (exactly what was asked) from
 *     "reserved" bytes it holds from the device, in 2 MiB granules;
 *   - an allocation that takes used past reserved grows reserved to
 *     used rounded up to a granule, and that growth counts against the
 *     device's capacity (it is what the real pool takes from the GPU); a
 *     growth that does not fit is refused with CUDA_ERROR_OUT_OF_MEMORY;
 *   - a free lowers used and keeps reserved: the memory stays in the
 *     pool, held from the device, until cuMemPoolTrimTo(pool, keep) lowers
 *     reserved to max(used rounded up to a granule, keep rounded up to a
 *     granule), never raising it.
 *   - a synchronisation (cuStreamSynchronize) gives back what a pool
 *     reserves above its release threshold (0 by default) and does not
 *     use, as the real driver does: reserved falls to the larger of used
 *     and the threshold, in granules (frameworks set the threshold high
 *     to keep their reserve).
 *
 * Everything runs at once: a stream is only checked (NULL, the legacy or
 * the per-thread default stream), so "stream order" is program order.
 */

#include <stdlib.h>

#include "standin-cuda.h"

static uint64_t granule_round(uint64_t bytes) {
        return (bytes + STANDIN_GRANULE - 1) / STANDIN_GRANULE * STANDIN_GRANULE;
}

static bool stream_valid(CUstream s) {
        return !s || s == MA_CU_STREAM_LEGACY || s == MA_CU_STREAM_PER_THREAD;
}

/* @handle as one of ours, or NULL: a default pool, or a created one not destroyed. */
static struct standin_pool *pool_find(CUmemoryPool handle) {
        struct standin_pool *p = (struct standin_pool *)handle;

        for (int d = 0; d < STANDIN_DEVICES; d++)
                if (p == &standin.default_pool[d])
                        return p;
        for (struct standin_pool *q = standin.pools; q; q = q->next)
                if (q == p && !q->destroyed)
                        return q;
        return NULL;
}

/* Lower reserved to @target (a granule multiple at least used's), giving the rest back. */
static void pool_shrink(struct standin_pool *pool, uint64_t target) {
        if (target < pool->reserved) {
                standin_uncharge(pool->device, pool->reserved - target);
                pool->reserved = target;
        }
}

/* What one pool reserves above its release threshold and does not use, given back. */
static void pool_release(struct standin_pool *p) {
        uint64_t used = granule_round(p->used);
        uint64_t keep = p->release_threshold >= p->reserved ? p->reserved : granule_round(p->release_threshold);

        pool_shrink(p, keep > used ? keep : used);
}

void standin_pools_release(void) {
        for (int d = 0; d < STANDIN_DEVICES; d++)
                pool_release(&standin.default_pool[d]);
        for (struct standin_pool *p = standin.pools; p; p = p->next)
                if (!p->destroyed)
                        pool_release(p);
}

static void pool_unlink_free(struct standin_pool *pool) {
        for (struct standin_pool **p = &standin.pools; *p; p = &(*p)->next)
                if (*p == pool) {
                        *p = pool->next;
                        break;
                }
        free(pool);
}

CUresult standin_pool_alloc(struct standin_pool *pool, size_t bytes, CUdeviceptr *ret) {
        uint64_t used, grow = 0;
        CUresult r;

        /* Past the capacity it can never fit; checked first so the rounding cannot wrap. */
        if (bytes > standin.capacity)
                return MA_CUDA_ERROR_OUT_OF_MEMORY;
        used = pool->used + bytes;
        if (used > pool->reserved) {
                grow = granule_round(used) - pool->reserved;
                r = standin_charge(pool->device, grow);
                if (r != MA_CUDA_SUCCESS)
                        return r;
        }
        r = standin_alloc_add(pool->device, bytes, pool, ret);
        if (r != MA_CUDA_SUCCESS) {
                standin_uncharge(pool->device, grow);
                return r;
        }
        pool->reserved += grow;
        pool->used = used;
        if (pool->reserved > pool->reserved_high)
                pool->reserved_high = pool->reserved;
        if (pool->used > pool->used_high)
                pool->used_high = pool->used;
        return MA_CUDA_SUCCESS;
}

void standin_pool_free(struct standin_alloc *a) {
        struct standin_pool *pool = a->pool;

        pool->used -= a->bytes;
        /* A destroyed pool's last allocation: the pool goes, with all it holds. */
        if (pool->destroyed && pool->used == 0) {
                pool_shrink(pool, 0);
                pool_unlink_free(pool);
        }
}

void standin_reset_pools(void) {
        while (standin.pools) {
                struct standin_pool *p = standin.pools;

                standin.pools = p->next;
                free(p);
        }
}

STANDIN_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
        CUresult r;

        if (!pool_out)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && (dev < 0 || dev >= STANDIN_DEVICES))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r == MA_CUDA_SUCCESS)
                *pool_out = (CUmemoryPool)&standin.default_pool[dev];
        return standin_unlock(r);
}

/* Device memory on one device is all the stand-in makes: other props are refused. */
STANDIN_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
        const struct ma_cu_mem_pool_props *props = (const void *)poolProps;
        struct standin_pool *p;
        CUresult r;

        if (!pool || !props || props->alloc_type != MA_CU_MEM_ALLOCATION_TYPE_PINNED ||
            props->location.type != MA_CU_MEM_LOCATION_TYPE_DEVICE)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS && (props->location.id < 0 || props->location.id >= STANDIN_DEVICES))
                r = MA_CUDA_ERROR_INVALID_DEVICE;
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        p = calloc(1, sizeof(*p));
        if (!p)
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        p->device = props->location.id;
        p->next = standin.pools;
        standin.pools = p;
        *pool = (CUmemoryPool)p;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/*
 * As the driver documents it: with allocations still out the call returns
 * at once, and the pool goes when the last is freed; what it reserves
 * beyond them goes now.
 */
STANDIN_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
        struct standin_pool *p;
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        p = pool_find(pool);
        if (!p || p->is_default)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        pool_shrink(p, granule_round(p->used));
        if (p->used == 0)
                pool_unlink_free(p);
        else
                p->destroyed = true;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* From @pool, or (NULL) from the current device's default pool. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, bool from_pool,
                            CUstream hStream) {
        struct standin_pool *p = NULL;
        CUresult r;
        int dev;

        if (!dptr || bytesize == 0 || (from_pool && !pool))
                return MA_CUDA_ERROR_INVALID_VALUE;
        if (!stream_valid(hStream))
                return MA_CUDA_ERROR_INVALID_HANDLE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = standin_current_device(&dev);
        if (r == MA_CUDA_SUCCESS) {
                p = from_pool ? pool_find(pool) : &standin.default_pool[dev];
                if (!p)
                        r = MA_CUDA_ERROR_INVALID_VALUE;
        }
        if (r == MA_CUDA_SUCCESS)
                r = standin_pool_alloc(p, bytesize, dptr);
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
        return alloc_async(dptr, bytesize, NULL, false, hStream);
}

STANDIN_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
        return alloc_async(dptr, bytesize, NULL, false, hStream);
}

STANDIN_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream) {
        return alloc_async(dptr, bytesize, pool, true, hStream);
}

STANDIN_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                     CUstream hStream) {
        return alloc_async(dptr, bytesize, pool, true, hStream);
}

/* A pool's allocation goes back to its pool; a cuMemAlloc one back to the device. */
static CUresult free_async(CUdeviceptr dptr, CUstream hStream) {
        struct standin_alloc *a;
        CUresult r;

        if (!stream_valid(hStream))
                return MA_CUDA_ERROR_INVALID_HANDLE;
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

STANDIN_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
        return free_async(dptr, hStream);
}

STANDIN_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
        return free_async(dptr, hStream);
}

STANDIN_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
        struct standin_pool *p;
        uint64_t keep, used;
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        p = pool_find(pool);
        if (!p)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        /* A keep past the capacity keeps everything (and must not wrap when rounded). */
        keep = minBytesToKeep >= p->reserved ? p->reserved : granule_round(minBytesToKeep);
        used = granule_round(p->used);
        pool_shrink(p, keep > used ? keep : used);
        return standin_unlock(MA_CUDA_SUCCESS);
}

/*
 * The attributes the tests and the interposer read, all cuuint64_t: the
 * release threshold, reserved and used, current and high. The three
 * reuse policies (1-3, int) read as enabled and are taken as set.
 */
STANDIN_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
        struct standin_pool *p;
        cuuint64_t v;
        CUresult r;

        if (!value)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        p = pool_find(pool);
        if (!p)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        switch ((int)attr) {
        case 1:
        case 2:
        case 3:
                *(int *)value = 1;
                return standin_unlock(MA_CUDA_SUCCESS);
        case MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
                v = p->release_threshold;
                break;
        case MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
                v = p->reserved;
                break;
        case MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
                v = p->reserved_high;
                break;
        case MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
                v = p->used;
                break;
        case MA_CU_MEMPOOL_ATTR_USED_MEM_HIGH:
                v = p->used_high;
                break;
        default:
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        }
        *(cuuint64_t *)value = v;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* The threshold is kept; a high mark is reset to the current figure by setting it to 0, as documented. */
STANDIN_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
        struct standin_pool *p;
        CUresult r;

        if (!value)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        p = pool_find(pool);
        if (!p)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        switch ((int)attr) {
        case 1:
        case 2:
        case 3:
                return standin_unlock(MA_CUDA_SUCCESS);
        case MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
                p->release_threshold = *(const cuuint64_t *)value;
                return standin_unlock(MA_CUDA_SUCCESS);
        case MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case MA_CU_MEMPOOL_ATTR_USED_MEM_HIGH:
                if (*(const cuuint64_t *)value != 0)
                        return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
                if ((int)attr == MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
                        p->reserved_high = p->reserved;
                else
                        p->used_high = p->used;
                return standin_unlock(MA_CUDA_SUCCESS);
        default:
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        }
}
