/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The real driver's entry points behind the interposer's hooks, found
 * once each, on first use: the program may load libcuda.so.1 itself
 * (dlopen, as the CUDA runtime does) long after the interposer was
 * preloaded, so nothing can be looked up at load time. Lookups go
 * through the real dlsym(): ours (lookup.c) hands out hooks.
 */

#include "cuda-abi.h"

/* The real functions, one field per entry point of cuda-abi.h's tables. */
typedef struct MaReal {
#define MA_REAL_FIELD(name, params, args) void *_Atomic name;
        MA_CUDA_HOOKS(MA_REAL_FIELD)
        MA_CUDA_CALLS(MA_REAL_FIELD)
        MA_CUDA_PROC_ADDRESS(MA_REAL_FIELD)
#undef MA_REAL_FIELD
} MaReal;

extern MaReal ma_real;

/*
 * MA_REAL(name) - the real @name, looked up on first use (NULL when no
 * driver has it: the hook then answers CUDA_ERROR_NOT_FOUND, as a
 * cuGetProcAddress() that finds nothing). A lookup racing another finds
 * the same pointer: the store is idempotent.
 */
#define MA_REAL(name) ((ma_##name##_fn) ma_real_get(&ma_real.name, #name))

void *ma_real_get(void *_Atomic *slot, const char *name);

/** ma_real_get_from() - ma_real_get() of another library, @soname ("libnvidia-ml.so.1"). */
void *ma_real_get_from(void *_Atomic *slot, const char *name, const char *soname);

/** ma_real_dlsym() - glibc's dlsym(), not the interposer's. */
void *ma_real_dlsym(void *handle, const char *symbol);

/*
 * The path of dlsym() is not instrumented in a sanitizer build:
 * the sanitizers' runtime resolves its interceptors with it before it has
 * set itself up, and the interposer, preloaded, answers that call.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__has_feature)
#define MA_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define MA_NO_SANITIZE
#endif

/** ma_glibc_dlsym() - glibc's dlsym() itself, for a tail call (NULL: not found). */
typedef void *(*MaDlsymFn)(void *handle, const char *symbol);
MaDlsymFn ma_glibc_dlsym(void);
