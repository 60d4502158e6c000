/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver itself, through its API as a CUDA program calls it
 * (linked with -lcuda): initialisation, devices and contexts, the
 * capacity and its refusal, the pool arithmetic, VMM, arrays, error
 * names, many threads at once, and a forked child. Expected figures are
 * computed here from the documented models (standin-cuda-pool.c,
 * cuda-array-bytes.h), never read back from the stand-in.
 *
 * The capacity is set to CAP before the first cuInit(); tests run in
 * order in one process and each gives back what it takes, so each starts
 * from both devices empty.
 */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda-prog.h"

#define MIB ((size_t)1 << 20)
#define CAP (256 * MIB)
#define GRANULE (2 * MIB)

#define assert_cu(call, want) assert_int_equal((int)(call), (int)(want))
#define assert_ok(call) assert_cu(call, MA_CUDA_SUCCESS)

static size_t round_up(size_t v, size_t to) {
        return (v + to - 1) / to * to;
}

/* Make @dev's primary context current; Return: nothing, asserted. */
static void use_device(int dev) {
        CUcontext ctx;

        assert_ok(cuInit(0));
        assert_ok(cuDevicePrimaryCtxRetain(&ctx, dev));
        assert_ok(cuCtxSetCurrent(ctx));
}

static void release_device(int dev) {
        assert_ok(cuDevicePrimaryCtxRelease_v2(dev));
}

static size_t free_now(void) {
        size_t f, t;

        assert_ok(cuMemGetInfo_v2(&f, &t));
        assert_int_equal(t, CAP);
        return f;
}

static void test_before_and_after_init(void **state) {
        char buf[64];
        int v = 0, n = 0;
        CUdevice d;
        size_t total;

        (void)state;
        assert_ok(cuDriverGetVersion(&v));
        assert_int_equal(v, 13000);
        assert_cu(cuDeviceGetCount(&n), MA_CUDA_ERROR_NOT_INITIALIZED);
        assert_cu(cuInit(1), MA_CUDA_ERROR_INVALID_VALUE);
        assert_ok(cuInit(0));
        assert_ok(cuDeviceGetCount(&n));
        assert_int_equal(n, 2);
        assert_ok(cuDeviceGet(&d, 1));
        assert_int_equal(d, 1);
        assert_cu(cuDeviceGet(&d, 2), MA_CUDA_ERROR_INVALID_DEVICE);
        /* Upper-case hex, as the real driver prints it. */
        assert_ok(cuDeviceGetPCIBusId(buf, sizeof(buf), 0));
        assert_string_equal(buf, "0000:3B:00.0");
        assert_ok(cuDeviceGetPCIBusId(buf, sizeof(buf), 1));
        assert_string_equal(buf, "0000:86:00.0");
        assert_ok(cuDeviceGetName(buf, sizeof(buf), 1));
        assert_string_equal(buf, "memacct stand-in GPU 1");
        assert_ok(cuDeviceTotalMem_v2(&total, 0));
        assert_int_equal(total, CAP);
}

static void *no_context_thread(void *arg) {
        CUdevice d;
        size_t f, t;
        CUdeviceptr p;

        (void)arg;
        assert_cu(cuCtxGetDevice(&d), MA_CUDA_ERROR_INVALID_CONTEXT);
        assert_cu(cuCtxGetDevice_v2(&d, NULL), MA_CUDA_ERROR_INVALID_CONTEXT);
        assert_cu(cuMemGetInfo_v2(&f, &t), MA_CUDA_ERROR_INVALID_CONTEXT);
        assert_cu(cuMemAlloc_v2(&p, MIB), MA_CUDA_ERROR_INVALID_CONTEXT);
        return NULL;
}

static void test_contexts_are_per_thread(void **state) {
        CUcontext ctx, cur, made;
        pthread_t t;
        CUdevice d;

        (void)state;
        use_device(1);
        assert_ok(cuCtxGetDevice(&d));
        assert_int_equal(d, 1);
        assert_ok(cuCtxGetCurrent(&cur));
        assert_ok(cuDevicePrimaryCtxRetain(&ctx, 1));
        assert_ptr_equal(cur, ctx);
        assert_ok(cuCtxGetDevice_v2(&d, NULL));
        assert_int_equal(d, 1);
        /* Another thread has no current context: the driver's is per thread. */
        assert_int_equal(pthread_create(&t, NULL, no_context_thread, NULL), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_ok(cuCtxCreate_v2(&made, 0, 0));
        assert_ok(cuCtxGetDevice(&d));
        assert_int_equal(d, 0);
        assert_ok(cuCtxGetDevice_v2(&d, ctx));
        assert_int_equal(d, 1);
        assert_ok(cuCtxDestroy_v2(made));
        assert_cu(cuCtxGetDevice(&d), MA_CUDA_ERROR_INVALID_CONTEXT);
        release_device(1);
        release_device(1);
        assert_cu(cuDevicePrimaryCtxRelease_v2(1), MA_CUDA_ERROR_INVALID_CONTEXT);
}

static void test_capacity_refuses_and_is_per_device(void **state) {
        CUdeviceptr a, b, base, m, pitched;
        size_t size, pitch;

        (void)state;
        use_device(0);
        assert_int_equal(free_now(), CAP);
        assert_ok(cuMemAlloc_v2(&a, CAP / 2));
        assert_int_equal(free_now(), CAP - CAP / 2);
        /* One byte past what is left: the driver's refusal, nothing counted. */
        assert_cu(cuMemAlloc_v2(&b, CAP - CAP / 2 + 1), MA_CUDA_ERROR_OUT_OF_MEMORY);
        assert_int_equal(free_now(), CAP - CAP / 2);
        assert_ok(cuMemAlloc_v2(&b, CAP - CAP / 2));
        assert_int_equal(free_now(), 0);
        assert_ok(cuMemGetAddressRange_v2(&base, &size, b + 12345));
        assert_true(base == b && size == CAP - CAP / 2);
        assert_cu(cuMemGetAddressRange_v2(&base, &size, 1), MA_CUDA_ERROR_NOT_FOUND);
        /* Device 1 is another device. */
        use_device(1);
        assert_int_equal(free_now(), CAP);
        assert_ok(cuMemAllocManaged(&m, 3 * MIB, MA_CU_MEM_ATTACH_GLOBAL));
        assert_int_equal(free_now(), CAP - 3 * MIB);
        assert_ok(cuMemAllocPitch_v2(&pitched, &pitch, 1000, 10, 4));
        assert_int_equal(pitch, round_up(1000, 512));
        assert_int_equal(free_now(), CAP - 3 * MIB - round_up(1000, 512) * 10);
        ((volatile char *)(uintptr_t)pitched)[pitch * 10 - 1] = 1; /* it is memory */
        assert_ok(cuMemFree_v2(pitched));
        assert_ok(cuMemFree_v2(m));
        assert_cu(cuMemFree_v2(m), MA_CUDA_ERROR_INVALID_VALUE);
        assert_cu(cuMemAlloc_v2(&m, 0), MA_CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(free_now(), CAP);
        release_device(1);
        use_device(0);
        assert_ok(cuMemFree_v2(a));
        assert_ok(cuMemFree_v2(b));
        assert_int_equal(free_now(), CAP);
        release_device(0);
        release_device(0);
}

static cuuint64_t pool_attr(CUmemoryPool pool, int attr) {
        cuuint64_t v = 0;

        assert_ok(cuMemPoolGetAttribute(pool, attr, &v));
        return v;
}

static void test_pool_reserves_granules_until_trimmed(void **state) {
        CUmemoryPool pool;
        CUdeviceptr a, b, c;
        cuuint64_t zero = 0, threshold = 64 * MIB, keep_all = UINT64_MAX;

        (void)state;
        use_device(0);
        assert_ok(cuDeviceGetDefaultMemPool(&pool, 0));
        /* As a framework keeps its reserve: synchronisations give nothing back. */
        assert_ok(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
        assert_ok(cuMemAllocAsync(&a, 1, NULL));
        assert_int_equal(pool_attr(pool, 5), GRANULE);
        assert_int_equal(pool_attr(pool, 7), 1);
        assert_ok(cuMemAllocAsync_ptsz(&b, 3 * MIB, MA_CU_STREAM_PER_THREAD));
        assert_int_equal(pool_attr(pool, 5), round_up(3 * MIB + 1, GRANULE));
        assert_int_equal(free_now(), CAP - round_up(3 * MIB + 1, GRANULE));
        assert_ok(cuMemFreeAsync(a, NULL));
        assert_ok(cuMemFreeAsync_ptsz(b, MA_CU_STREAM_PER_THREAD));
        assert_ok(cuStreamSynchronize(NULL));
        /* Freed, still reserved, still held from the device. */
        assert_int_equal(pool_attr(pool, 7), 0);
        assert_int_equal(pool_attr(pool, 5), 4 * MIB);
        assert_int_equal(free_now(), CAP - 4 * MIB);
        assert_int_equal(pool_attr(pool, 6), 4 * MIB);
        assert_int_equal(pool_attr(pool, 8), 3 * MIB + 1);
        /* keep is rounded up to a granule, and never raises reserved. */
        assert_ok(cuMemPoolTrimTo(pool, 3 * MIB));
        assert_int_equal(pool_attr(pool, 5), 4 * MIB);
        assert_ok(cuMemPoolTrimTo(pool, 1));
        assert_int_equal(pool_attr(pool, 5), GRANULE);
        /* Used memory is never trimmed. */
        assert_ok(cuMemAllocAsync(&c, 5 * MIB, NULL));
        assert_int_equal(pool_attr(pool, 5), 6 * MIB);
        assert_ok(cuMemPoolTrimTo(pool, 0));
        assert_int_equal(pool_attr(pool, 5), 6 * MIB);
        assert_ok(cuMemFree_v2(c)); /* the synchronous free takes pool memory too */
        assert_ok(cuMemPoolTrimTo(pool, 0));
        assert_int_equal(pool_attr(pool, 5), 0);
        assert_int_equal(free_now(), CAP);
        /* A growth past the capacity is refused and changes nothing. */
        assert_cu(cuMemAllocAsync(&c, CAP + 1, NULL), MA_CUDA_ERROR_OUT_OF_MEMORY);
        assert_cu(cuMemAllocAsync(&c, CAP - 1, (CUstream)0x1234), MA_CUDA_ERROR_INVALID_HANDLE);
        assert_int_equal(pool_attr(pool, 5), 0);
        /* High marks reset to the current figure with 0; the threshold is kept. */
        assert_ok(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
        assert_int_equal(pool_attr(pool, 6), 0);
        assert_cu(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_USED_MEM_HIGH, &threshold),
                  MA_CUDA_ERROR_INVALID_VALUE);
        assert_ok(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
        assert_int_equal(pool_attr(pool, 4), 64 * MIB);
        release_device(0);
}

/* A synchronisation gives back the reserve above the release threshold, never what is used. */
static void test_pool_gives_back_at_synchronisation(void **state) {
        cuuint64_t threshold = 3 * MIB, none = 0;
        CUmemoryPool pool;
        CUdeviceptr a, b;

        (void)state;
        use_device(0);
        assert_ok(cuDeviceGetDefaultMemPool(&pool, 0));
        assert_ok(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
        assert_ok(cuMemAllocAsync(&a, 7 * MIB, NULL));
        assert_ok(cuMemAllocAsync(&b, 1 * MIB, NULL));
        assert_int_equal(pool_attr(pool, 5), 8 * MIB);
        assert_ok(cuMemFreeAsync(a, NULL));
        assert_int_equal(pool_attr(pool, 5), 8 * MIB); /* until a synchronisation */
        assert_ok(cuStreamSynchronize(NULL));
        assert_int_equal(pool_attr(pool, 5), 4 * MIB); /* the 3 MiB threshold, in granules */
        assert_int_equal(free_now(), CAP - 4 * MIB);
        assert_ok(cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &none));
        assert_ok(cuStreamSynchronize_ptsz(MA_CU_STREAM_PER_THREAD));
        assert_int_equal(pool_attr(pool, 5), 2 * MIB); /* what b uses stays */
        assert_ok(cuMemFreeAsync(b, NULL));
        assert_ok(cuStreamSynchronize(NULL));
        assert_int_equal(pool_attr(pool, 5), 0);
        assert_int_equal(free_now(), CAP);
        release_device(0);
}

static void test_created_pool_outlives_destroy_until_freed(void **state) {
        CUmemPoolProps props;
        CUmemoryPool pool;
        CUdeviceptr p;

        (void)state;
        use_device(0);
        memset(&props, 0, sizeof(props));
        props.alloc_type = MA_CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = MA_CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 1;
        assert_ok(cuMemPoolCreate(&pool, &props));
        assert_ok(cuMemAllocFromPoolAsync_ptsz(&p, 5 * MIB, pool, NULL));
        use_device(1);
        assert_int_equal(free_now(), CAP - 6 * MIB); /* the pool's device, not the current one */
        assert_ok(cuMemPoolDestroy(pool));
        assert_int_equal(free_now(), CAP - 6 * MIB);
        assert_cu(cuMemPoolTrimTo(pool, 0), MA_CUDA_ERROR_INVALID_VALUE);
        assert_ok(cuMemFreeAsync(p, NULL));
        assert_int_equal(free_now(), CAP);
        release_device(1);
        release_device(0);
}

static void test_vmm_counts_physical_memory(void **state) {
        CUmemAllocationProp prop;
        CUmemAccessDesc access;
        CUmemGenericAllocationHandle h;
        CUdeviceptr va;
        size_t g;

        (void)state;
        use_device(0);
        memset(&prop, 0, sizeof(prop));
        prop.type = MA_CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = MA_CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 1;
        assert_ok(cuMemGetAllocationGranularity(&g, &prop, 0));
        assert_int_equal(g, GRANULE);
        assert_cu(cuMemCreate(&h, MIB, &prop, 0), MA_CUDA_ERROR_INVALID_VALUE);
        assert_cu(cuMemCreate(&h, CAP + GRANULE, &prop, 0), MA_CUDA_ERROR_OUT_OF_MEMORY);
        assert_ok(cuMemCreate(&h, 2 * GRANULE, &prop, 0));
        assert_int_equal(free_now(), CAP); /* on device 1, not the current 0 */
        assert_ok(cuMemAddressReserve(&va, 4 * GRANULE, 0, 0, 0));
        assert_int_equal(va % GRANULE, 0);
        assert_ok(cuMemMap(va + GRANULE, 2 * GRANULE, 0, h, 0));
        assert_cu(cuMemMap(va, 2 * GRANULE, 0, h, 0), MA_CUDA_ERROR_ALREADY_MAPPED);
        access.location = prop.location;
        access.flags = MA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        assert_cu(cuMemSetAccess(va, 2 * GRANULE, &access, 1), MA_CUDA_ERROR_INVALID_VALUE);
        assert_ok(cuMemSetAccess(va + GRANULE, 2 * GRANULE, &access, 1));
        ((volatile char *)(uintptr_t)va)[GRANULE] = 7;
        ((volatile char *)(uintptr_t)va)[3 * GRANULE - 1] = 8;
        /* Released while mapped: still held until the mapping goes. */
        assert_ok(cuMemRelease(h));
        use_device(1);
        assert_int_equal(free_now(), CAP - 2 * GRANULE);
        assert_cu(cuMemAddressFree(va, 4 * GRANULE), MA_CUDA_ERROR_INVALID_VALUE);
        assert_cu(cuMemUnmap(va + GRANULE, GRANULE), MA_CUDA_ERROR_INVALID_VALUE);
        assert_ok(cuMemUnmap(va + GRANULE, 2 * GRANULE));
        assert_int_equal(free_now(), CAP);
        assert_ok(cuMemAddressFree(va, 4 * GRANULE));
        assert_cu(cuMemRelease(h), MA_CUDA_ERROR_INVALID_VALUE);
        release_device(1);
        release_device(0);
}

static void test_arrays_take_the_formula(void **state) {
        CUDA_ARRAY_DESCRIPTOR d2 = { .width = 64, .height = 32, .format = 0x20, .num_channels = 4 };
        CUDA_ARRAY3D_DESCRIPTOR d3 = { .width = 10, .height = 0, .depth = 0, .format = 0x02, .num_channels = 2 };
        CUDA_ARRAY3D_DESCRIPTOR mip = { .width = 8, .height = 8, .depth = 0, .format = 0x01, .num_channels = 1 };
        CUmipmappedArray mm;
        CUarray a, b;

        (void)state;
        use_device(0);
        assert_ok(cuArrayCreate_v2(&a, &d2));
        assert_int_equal(free_now(), CAP - 64 * 32 * 4 * 4);
        assert_ok(cuArray3DCreate_v2(&b, &d3)); /* 1D: height and depth 0 */
        assert_int_equal(free_now(), CAP - 64 * 32 * 4 * 4 - 10 * 2 * 2);
        assert_ok(cuArrayDestroy(a));
        assert_ok(cuArrayDestroy(b));
        assert_cu(cuArrayDestroy(b), MA_CUDA_ERROR_INVALID_HANDLE);
        /* 8x8, 4x4, 2x2, 1x1 of one byte. */
        assert_ok(cuMipmappedArrayCreate(&mm, &mip, 4));
        assert_int_equal(free_now(), CAP - (64 + 16 + 4 + 1));
        assert_cu(cuArrayDestroy((CUarray)mm), MA_CUDA_ERROR_INVALID_HANDLE);
        assert_ok(cuMipmappedArrayDestroy(mm));
        assert_cu(cuMipmappedArrayCreate(&mm, &mip, 5), MA_CUDA_ERROR_INVALID_VALUE);
        d2.format = 0xb0; /* NV12: not a format the formula knows */
        assert_cu(cuArrayCreate_v2(&a, &d2), MA_CUDA_ERROR_INVALID_VALUE);
        d2.format = 0x20;
        d2.num_channels = 3;
        assert_cu(cuArrayCreate_v2(&a, &d2), MA_CUDA_ERROR_INVALID_VALUE);
        d3 = (CUDA_ARRAY3D_DESCRIPTOR){ .width = 1024, .height = 1024, .depth = 65, .format = 0x20, .num_channels = 1 };
        assert_cu(cuArray3DCreate_v2(&b, &d3), MA_CUDA_ERROR_OUT_OF_MEMORY); /* 260 MiB */
        assert_int_equal(free_now(), CAP);
        release_device(0);
}

static void test_error_names(void **state) {
        const char *s = "x";

        (void)state;
        assert_ok(cuGetErrorName(MA_CUDA_ERROR_OUT_OF_MEMORY, &s));
        assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
        assert_ok(cuGetErrorString(MA_CUDA_ERROR_INVALID_CONTEXT, &s));
        assert_string_equal(s, "invalid device context");
        assert_cu(cuGetErrorName(12345, &s), MA_CUDA_ERROR_INVALID_VALUE);
        assert_null(s);
}

#define THREADS 8
#define ROUNDS 500

static void *alloc_free_thread(void *arg) {
        int dev = (int)(intptr_t)arg;
        CUcontext ctx;

        assert_ok(cuDevicePrimaryCtxRetain(&ctx, dev));
        assert_ok(cuCtxSetCurrent(ctx));
        for (int i = 0; i < ROUNDS; i++) {
                CUdeviceptr p, q;

                assert_ok(cuMemAlloc_v2(&p, MIB));
                assert_ok(cuMemAllocAsync(&q, MIB, NULL));
                assert_ok(cuMemFree_v2(p));
                assert_ok(cuMemFreeAsync(q, NULL));
        }
        assert_ok(cuDevicePrimaryCtxRelease_v2(dev));
        return NULL;
}

static void test_threads_alloc_at_once(void **state) {
        pthread_t t[THREADS];
        CUmemoryPool pool;

        (void)state;
        use_device(0);
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, alloc_free_thread, (void *)(intptr_t)(i % 2)), 0);
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        for (int d = 0; d < 2; d++) {
                assert_ok(cuDeviceGetDefaultMemPool(&pool, d));
                assert_int_equal(pool_attr(pool, 7), 0);
                assert_ok(cuMemPoolTrimTo(pool, 0));
                use_device(d);
                assert_int_equal(free_now(), CAP);
                release_device(d);
        }
        release_device(0);
}

/* In the child: a driver that starts over (and reads the capacity again). */
static int forked_child(void) {
        CUcontext ctx;
        size_t f, t;
        int n;

        if (cuDeviceGetCount(&n) != MA_CUDA_ERROR_NOT_INITIALIZED)
                return 10;
        setenv("MEMACCT_STANDIN_CUDA_BYTES", "12x", 1);
        if (cuInit(0) != MA_CUDA_ERROR_INVALID_VALUE)
                return 11;
        setenv("MEMACCT_STANDIN_CUDA_BYTES", "3M", 1);
        if (cuInit(0) != MA_CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx))
                return 12;
        if (cuMemGetInfo_v2(&f, &t) != MA_CUDA_SUCCESS || f != 3 * MIB || t != 3 * MIB)
                return 13;
        return 0;
}

static void test_forked_child_starts_over(void **state) {
        CUdeviceptr p;
        pid_t pid;
        int status;

        (void)state;
        use_device(0);
        assert_ok(cuMemAlloc_v2(&p, 5 * MIB));
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(forked_child());
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(free_now(), CAP - 5 * MIB);
        assert_ok(cuMemFree_v2(p));
        release_device(0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_before_and_after_init),
                cmocka_unit_test(test_contexts_are_per_thread),
                cmocka_unit_test(test_capacity_refuses_and_is_per_device),
                cmocka_unit_test(test_pool_reserves_granules_until_trimmed),
                cmocka_unit_test(test_pool_gives_back_at_synchronisation),
                cmocka_unit_test(test_created_pool_outlives_destroy_until_freed),
                cmocka_unit_test(test_vmm_counts_physical_memory),
                cmocka_unit_test(test_arrays_take_the_formula),
                cmocka_unit_test(test_error_names),
                cmocka_unit_test(test_threads_alloc_at_once),
                cmocka_unit_test(test_forked_child_starts_over),
        };

        /* Before any cuInit(): the stand-in reads it once. */
        setenv("MEMACCT_STANDIN_CUDA_BYTES", "256M", 1);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
