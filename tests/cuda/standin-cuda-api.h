/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The driver API the stand-in implements beyond what cuda-abi.h declares
 * (which is only what the interposer uses), for the stand-in and for the
 * test programs that call it (cuda-prog, the API test): the remaining
 * prototypes, constants and struct layouts, exactly the driver's. With
 * -DMA_CHECK_WITH_CUDA_H cuda.h is included first, so that every
 * prototype here must agree with cuda.h's (a conflict is a compile error);
 * standin-cuda-check.c compares the constants and layouts.
 */

#ifdef MA_CHECK_WITH_CUDA_H
#include <cuda.h>
/* cuda.h maps the name to cuGetProcAddress_v2; the stand-in exports both. */
#undef cuGetProcAddress
#endif

#include <stddef.h>
#include <stdint.h>

#include "cuda-abi.h"

/* CUresult values cuda-abi.h lacks (the interposer does not need them). */
#define MA_CUDA_ERROR_NO_DEVICE 100
#define MA_CUDA_ERROR_INVALID_DEVICE 101
#define MA_CUDA_ERROR_INVALID_HANDLE 400
#define MA_CUDA_ERROR_ALREADY_MAPPED 208
#define MA_CUDA_ERROR_NOT_MAPPED 211

/* CUdriverProcAddressQueryResult: found, but only for a later cudaVersion. */
#define MA_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT 2

/* The version the stand-in says it is (cuDriverGetVersion()): CUDA 13.0. */
#define STANDIN_DRIVER_VERSION 13000

/* The other pool attributes (CUmemPool_attribute), all cuuint64_t. */
#define MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7
#define MA_CU_MEMPOOL_ATTR_USED_MEM_HIGH 8

/* CUmemAllocationType: the only one, device memory. */
#define MA_CU_MEM_ALLOCATION_TYPE_PINNED 1
/* CUmemAccess_flags. */
#define MA_CU_MEM_ACCESS_FLAGS_PROT_NONE 0
#define MA_CU_MEM_ACCESS_FLAGS_PROT_READ 1
#define MA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3
/* cuMemAllocManaged() flags (CUmemAttach_flags). */
#define MA_CU_MEM_ATTACH_GLOBAL 1
#define MA_CU_MEM_ATTACH_HOST 2
/* The special streams: the legacy default stream and the per-thread one. */
#define MA_CU_STREAM_LEGACY ((CUstream)0x1)
#define MA_CU_STREAM_PER_THREAD ((CUstream)0x2)

/* The granule of VMM allocations and of pools' reserved memory: 2 MiB. */
#define STANDIN_GRANULE (UINT64_C(2) << 20)
/* cuMemAllocPitch() rounds the pitch up to this. */
#define STANDIN_PITCH_ALIGN 512

/* The structs read that cuda-abi.h does not lay out (compared in the check). */
struct ma_cu_mem_pool_props {
        int alloc_type;   /* CUmemAllocationType */
        int handle_types; /* CUmemAllocationHandleType */
        struct ma_cu_mem_location location;
        void *win32_security_attributes;
        size_t max_size;
        unsigned short usage;
        unsigned char reserved[54];
};

struct ma_cu_mem_access_desc {
        struct ma_cu_mem_location location;
        int flags; /* CUmemAccess_flags */
};

#ifndef CUDA_VERSION
typedef struct ma_cu_mem_pool_props CUmemPoolProps;
typedef struct ma_cu_mem_access_desc CUmemAccessDesc;
typedef int CUmemAllocationGranularity_flags;
typedef struct CUctxCreateParams_st CUctxCreateParams;
#endif

/*
 * The entry points cuda-abi.h does not declare, with the driver's
 * signatures (cuda.h declares each the same; cuCtxCreate_v2,
 * cuStreamSynchronize_ptsz and the 4-argument cuGetProcAddress only in
 * its internal or per-thread sections, so those three stand alone).
 */
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

