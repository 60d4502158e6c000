/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The stand-in CUDA driver's internal header: the state its files share
 * and the helpers they call. Built two ways: as libcuda.so.1, on
 * cuda-abi.h's types alone, and, where the toolkit is installed, once
 * more with -DMA_CHECK_WITH_CUDA_H against cuda.h (standin-cuda-api.h).
 *
 * Every entry point is one of the driver's, with its exact signature and
 * its documented results for the cases the tests reach; everything is
 * per process (the real driver's capacity is the device's, shared by all
 * processes; here each process has devices of its own).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "standin-cuda-api.h"
#include "standin-devices.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))

/*
 * The shared state, under one mutex (standin.lock): every entry point
 * that reads or changes it takes the lock for its whole length, so no
 * state is ever seen half-changed and no lock order exists. The lists are
 * short (what one test process holds), so they are searched linearly.
 */
struct standin_pool;
struct standin_vmm_handle;
struct standin_vmm_range;
struct standin_vmm_mapping;
struct standin_array;

/* An allocation of cuMemAlloc*(), or of a pool (@pool set). */
struct standin_alloc {
        struct standin_alloc *next;
        CUdeviceptr ptr;
        size_t bytes;     /* what the caller asked for */
        size_t map_bytes; /* what is mapped at ptr (bytes rounded up to a page) */
        int device;
        struct standin_pool *pool;
};

struct standin_pool {
        struct standin_pool *next;
        int device;
        bool is_default;
        bool destroyed; /* by cuMemPoolDestroy() while allocations were out */
        uint64_t reserved, reserved_high; /* bytes held from the device, whole granules */
        uint64_t used, used_high;         /* bytes handed out */
        uint64_t release_threshold;       /* what a synchronisation leaves reserved; see standin-cuda-pool.c */
};

struct standin_state {
        pthread_mutex_t lock;
        bool initialised;
        uint64_t capacity;                /* each device's */
        uint64_t held[STANDIN_DEVICES];   /* what counts against the capacity */
        int primary_refs[STANDIN_DEVICES];
        struct standin_alloc *allocs;
        struct standin_pool *pools; /* created ones; the defaults are below */
        struct standin_pool default_pool[STANDIN_DEVICES];
        struct standin_vmm_handle *handles;
        struct standin_vmm_range *ranges;
        struct standin_vmm_mapping *mappings;
        struct standin_array *arrays;
};

extern struct standin_state standin;

/* A context: a device and whether it is the device's primary one. */
struct CUctx_st {
        int device;
        bool primary;
};

/**
 * standin_lock() - take the state's lock; standin_unlock() gives it back
 * and returns @r, so that `return standin_unlock(r);` ends an entry point.
 */
void standin_lock(void);
CUresult standin_unlock(CUresult r);

/**
 * standin_ready() - the checks of every entry point but cuInit(): with
 * the lock held, the driver is initialised. Return: CUDA_SUCCESS or
 * CUDA_ERROR_NOT_INITIALIZED.
 */
CUresult standin_ready(void);

/**
 * standin_current_device() - the device of the calling thread's current
 * context, with the lock held. Return: CUDA_SUCCESS with *@ret set, or
 * CUDA_ERROR_INVALID_CONTEXT when the thread has none.
 */
CUresult standin_current_device(int *ret);

/**
 * standin_charge() - count @bytes against @device's capacity, with the
 * lock held. Return: CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY (nothing
 * counted) when they do not fit. standin_uncharge() takes them back.
 */
CUresult standin_charge(int device, uint64_t bytes);
void standin_uncharge(int device, uint64_t bytes);

/**
 * standin_map() - @bytes of host memory, read-write, reserved but not
 * backed until touched (MAP_NORESERVE): what a device pointer points at.
 * Return: the address, or 0 when the host refuses.
 */
CUdeviceptr standin_map(size_t bytes);

/**
 * standin_alloc_add() - a new allocation of @bytes on @device (from
 * @pool, or NULL), with the lock held; the caller has charged what it
 * must. Return: CUDA_SUCCESS with *@ret set, or CUDA_ERROR_OUT_OF_MEMORY
 * when the host refuses.
 */
CUresult standin_alloc_add(int device, size_t bytes, struct standin_pool *pool, CUdeviceptr *ret);

/**
 * standin_alloc_take() - the allocation at @ptr, out of the list, with
 * the lock held; the caller unmaps and frees it (standin_alloc_free()).
 * Return: it, or NULL when @ptr is not the start of one.
 */
struct standin_alloc *standin_alloc_take(CUdeviceptr ptr);
void standin_alloc_free(struct standin_alloc *a);

/**
 * standin_pool_alloc() / standin_pool_free() - a pool's part of an
 * allocation and of its free, with the lock held (standin-cuda-pool.c).
 */
CUresult standin_pool_alloc(struct standin_pool *pool, size_t bytes, CUdeviceptr *ret);
void standin_pool_free(struct standin_alloc *a);
/* A synchronisation: each pool's reserve above its release threshold given back. Lock held. */
void standin_pools_release(void);

/**
 * standin_reset_*() - forget a concept's state in a forked child
 * (standin-cuda.c's atfork handler): unmap what it mapped, free what it
 * allocated, so the child starts from an uninitialised driver.
 */
void standin_reset_allocs(void);
void standin_reset_pools(void);
void standin_reset_vmm(void);
void standin_reset_arrays(void);
