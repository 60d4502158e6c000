/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How a program finds the stand-ins' functions without naming them at
 * link time: cuGetProcAddress (base names, ABI versions, the per-thread
 * stream variants, names it does not know) and NVML opened with dlopen()
 * by its soname, whose figures must agree with the driver's, device by
 * device, before and after an allocation.
 */

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda-prog.h"
#include "nvml-abi.h"

#define MIB ((size_t)1 << 20)
#define CAP (64 * MIB)

#define assert_ok(call) assert_int_equal((int)(call), MA_CUDA_SUCCESS)

/* Look @name up for @version with @flags: the function, and the status. */
static void *lookup(const char *name, int version, cuuint64_t flags, int *ret_status) {
        CUdriverProcAddressQueryResult status = 99;
        void *fn = (void *)1;

        assert_ok(cuGetProcAddress_v2(name, &fn, version, flags, &status));
        *ret_status = (int)status;
        return fn;
}

static void expect(const char *name, int version, cuuint64_t flags, void *want) {
        int status;
        void *fn = lookup(name, version, flags, &status);

        if (fn != want)
                fail_msg("%s at %d flags %llu: not the expected entry", name, version, (unsigned long long)flags);
        assert_int_equal(status, MA_CU_GET_PROC_ADDRESS_SUCCESS);
}

static void expect_none(const char *name, int version, int want_status) {
        int status;

        assert_null(lookup(name, version, 0, &status));
        assert_int_equal(status, want_status);
}

static void test_base_names_give_versioned_entries(void **state) {
        (void)state;
        expect("cuMemAlloc", 13000, 0, (void *)cuMemAlloc_v2);
        expect("cuMemAlloc", 3020, 0, (void *)cuMemAlloc_v2);
        expect("cuMemFree", 12000, 0, (void *)cuMemFree_v2);
        expect("cuMemGetInfo", 13000, 0, (void *)cuMemGetInfo_v2);
        expect("cuMemAllocPitch", 13000, 0, (void *)cuMemAllocPitch_v2);
        expect("cuArrayCreate", 13000, 0, (void *)cuArrayCreate_v2);
        expect("cuArray3DCreate", 13000, 0, (void *)cuArray3DCreate_v2);
        expect("cuDeviceTotalMem", 13000, 0, (void *)cuDeviceTotalMem_v2);
        expect("cuDevicePrimaryCtxRelease", 11000, 0, (void *)cuDevicePrimaryCtxRelease_v2);
        expect("cuMemCreate", 13000, 0, (void *)cuMemCreate);
        expect("cuMemPoolTrimTo", 13000, 0, (void *)cuMemPoolTrimTo);
        expect("cuMipmappedArrayCreate", 13000, 0, (void *)cuMipmappedArrayCreate);
        /* Names whose ABI changed later: the entry of the version asked. */
        expect("cuGetProcAddress", 12000, 0, (void *)cuGetProcAddress_v2);
        expect("cuGetProcAddress", 11030, 0, (void *)cuGetProcAddress);
        expect("cuCtxGetDevice", 12080, 0, (void *)cuCtxGetDevice);
        expect("cuCtxGetDevice", 13000, 0, (void *)cuCtxGetDevice_v2);
        expect("cuCtxCreate", 11000, 0, (void *)cuCtxCreate_v2);
        expect("cuCtxCreate", 12050, 0, (void *)cuCtxCreate_v4);
}

static void test_per_thread_stream_variants(void **state) {
        (void)state;
        expect("cuMemAllocAsync", 13000, MA_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, (void *)cuMemAllocAsync_ptsz);
        expect("cuMemAllocAsync", 13000, 0, (void *)cuMemAllocAsync);
        expect("cuMemAllocAsync", 13000, 1, (void *)cuMemAllocAsync); /* LEGACY_STREAM */
        expect("cuMemFreeAsync", 11020, 2, (void *)cuMemFreeAsync_ptsz);
        expect("cuMemAllocFromPoolAsync", 12000, 2, (void *)cuMemAllocFromPoolAsync_ptsz);
        expect("cuStreamSynchronize", 13000, 2, (void *)cuStreamSynchronize_ptsz);
        expect("cuStreamSynchronize", 6050, 2, (void *)cuStreamSynchronize); /* _ptsz came in 7.0 */
        /* No twin: the legacy entry, as documented. */
        expect("cuMemAlloc", 13000, 2, (void *)cuMemAlloc_v2);
}

static void test_unknown_and_too_old(void **state) {
        CUdriverProcAddressQueryResult status;
        void *fn = (void *)1;

        (void)state;
        expect_none("cuNoSuchFunction", 13000, MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        /* Versioned names are not base names. */
        expect_none("cuMemAlloc_v2", 13000, MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        /* The 32-bit v1 ABI and cuCtxCreate_v3: known, not implemented here. */
        expect_none("cuMemAlloc", 3010, MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        expect_none("cuCtxCreate", 12000, MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        /* Before the name existed. */
        expect_none("cuMemAllocAsync", 11010, MA_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        expect_none("cuMemAlloc", 1000, MA_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        /* A version past the driver's is refused. */
        assert_int_equal(cuGetProcAddress_v2("cuMemAlloc", &fn, 13010, 0, &status), MA_CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(cuGetProcAddress_v2(NULL, &fn, 13000, 0, &status), MA_CUDA_ERROR_INVALID_VALUE);
        /* The old export: the same lookup, no status. */
        assert_ok(cuGetProcAddress("cuMemFree", &fn, 12000, 0));
        assert_ptr_equal(fn, (void *)cuMemFree_v2);
        assert_ok(cuGetProcAddress("cuNoSuchFunction", &fn, 12000, 0));
        assert_null(fn);
}

/* What is found is what a call reaches: an allocation through a looked-up entry. */
static void test_found_entry_works(void **state) {
        ma_cuMemAlloc_v2_fn alloc;
        ma_cuMemFree_v2_fn free_fn;
        CUdeviceptr p;
        CUcontext ctx;
        int status;

        (void)state;
        assert_ok(cuInit(0));
        assert_ok(cuDevicePrimaryCtxRetain(&ctx, 0));
        assert_ok(cuCtxSetCurrent(ctx));
        *(void **)&alloc = lookup("cuMemAlloc", 13000, 0, &status);
        *(void **)&free_fn = lookup("cuMemFree", 13000, 0, &status);
        assert_ok(alloc(&p, MIB));
        assert_ok(free_fn(p));
        assert_int_equal(alloc(&p, CAP + 1), MA_CUDA_ERROR_OUT_OF_MEMORY);
        assert_ok(cuDevicePrimaryCtxRelease_v2(0));
}

struct nvml {
        void *lib;
        ma_nvmlInit_v2_fn init;
        ma_nvmlShutdown_fn shutdown;
        ma_nvmlDeviceGetCount_v2_fn count;
        ma_nvmlDeviceGetHandleByIndex_v2_fn handle;
        ma_nvmlDeviceGetName_fn name;
        ma_nvmlDeviceGetUUID_fn uuid;
        ma_nvmlDeviceGetPciInfo_v3_fn pci;
        ma_nvmlDeviceGetMemoryInfo_fn mem;
        ma_nvmlDeviceGetMemoryInfo_v2_fn mem2;
        ma_nvmlErrorString_fn error;
};

static void nvml_open(struct nvml *n) {
        n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        assert_non_null(n->lib);
#define SYM(field, name) assert_non_null(*(void **)&n->field = dlsym(n->lib, name))
        SYM(init, "nvmlInit_v2");
        SYM(shutdown, "nvmlShutdown");
        SYM(count, "nvmlDeviceGetCount_v2");
        SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
        SYM(name, "nvmlDeviceGetName");
        SYM(uuid, "nvmlDeviceGetUUID");
        SYM(pci, "nvmlDeviceGetPciInfo_v3");
        SYM(mem, "nvmlDeviceGetMemoryInfo");
        SYM(mem2, "nvmlDeviceGetMemoryInfo_v2");
        SYM(error, "nvmlErrorString");
#undef SYM
        assert_non_null(dlsym(n->lib, "nvmlInit"));
}

/* Device @i through NVML against the driver: name, bus id, memory. */
static void nvml_agrees(struct nvml *n, unsigned int i) {
        char name[MA_NVML_DEVICE_NAME_BUFFER_SIZE], cu_name[64], bus[32], uuid[MA_NVML_DEVICE_UUID_BUFFER_SIZE];
        nvmlMemory_v2_t m2 = { .version = MA_NVML_MEMORY_V2 };
        size_t cu_free, cu_total;
        nvmlPciInfo_t pci;
        nvmlMemory_t m;
        nvmlDevice_t d;

        assert_int_equal(n->handle(i, &d), MA_NVML_SUCCESS);
        assert_int_equal(n->name(d, name, sizeof(name)), MA_NVML_SUCCESS);
        assert_ok(cuDeviceGetName(cu_name, sizeof(cu_name), (CUdevice)i));
        assert_string_equal(name, cu_name);
        assert_int_equal(n->name(d, name, 5), MA_NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(n->uuid(d, uuid, sizeof(uuid)), MA_NVML_SUCCESS);
        assert_int_equal(strlen(uuid), 40);
        assert_memory_equal(uuid, "GPU-", 4);
        assert_int_equal(n->pci(d, &pci), MA_NVML_SUCCESS);
        assert_ok(cuDeviceGetPCIBusId(bus, sizeof(bus), (CUdevice)i));
        assert_string_equal(pci.busIdLegacy, bus);
        /* The 8-digit domain of busId: the same address, spelled longer. */
        assert_string_equal(pci.busId + 4, bus);
        assert_memory_equal(pci.busId, "0000", 4);
        assert_int_equal(pci.bus, strtoul(bus + 5, NULL, 16));
        assert_int_equal(n->mem(d, &m), MA_NVML_SUCCESS);
        assert_ok(cuMemGetInfo_v2(&cu_free, &cu_total));
        assert_int_equal(m.total, cu_total);
        assert_int_equal(m.free, cu_free);
        assert_int_equal(m.used, cu_total - cu_free);
        assert_int_equal(n->mem2(d, &m2), MA_NVML_SUCCESS);
        assert_int_equal(m2.total, cu_total);
        assert_int_equal(m2.free, cu_free);
        assert_int_equal(m2.used + m2.reserved, cu_total - cu_free);
        m2.version = (unsigned int)(sizeof(m2) | (1U << 24));
        assert_int_equal(n->mem2(d, &m2), MA_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

static void test_nvml_agrees_with_the_driver(void **state) {
        struct nvml n;
        unsigned int count;
        CUdeviceptr p;
        CUcontext ctx;
        nvmlDevice_t d;

        (void)state;
        nvml_open(&n);
        assert_int_equal(n.count(&count), MA_NVML_ERROR_UNINITIALIZED);
        assert_int_equal(n.init(), MA_NVML_SUCCESS);
        assert_int_equal(n.count(&count), MA_NVML_SUCCESS);
        assert_int_equal(count, 2);
        assert_int_equal(n.handle(2, &d), MA_NVML_ERROR_INVALID_ARGUMENT);
        assert_ok(cuInit(0));
        for (int i = 0; i < 2; i++) {
                assert_ok(cuDevicePrimaryCtxRetain(&ctx, i));
                assert_ok(cuCtxSetCurrent(ctx));
                nvml_agrees(&n, (unsigned int)i);
                /* And with memory held: 5 MiB on this device, none on the other. */
                assert_ok(cuMemAlloc_v2(&p, 5 * MIB));
                nvml_agrees(&n, (unsigned int)i);
                assert_ok(cuMemFree_v2(p));
                assert_ok(cuDevicePrimaryCtxRelease_v2(i));
        }
        assert_string_equal(n.error(MA_NVML_ERROR_UNINITIALIZED), "Uninitialized");
        assert_int_equal(n.shutdown(), MA_NVML_SUCCESS);
        assert_int_equal(n.shutdown(), MA_NVML_ERROR_UNINITIALIZED);
        assert_int_equal(n.handle(0, &d), MA_NVML_ERROR_UNINITIALIZED);
        dlclose(n.lib);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_base_names_give_versioned_entries),
                cmocka_unit_test(test_per_thread_stream_variants),
                cmocka_unit_test(test_unknown_and_too_old),
                cmocka_unit_test(test_found_entry_works),
                cmocka_unit_test(test_nvml_agrees_with_the_driver),
        };

        setenv("MEMACCT_STANDIN_CUDA_BYTES", "64M", 1);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
