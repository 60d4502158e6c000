/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the hooks share (hooks-mem.c, hooks-pool.c, hooks-vmm.c): an
 * allocation charged before it is made, a free given back after, and
 * the table of every hook by name for cuGetProcAddress() and dlsym()
 * (lookup.c).
 */

#include <stdint.h>

#include "cuda-abi.h"
#include "ledger.h"
#include "macro.h"

/* cuGetProcAddress() in both its forms (lookup.c): not in cuda-abi.h,
 * where cuda.h's macro would rename the 4-argument one. */
#define MA_PROC_ADDRESS_PROTOTYPE(name, params, args) CUresult name params;
MA_CUDA_PROC_ADDRESS(MA_PROC_ADDRESS_PROTOTYPE)
#undef MA_PROC_ADDRESS_PROTOTYPE

/* Makes the allocation, and says its key (pointer or handle) into @ret_key. */
typedef CUresult (*MaAllocFn)(void *userdata, uint64_t *ret_key);
/* Frees it. */
typedef CUresult (*MaFreeFn)(void *userdata);

/**
 * ma_alloc_charged() - charge @bytes on @device, then @alloc; its key
 * recorded in the ledger of @kind with what was charged. A refused
 * charge is CUDA_ERROR_OUT_OF_MEMORY and @alloc is not called; a failed
 * @alloc gives the charge back. Return: what @alloc returned, or the
 * refusal.
 */
CUresult ma_alloc_charged(MaKind kind, int device, uint64_t bytes, MaAllocFn alloc, void *userdata,
                          uint64_t *ret_key);

/**
 * ma_free_charged() - @free_fn, then give back what @key of @kind was
 * charged; a failed free keeps the charge. Return: what @free_fn returned.
 */
CUresult ma_free_charged(MaKind kind, uint64_t key, MaFreeFn free_fn, void *userdata);

/**
 * ma_pools_trim() - a reclaim request for @bytes on @device: trim its
 * pools' unused reserve, that much at most, and settle their charges.
 * Return: the bytes their reserve went down by.
 */
uint64_t ma_pools_trim(int device, uint64_t bytes);

/** ma_array_bytes() - the bytes an array of @width x @height x @depth elements of @format x @channels takes. */
uint64_t ma_array_bytes(size_t width, size_t height, size_t depth, int format, unsigned channels);

/* One hook, as cuGetProcAddress() names it. */
typedef struct MaHook {
        const char *name;    /* the versioned symbol: "cuMemAlloc_v2" */
        void *fn;            /* the interposer's */
        void *_Atomic *real; /* where the driver's is kept (real.h) */
} MaHook;

/** ma_hook_by_symbol() - the hook exported as @symbol ("cuMemAlloc_v2"); NULL if none. */
const MaHook *ma_hook_by_symbol(const char *symbol);
