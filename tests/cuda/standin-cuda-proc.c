/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's cuGetProcAddress: the CUDA runtime (and any
 * program that wants a driver entry point without linking it) asks for a
 * function by its base name ("cuMemAlloc") and the CUDA version whose ABI
 * it was built for; the driver answers with the versioned entry of that
 * ABI (cuMemAlloc_v2 from 3.2 on), the per-thread-default-stream one
 * (_ptsz) when the flags ask and one exists. The interposer must hand out
 * its own wrapper for the same names, which is why the tests need a
 * driver that answers as the real one does.
 *
 * The table has one row per entry: base name, the CUDA version that
 * introduced it (as cudaTypedefs.h's PFN_<name>_v<version> names it),
 * and the function, or none for an ABI the stand-in does not implement
 * (the 32-bit v1 entries, cuCtxCreate_v3), which is answered as not found
 * rather than with a function of another signature. A lookup takes the
 * row of the name with the highest version not above cudaVersion. Where
 * cudaTypedefs.h is installed the check build compares every row's
 * function with its PFN type, so a wrong version or entry fails to build.
 *
 * A name not found answers CUDA_SUCCESS with *pfn NULL and the status
 * SYMBOL_NOT_FOUND (or VERSION_NOT_SUFFICIENT when only later versions
 * exist), as cuda.h documents; a caller must test pfn, not the result.
 */

#include <string.h>

#ifdef MA_CHECK_WITH_CUDA_H
#include <cudaTypedefs.h>
#endif

#include "standin-cuda.h"

/*
 * X(name, since, fn): an entry. P(name, since, fn, ptsz_since, ptsz): an
 * entry with a per-thread-stream twin. N(name, since): an ABI not here.
 */
#define STANDIN_PROCS(X, P, N)                                                                                     \
        X(cuInit, 2000, cuInit)                                                                                    \
        X(cuDriverGetVersion, 2020, cuDriverGetVersion)                                                            \
        X(cuDeviceGet, 2000, cuDeviceGet)                                                                          \
        X(cuDeviceGetCount, 2000, cuDeviceGetCount)                                                                \
        X(cuDeviceGetName, 2000, cuDeviceGetName)                                                                  \
        X(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId)                                                          \
        N(cuDeviceTotalMem, 2000)                                                                                  \
        X(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2)                                                             \
        X(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain)                                                \
        N(cuDevicePrimaryCtxRelease, 7000)                                                                         \
        X(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2)                                          \
        N(cuCtxCreate, 2000)                                                                                       \
        X(cuCtxCreate, 3020, cuCtxCreate_v2)                                                                       \
        N(cuCtxCreate, 11040)                                                                                      \
        X(cuCtxCreate, 12050, cuCtxCreate_v4)                                                                      \
        N(cuCtxDestroy, 2000)                                                                                      \
        X(cuCtxDestroy, 4000, cuCtxDestroy_v2)                                                                     \
        X(cuCtxSetCurrent, 4000, cuCtxSetCurrent)                                                                  \
        X(cuCtxGetCurrent, 4000, cuCtxGetCurrent)                                                                  \
        X(cuCtxGetDevice, 2000, cuCtxGetDevice)                                                                    \
        X(cuCtxGetDevice, 13000, cuCtxGetDevice_v2)                                                                \
        P(cuStreamSynchronize, 2000, cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz)                          \
        X(cuGetErrorName, 6000, cuGetErrorName)                                                                    \
        X(cuGetErrorString, 6000, cuGetErrorString)                                                                \
        N(cuMemAlloc, 2000)                                                                                        \
        X(cuMemAlloc, 3020, cuMemAlloc_v2)                                                                         \
        N(cuMemAllocPitch, 2000)                                                                                   \
        X(cuMemAllocPitch, 3020, cuMemAllocPitch_v2)                                                               \
        X(cuMemAllocManaged, 6000, cuMemAllocManaged)                                                              \
        N(cuMemFree, 2000)                                                                                         \
        X(cuMemFree, 3020, cuMemFree_v2)                                                                           \
        N(cuMemGetInfo, 2000)                                                                                      \
        X(cuMemGetInfo, 3020, cuMemGetInfo_v2)                                                                     \
        N(cuMemGetAddressRange, 2000)                                                                              \
        X(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2)                                                     \
        X(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool)                                             \
        X(cuMemPoolCreate, 11020, cuMemPoolCreate)                                                                 \
        X(cuMemPoolDestroy, 11020, cuMemPoolDestroy)                                                               \
        P(cuMemAllocAsync, 11020, cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz)                                    \
        P(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz)            \
        P(cuMemFreeAsync, 11020, cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz)                                       \
        X(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo)                                                                 \
        X(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute)                                                     \
        X(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute)                                                     \
        X(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity)                                     \
        X(cuMemCreate, 10020, cuMemCreate)                                                                         \
        X(cuMemRelease, 10020, cuMemRelease)                                                                       \
        X(cuMemAddressReserve, 10020, cuMemAddressReserve)                                                         \
        X(cuMemAddressFree, 10020, cuMemAddressFree)                                                               \
        X(cuMemMap, 10020, cuMemMap)                                                                               \
        X(cuMemUnmap, 10020, cuMemUnmap)                                                                           \
        X(cuMemSetAccess, 10020, cuMemSetAccess)                                                                   \
        N(cuArrayCreate, 2000)                                                                                     \
        X(cuArrayCreate, 3020, cuArrayCreate_v2)                                                                   \
        N(cuArray3DCreate, 2000)                                                                                   \
        X(cuArray3DCreate, 3020, cuArray3DCreate_v2)                                                               \
        X(cuArrayDestroy, 2000, cuArrayDestroy)                                                                    \
        X(cuMipmappedArrayCreate, 5000, cuMipmappedArrayCreate)                                                    \
        X(cuMipmappedArrayDestroy, 5000, cuMipmappedArrayDestroy)                                                  \
        X(cuGetProcAddress, 11030, cuGetProcAddress)                                                               \
        X(cuGetProcAddress, 12000, cuGetProcAddress_v2)

struct proc_row {
        const char *name;
        int since;
        void *fn;       /* NULL: an ABI the stand-in does not implement */
        int ptsz_since; /* 0: no per-thread-stream twin */
        void *ptsz;
};

#define ROW_X(name, since, fn) { #name, since, (void *)fn, 0, NULL },
#define ROW_P(name, since, fn, ptsz_since, ptsz) { #name, since, (void *)fn, ptsz_since, (void *)ptsz },
#define ROW_N(name, since) { #name, since, NULL, 0, NULL },
static const struct proc_row proc_rows[] = { STANDIN_PROCS(ROW_X, ROW_P, ROW_N) };

#ifdef MA_CHECK_WITH_CUDA_H
/* Each function against cudaTypedefs.h's pointer type of its name and version. */
#define SAME_TYPE(fn, pfn)                                                                                         \
        _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), pfn), #fn " is not " #pfn);
#define CHECK_X(name, since, fn) SAME_TYPE(fn, PFN_##name##_v##since)
#define CHECK_P(name, since, fn, ptsz_since, ptsz)                                                                 \
        SAME_TYPE(fn, PFN_##name##_v##since) SAME_TYPE(ptsz, PFN_##name##_v##ptsz_since##_ptsz)
/* The v1 typedefs are in cudaTypedefs.h's internal section only: nothing to compare. */
#define CHECK_N(name, since)
STANDIN_PROCS(CHECK_X, CHECK_P, CHECK_N)
#endif

/* The lookup both exports share; *status as cuGetProcAddress_v2 reports it. */
static CUresult proc_lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status) {
        const struct proc_row *best = NULL;
        bool named = false;

        if (!symbol || !pfn || cudaVersion <= 0)
                return MA_CUDA_ERROR_INVALID_VALUE;
        /* Documented: a version above the driver's is refused. */
        if (cudaVersion > STANDIN_DRIVER_VERSION)
                return MA_CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < sizeof(proc_rows) / sizeof(proc_rows[0]); i++) {
                const struct proc_row *row = &proc_rows[i];

                if (strcmp(row->name, symbol) != 0)
                        continue;
                named = true;
                if (row->since <= cudaVersion && (!best || row->since > best->since))
                        best = row;
        }
        *pfn = NULL;
        if (!best || !best->fn) {
                *status = named && !best ? MA_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                         : MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
                return MA_CUDA_SUCCESS;
        }
        if ((flags & MA_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz &&
            cudaVersion >= best->ptsz_since)
                *pfn = best->ptsz;
        else
                *pfn = best->fn;
        *status = MA_CU_GET_PROC_ADDRESS_SUCCESS;
        return MA_CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *symbolStatus) {
        CUdriverProcAddressQueryResult status;
        CUresult r = proc_lookup(symbol, pfn, cudaVersion, flags, &status);

        if (r == MA_CUDA_SUCCESS && symbolStatus)
                *symbolStatus = status;
        return r;
}

/* CUDA 11.3's export, without the status: what it was not found for is not said. */
STANDIN_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
        CUdriverProcAddressQueryResult status;

        return proc_lookup(symbol, pfn, cudaVersion, flags, &status);
}
