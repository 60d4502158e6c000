/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The real driver's entry points (real.h).
 *
 * The interposer defines dlsym() (lookup.c), so glibc's own is reached
 * by version: dlvsym() is not hooked. Debian 12's glibc exports dlsym at
 * GLIBC_2.34 (libc proper) and at GLIBC_2.2.5 (x86-64's first); the
 * newest is tried first.
 */

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "real.h"

MaReal ma_real;

static MaDlsymFn real_dlsym;
static pthread_once_t real_dlsym_once = PTHREAD_ONCE_INIT;

MA_NO_SANITIZE static void find_real_dlsym(void) {
        static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0" };

        for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !real_dlsym; i++)
                real_dlsym = (MaDlsymFn) dlvsym(RTLD_NEXT, "dlsym", versions[i]);
}

MA_NO_SANITIZE MaDlsymFn ma_glibc_dlsym(void) {
        (void) pthread_once(&real_dlsym_once, find_real_dlsym);
        return real_dlsym;
}

MA_NO_SANITIZE void *ma_real_dlsym(void *handle, const char *symbol) {
        MaDlsymFn fn = ma_glibc_dlsym();

        return fn ? fn(handle, symbol) : NULL;
}

void *ma_real_get(void *_Atomic *slot, const char *name) {
        return ma_real_get_from(slot, name, "libcuda.so.1");
}

void *ma_real_get_from(void *_Atomic *slot, const char *name, const char *soname) {
        void *fn = atomic_load_explicit(slot, memory_order_acquire);
        void *lib;

        if (fn)
                return fn;
        /* Linked against the library, or preloaded ahead of a program that was. */
        fn = ma_real_dlsym(RTLD_NEXT, name);
        if (!fn) {
                /* Loaded later by the program (dlopen): found by its name,
                 * without loading it (a hook is only called once it is). */
                lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
                if (lib) {
                        fn = ma_real_dlsym(lib, name);
                        dlclose(lib);
                }
        }
        if (fn)
                atomic_store_explicit(slot, fn, memory_order_release);
        return fn;
}
