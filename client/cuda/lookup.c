/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How programs find the hooks (docs/cuda.md, "How a program reaches the
 * hooks").
 *
 * A program linked against libcuda.so.1 calls the hooks directly: the
 * preloaded interposer comes first in the global scope. But the CUDA
 * runtime, and so every framework, dlopen()s the driver and asks it for
 * cuGetProcAddress_v2 by dlsym(handle, ...), a lookup in the driver's own
 * scope that a preloaded library is not in; then it asks
 * cuGetProcAddress() for every other entry point. So both are hooked:
 *
 * - dlsym(): a driver entry point the interposer hooks, asked of any
 *   handle, is answered with the hook (the real one is what the hook
 *   calls, real.c);
 * - cuGetProcAddress(): the driver is asked first; when what it answers
 *   is exactly the real function behind one of the hooks, the hook is
 *   handed out instead. Comparing pointers, rather than parsing names
 *   and versions, hands out a hook only for the very version it wraps.
 *
 * dlsym(RTLD_NEXT, ...) means "after the caller": glibc finds the caller
 * by the return address, so that call must reach glibc as a tail call,
 * with the caller's return address still on the stack.
 */

#include <dlfcn.h>
#include <string.h>

#include "hooks.h"
#include "nvml-abi.h"
#include "real.h"

/* The driver's hooks by exported name. */
#define MA_HOOK_ROW(name, params, args) { #name, (void *) name, &ma_real.name },
static const MaHook hooks[] = {
        MA_CUDA_HOOKS(MA_HOOK_ROW)
        MA_CUDA_PROC_ADDRESS(MA_HOOK_ROW)
};
#undef MA_HOOK_ROW

/* NVML's (hooks-nvml.c), found by dlsym() only. */
static const MaHook nvml_hooks[] = {
        { "nvmlDeviceGetMemoryInfo", (void *) nvmlDeviceGetMemoryInfo, NULL },
        { "nvmlDeviceGetMemoryInfo_v2", (void *) nvmlDeviceGetMemoryInfo_v2, NULL },
};

MA_NO_SANITIZE static const MaHook *find(const MaHook *v, size_t n, const char *symbol) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].name, symbol) == 0)
                        return &v[i];
        return NULL;
}

MA_NO_SANITIZE const MaHook *ma_hook_by_symbol(const char *symbol) {
        if (!symbol)
                return NULL;
        if (symbol[0] == 'c' && symbol[1] == 'u')
                return find(hooks, sizeof(hooks) / sizeof(hooks[0]), symbol);
        if (strncmp(symbol, "nvml", 4) == 0)
                return find(nvml_hooks, sizeof(nvml_hooks) / sizeof(nvml_hooks[0]), symbol);
        return NULL;
}

/* The hook whose real function is @fn: what cuGetProcAddress() answered. */
static void *hook_of_real(void *fn) {
        for (size_t i = 0; fn && i < sizeof(hooks) / sizeof(hooks[0]); i++)
                if (ma_real_get(hooks[i].real, hooks[i].name) == fn)
                        return hooks[i].fn;
        return NULL;
}

/* After the driver answered @pfn: the hook in its place, where there is one. */
static void swap_in_hook(void **pfn) {
        void *hook = pfn ? hook_of_real(*pfn) : NULL;

        if (hook)
                *pfn = hook;
}

_public_ CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *symbolStatus) {
        ma_cuGetProcAddress_v2_fn fn = MA_REAL(cuGetProcAddress_v2);
        CUresult cr;

        if (!fn)
                return MA_CUDA_ERROR_NOT_FOUND;
        cr = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
        if (cr == MA_CUDA_SUCCESS)
                swap_in_hook(pfn);
        return cr;
}

_public_ CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
        ma_cuGetProcAddress_fn fn = MA_REAL(cuGetProcAddress);
        CUresult cr;

        if (!fn)
                return MA_CUDA_ERROR_NOT_FOUND;
        cr = fn(symbol, pfn, cudaVersion, flags);
        if (cr == MA_CUDA_SUCCESS)
                swap_in_hook(pfn);
        return cr;
}

/* Any handle but RTLD_NEXT: the real answer, or the hook of a hooked entry point. */
MA_NO_SANITIZE static void *lookup(void *handle, const char *symbol) {
        void *fn = ma_real_dlsym(handle, symbol);
        const MaHook *h;

        if (!fn)
                return NULL;
        h = ma_hook_by_symbol(symbol);
        return h ? h->fn : fn;
}

#if defined(__clang__)
#define MA_TAIL __attribute__((musttail))
#define MA_TAIL_FN
#else
#define MA_TAIL
/* GCC 12 has no musttail: a sibling call, at any -O of the build. */
#define MA_TAIL_FN __attribute__((optimize("O2", "optimize-sibling-calls")))
#endif

_public_ MA_TAIL_FN MA_NO_SANITIZE void *dlsym(void *handle, const char *symbol) {
        if (handle == RTLD_NEXT) {
                MaDlsymFn fn = ma_glibc_dlsym();

                if (!fn)
                        return NULL;
                MA_TAIL return fn(handle, symbol);
        }
        MA_TAIL return lookup(handle, symbol);
}
