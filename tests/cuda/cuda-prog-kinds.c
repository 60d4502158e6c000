/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cuda-prog's subcommands for the kinds of device memory beside plain
 * allocations: a stream-ordered pool (pool), the VMM sequence (vmm) and
 * a CUDA array (array). Each prints the figures a test compares with
 * what the driver (or the interposer in front of it) should hold: the
 * pool's reserved bytes, the free bytes as each VMM step leaves them, the
 * bytes an array takes.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-prog.h"

static CUresult pool_reserved(CUmemoryPool pool, cuuint64_t *ret) {
        return cuMemPoolGetAttribute(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, ret);
}

/*
 * Alloc and free on the legacy stream, synchronised: what the pool keeps
 * (its release threshold set high first, as frameworks set it to keep
 * their reserve; with --release left at the driver's 0, which gives the
 * reserve back at the synchronisation), and after a trim to 0.
 */
int prog_cmd_pool(int argc, char **argv) {
        cuuint64_t reserved, trimmed, keep_all = UINT64_MAX;
        CUmemoryPool pool;
        CUdeviceptr ptr;
        bool trim = false, release = false;
        size_t bytes;
        CUresult r;
        int ret;

        if (argc == 3 && strcmp(argv[2], "--trim") == 0)
                trim = true;
        else if (argc == 3 && strcmp(argv[2], "--release") == 0)
                release = true;
        else if (argc != 2)
                return prog_usage("pool SIZE [--trim | --release]");
        if (prog_parse_size(argv[1], &bytes) < 0)
                return prog_usage("pool: SIZE is not a size");
        ret = prog_begin(0);
        if (ret)
                return ret;
        r = cuDeviceGetDefaultMemPool(&pool, 0);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuDeviceGetDefaultMemPool");
        if (!release) {
                r = cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
                if (r != MA_CUDA_SUCCESS)
                        return prog_refused(r, "cuMemPoolSetAttribute");
        }
        r = cuMemAllocAsync(&ptr, bytes, NULL);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemAllocAsync");
        r = cuMemFreeAsync(ptr, NULL);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemFreeAsync");
        r = cuStreamSynchronize(NULL);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuStreamSynchronize");
        r = pool_reserved(pool, &reserved);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemPoolGetAttribute");
        if (!trim) {
                printf("reserved=%llu\n", (unsigned long long)reserved);
                return prog_end(0);
        }
        r = cuMemPoolTrimTo(pool, 0);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemPoolTrimTo");
        r = pool_reserved(pool, &trimmed);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemPoolGetAttribute");
        printf("reserved=%llu trimmed=%llu\n", (unsigned long long)reserved, (unsigned long long)trimmed);
        return prog_end(0);
}

/* One VMM step done: its name and the device's free bytes after it. */
static int vmm_step(const char *step) {
        size_t free_bytes, total;
        CUresult r = cuMemGetInfo_v2(&free_bytes, &total);

        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemGetInfo_v2");
        printf("step=%s free=%zu\n", step, free_bytes);
        fflush(stdout);
        return 0;
}

#define VMM_DO(call, name)                                                                                         \
        do {                                                                                                       \
                CUresult r_ = (call);                                                                              \
                if (r_ != MA_CUDA_SUCCESS)                                                                         \
                        return prog_refused(r_, name);                                                             \
                if (vmm_step(name))                                                                                \
                        return 1;                                                                                  \
        } while (0)

/* SIZE rounded up to the granularity, as a VMM program must. */
int prog_cmd_vmm(int argc, char **argv) {
        CUmemAllocationProp prop;
        CUmemAccessDesc access;
        CUmemGenericAllocationHandle handle;
        size_t bytes, granularity;
        CUdeviceptr va;
        CUresult r;
        int ret;

        if (argc != 2 || prog_parse_size(argv[1], &bytes) < 0 || bytes == 0)
                return prog_usage("vmm SIZE");
        ret = prog_begin(0);
        if (ret)
                return ret;
        memset(&prop, 0, sizeof(prop));
        prop.type = MA_CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = MA_CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        r = cuMemGetAllocationGranularity(&granularity, &prop, 0);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemGetAllocationGranularity");
        bytes = (bytes + granularity - 1) / granularity * granularity;
        printf("bytes=%zu granularity=%zu\n", bytes, granularity);
        VMM_DO(cuMemCreate(&handle, bytes, &prop, 0), "cuMemCreate");
        VMM_DO(cuMemAddressReserve(&va, bytes, 0, 0, 0), "cuMemAddressReserve");
        VMM_DO(cuMemMap(va, bytes, 0, handle, 0), "cuMemMap");
        access.location = prop.location;
        access.flags = MA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        VMM_DO(cuMemSetAccess(va, bytes, &access, 1), "cuMemSetAccess");
        /* Written and read back at both ends: the mapping is memory. */
        ((volatile char *)(uintptr_t)va)[0] = 42;
        ((volatile char *)(uintptr_t)va)[bytes - 1] = 43;
        if (((volatile char *)(uintptr_t)va)[0] != 42 || ((volatile char *)(uintptr_t)va)[bytes - 1] != 43)
                return prog_usage("vmm: the mapping does not hold what was written");
        VMM_DO(cuMemUnmap(va, bytes), "cuMemUnmap");
        VMM_DO(cuMemAddressFree(va, bytes), "cuMemAddressFree");
        VMM_DO(cuMemRelease(handle), "cuMemRelease");
        return prog_end(0);
}

/* A FLOAT array of one channel: the bytes it takes, as cuMemGetInfo sees them. */
int prog_cmd_array(int argc, char **argv) {
        struct ma_cuda_array3d_descriptor desc; /* cuda-abi.h's layout of CUDA_ARRAY3D_DESCRIPTOR */
        size_t dims[3], free_before, free_during, total;
        CUarray array;
        CUresult r;
        int ret;

        if (argc != 4)
                return prog_usage("array W H D");
        for (int i = 0; i < 3; i++) {
                char *end;

                dims[i] = strtoul(argv[i + 1], &end, 10);
                if (*end || end == argv[i + 1])
                        return prog_usage("array: W, H and D are element counts");
        }
        ret = prog_begin(0);
        if (ret)
                return ret;
        memset(&desc, 0, sizeof(desc));
        desc.width = dims[0];
        desc.height = dims[1];
        desc.depth = dims[2];
        desc.format = 0x20; /* CU_AD_FORMAT_FLOAT */
        desc.num_channels = 1;
        r = cuMemGetInfo_v2(&free_before, &total);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemGetInfo_v2");
        r = cuArray3DCreate_v2(&array, (const CUDA_ARRAY3D_DESCRIPTOR *) (const void *) &desc);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuArray3DCreate_v2");
        r = cuMemGetInfo_v2(&free_during, &total);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemGetInfo_v2");
        r = cuArrayDestroy(array);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuArrayDestroy");
        printf("bytes=%zu\n", free_before - free_during);
        return prog_end(0);
}
