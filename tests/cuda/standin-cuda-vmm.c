/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's virtual memory management: physical allocations
 * (cuMemCreate, cuMemRelease), address ranges (cuMemAddressReserve,
 * cuMemAddressFree), and the mappings between them (cuMemMap, cuMemUnmap,
 * cuMemSetAccess), at a granularity of 2 MiB.
 *
 * A physical allocation is a memfd of its size (sparse: untouched pages
 * cost nothing), counted against its device's capacity when made; an
 * address range is an inaccessible anonymous reservation; a mapping puts
 * part of a memfd at an address of a range, inaccessible until
 * cuMemSetAccess opens it, as on the device. An allocation lives while
 * its handle is unreleased or any mapping of it remains (the driver's
 * rule), and its bytes stop counting only when it goes: a handle
 * released while mapped still holds device memory.
 *
 * cuMemAddressReserve ignores the address hint (the driver may too).
 */

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin-cuda.h"

struct standin_vmm_handle {
        struct standin_vmm_handle *next;
        int fd;
        size_t size;
        int device;
        int refs; /* 1 until released, and 1 for each mapping */
        bool released;
};

struct standin_vmm_range {
        struct standin_vmm_range *next;
        CUdeviceptr ptr;
        size_t size;
};

struct standin_vmm_mapping {
        struct standin_vmm_mapping *next;
        CUdeviceptr ptr;
        size_t size;
        struct standin_vmm_handle *handle;
};

static bool granular(size_t bytes) {
        return bytes > 0 && bytes % STANDIN_GRANULE == 0;
}

/* The props the stand-in makes: device memory on one of its devices. */
static CUresult prop_device(const CUmemAllocationProp *prop, int *ret) {
        const struct ma_cu_mem_allocation_prop *p = (const void *)prop;

        if (!p || p->type != MA_CU_MEM_ALLOCATION_TYPE_PINNED || p->location.type != MA_CU_MEM_LOCATION_TYPE_DEVICE)
                return MA_CUDA_ERROR_INVALID_VALUE;
        if (p->location.id < 0 || p->location.id >= STANDIN_DEVICES)
                return MA_CUDA_ERROR_INVALID_DEVICE;
        *ret = p->location.id;
        return MA_CUDA_SUCCESS;
}

static struct standin_vmm_handle *handle_find(CUmemGenericAllocationHandle handle) {
        for (struct standin_vmm_handle *h = standin.handles; h; h = h->next)
                if ((CUmemGenericAllocationHandle)(uintptr_t)h == handle && !h->released)
                        return h;
        return NULL;
}

/* Drop one reference; the last one gives the device memory back. */
static void handle_unref(struct standin_vmm_handle *h) {
        if (--h->refs > 0)
                return;
        standin_uncharge(h->device, h->size);
        for (struct standin_vmm_handle **p = &standin.handles; *p; p = &(*p)->next)
                if (*p == h) {
                        *p = h->next;
                        break;
                }
        close(h->fd);
        free(h);
}

static struct standin_vmm_range *range_holding(CUdeviceptr ptr, size_t size) {
        for (struct standin_vmm_range *r = standin.ranges; r; r = r->next)
                if (ptr >= r->ptr && ptr - r->ptr <= r->size && size <= r->size - (ptr - r->ptr))
                        return r;
        return NULL;
}

static bool overlaps(CUdeviceptr a, size_t asize, CUdeviceptr b, size_t bsize) {
        return a < b + bsize && b < a + asize;
}

void standin_reset_vmm(void) {
        while (standin.mappings) {
                struct standin_vmm_mapping *m = standin.mappings;

                standin.mappings = m->next;
                free(m);
        }
        while (standin.ranges) {
                struct standin_vmm_range *r = standin.ranges;

                standin.ranges = r->next;
                munmap((void *)(uintptr_t)r->ptr, r->size);
                free(r);
        }
        while (standin.handles) {
                struct standin_vmm_handle *h = standin.handles;

                standin.handles = h->next;
                close(h->fd);
                free(h);
        }
}

STANDIN_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                      CUmemAllocationGranularity_flags option) {
        CUresult r;
        int dev;

        if (!granularity || ((int)option != 0 && (int)option != 1))
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = prop_device(prop, &dev);
        if (r == MA_CUDA_SUCCESS)
                *granularity = STANDIN_GRANULE; /* minimum and recommended alike */
        return standin_unlock(r);
}

STANDIN_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                    unsigned long long flags) {
        struct standin_vmm_handle *h;
        CUresult r;
        int dev;

        if (!handle || !granular(size) || flags != 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r == MA_CUDA_SUCCESS)
                r = prop_device(prop, &dev);
        if (r == MA_CUDA_SUCCESS)
                r = standin_charge(dev, size);
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        h = calloc(1, sizeof(*h));
        if (h)
                h->fd = memfd_create("memacct-standin-vmm", MFD_CLOEXEC);
        if (!h || h->fd < 0 || ftruncate(h->fd, (off_t)size) < 0) {
                if (h && h->fd >= 0)
                        close(h->fd);
                free(h);
                standin_uncharge(dev, size);
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        }
        h->size = size;
        h->device = dev;
        h->refs = 1;
        h->next = standin.handles;
        standin.handles = h;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
        return standin_unlock(MA_CUDA_SUCCESS);
}

STANDIN_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
        struct standin_vmm_handle *h;
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        h = handle_find(handle);
        if (!h)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        h->released = true;
        handle_unref(h);
        return standin_unlock(MA_CUDA_SUCCESS);
}

STANDIN_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                            unsigned long long flags) {
        struct standin_vmm_range *range;
        size_t align = alignment > STANDIN_GRANULE ? alignment : STANDIN_GRANULE;
        uintptr_t base, start;
        CUresult r;
        void *p;

        (void)addr;
        if (!ptr || !granular(size) || flags != 0 || (alignment & (alignment - 1)) != 0 || size > SIZE_MAX - align)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        range = calloc(1, sizeof(*range));
        /* Over-reserve by the alignment, then cut off what lies outside the aligned range. */
        p = range ? mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : MAP_FAILED;
        if (p == MAP_FAILED) {
                free(range);
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        }
        base = (uintptr_t)p;
        start = (base + align - 1) & ~(uintptr_t)(align - 1);
        if (start > base)
                munmap(p, start - base);
        if (base + align > start)
                munmap((void *)(start + size), base + align - start);
        range->ptr = start;
        range->size = size;
        range->next = standin.ranges;
        standin.ranges = range;
        *ptr = start;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* The whole range as reserved, with nothing mapped in it any more. */
STANDIN_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        for (struct standin_vmm_mapping *m = standin.mappings; m; m = m->next)
                if (overlaps(m->ptr, m->size, ptr, size))
                        return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        for (struct standin_vmm_range **p = &standin.ranges; *p; p = &(*p)->next)
                if ((*p)->ptr == ptr && (*p)->size == size) {
                        struct standin_vmm_range *range = *p;

                        *p = range->next;
                        munmap((void *)(uintptr_t)range->ptr, range->size);
                        free(range);
                        return standin_unlock(MA_CUDA_SUCCESS);
                }
        return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
}

STANDIN_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                 unsigned long long flags) {
        struct standin_vmm_mapping *m;
        struct standin_vmm_handle *h;
        CUresult r;

        if (!granular(size) || offset % STANDIN_GRANULE != 0 || flags != 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        h = handle_find(handle);
        if (!h || offset > h->size || size > h->size - offset || !range_holding(ptr, size))
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        for (m = standin.mappings; m; m = m->next)
                if (overlaps(m->ptr, m->size, ptr, size))
                        return standin_unlock(MA_CUDA_ERROR_ALREADY_MAPPED);
        m = calloc(1, sizeof(*m));
        if (!m)
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, (off_t)offset) == MAP_FAILED) {
                free(m);
                return standin_unlock(MA_CUDA_ERROR_OUT_OF_MEMORY);
        }
        m->ptr = ptr;
        m->size = size;
        m->handle = h;
        h->refs++;
        m->next = standin.mappings;
        standin.mappings = m;
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* Every mapping inside [ptr, ptr + size) goes; one that lies across an edge refuses the call. */
STANDIN_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
        bool any = false;
        CUresult r;

        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        for (struct standin_vmm_mapping *m = standin.mappings; m; m = m->next)
                if (overlaps(m->ptr, m->size, ptr, size)) {
                        if (m->ptr < ptr || m->ptr - ptr + m->size > size)
                                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
                        any = true;
                }
        if (!any)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        for (struct standin_vmm_mapping **p = &standin.mappings; *p;) {
                struct standin_vmm_mapping *m = *p;

                if (!overlaps(m->ptr, m->size, ptr, size)) {
                        p = &m->next;
                        continue;
                }
                /* Back to an inaccessible reservation, so the range stays ours. */
                mmap((void *)(uintptr_t)m->ptr, m->size, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
                *p = m->next;
                handle_unref(m->handle);
                free(m);
        }
        return standin_unlock(MA_CUDA_SUCCESS);
}

/* The range must be mapped throughout; the host gets the widest access any descriptor grants. */
STANDIN_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
        const struct ma_cu_mem_access_desc *d = (const void *)desc;
        int prot = PROT_NONE;
        CUdeviceptr at = ptr;
        CUresult r;

        if (!d || count == 0 || size == 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < count; i++) {
                if (d[i].location.type != MA_CU_MEM_LOCATION_TYPE_DEVICE || d[i].location.id < 0 ||
                    d[i].location.id >= STANDIN_DEVICES)
                        return MA_CUDA_ERROR_INVALID_DEVICE;
                if (d[i].flags == MA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                        prot = PROT_READ | PROT_WRITE;
                else if (d[i].flags == MA_CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
                        prot = PROT_READ;
                else if (d[i].flags != MA_CU_MEM_ACCESS_FLAGS_PROT_NONE && d[i].flags != MA_CU_MEM_ACCESS_FLAGS_PROT_READ)
                        return MA_CUDA_ERROR_INVALID_VALUE;
        }
        standin_lock();
        r = standin_ready();
        if (r != MA_CUDA_SUCCESS)
                return standin_unlock(r);
        while (at - ptr < size) {
                struct standin_vmm_mapping *m = standin.mappings;

                while (m && !(at >= m->ptr && at - m->ptr < m->size))
                        m = m->next;
                if (!m)
                        return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
                at = m->ptr + m->size;
        }
        if (mprotect((void *)(uintptr_t)ptr, size, prot) < 0)
                return standin_unlock(MA_CUDA_ERROR_INVALID_VALUE);
        return standin_unlock(MA_CUDA_SUCCESS);
}
