/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The part of the CUDA driver API (libcuda.so.1) the interposer hooks and
 * calls, declared here: the interposer must build where no CUDA toolkit
 * is installed (a container runtime's host, CI), and it depends on the
 * driver's ABI alone, which NVIDIA keeps stable across releases (a
 * changed signature gets a new _v2/_v3 name; the old one stays).
 *
 * The types are the driver's when cuda.h was included first, ours
 * otherwise; every constant is ours, MA_-prefixed, so that both can be
 * seen at once. check-cuda-h.c includes cuda.h and then this header,
 * where one is installed: every prototype below must then agree with
 * cuda.h's (a conflict is a compile error), and every constant and
 * struct layout is compared with _Static_assert. Only what is used is
 * declared.
 */

#include <stddef.h>
#include <stdint.h>

/* CUresult values. */
#define MA_CUDA_SUCCESS 0
#define MA_CUDA_ERROR_INVALID_VALUE 1
#define MA_CUDA_ERROR_OUT_OF_MEMORY 2
#define MA_CUDA_ERROR_NOT_INITIALIZED 3
#define MA_CUDA_ERROR_INVALID_CONTEXT 201
#define MA_CUDA_ERROR_NOT_FOUND 500
#define MA_CUDA_ERROR_NOT_SUPPORTED 801

/* CUdriverProcAddressQueryResult values. */
#define MA_CU_GET_PROC_ADDRESS_SUCCESS 0
#define MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1

/* cuGetProcAddress() flags (CUdriverProcAddress_flags). */
#define MA_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

/* CUmemPool_attribute: the bytes of backing memory a pool holds, and of
 * those the bytes allocated from it now (cuuint64_t). */
#define MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7

/* CUmemLocationType: a device ordinal. */
#define MA_CU_MEM_LOCATION_TYPE_DEVICE 1

/* The layouts of the structs read, under tags of ours (check-cuda-h.c compares). */
struct ma_cu_mem_location {
        int type; /* CUmemLocationType */
        int id;
};

struct ma_cu_mem_allocation_prop {
        int type;                 /* CUmemAllocationType */
        int requested_handle_types; /* CUmemAllocationHandleType */
        struct ma_cu_mem_location location;
        void *win32_handle_meta_data;
        struct {
                unsigned char compression_type;
                unsigned char gpu_direct_rdma_capable;
                unsigned short usage;
                unsigned char reserved[4];
        } alloc_flags;
};

struct ma_cuda_array_descriptor {
        size_t width, height;
        int format; /* CUarray_format */
        unsigned int num_channels;
};

struct ma_cuda_array3d_descriptor {
        size_t width, height, depth;
        int format; /* CUarray_format */
        unsigned int num_channels, flags;
};

#ifndef CUDA_VERSION
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef int CUdriverProcAddressQueryResult;
typedef int CUmemPool_attribute;
typedef struct ma_cu_mem_allocation_prop CUmemAllocationProp;
typedef struct ma_cuda_array_descriptor CUDA_ARRAY_DESCRIPTOR;
typedef struct ma_cuda_array3d_descriptor CUDA_ARRAY3D_DESCRIPTOR;
#endif

/*
 * X(name, ret, args, call): every entry point the interposer hooks, in
 * one table: its exported name, its parameters, and the argument list
 * that passes them on. The interposer defines each as a wrapper of the
 * real one; cuGetProcAddress() hands the wrapper out for its name.
 */
#define MA_CUDA_HOOKS(X)                                                                                   \
        X(cuInit, (unsigned int Flags), (Flags))                                                           \
        X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                        \
        X(cuMemAllocPitch_v2,                                                                              \
          (CUdeviceptr * dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes), \
          (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                          \
        X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags)) \
        X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                        \
        X(cuMemGetInfo_v2, (size_t *free, size_t *total), (free, total))                                   \
        X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream)) \
        X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),                  \
          (dptr, bytesize, hStream))                                                                       \
        X(cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), \
          (dptr, bytesize, pool, hStream))                                                                 \
        X(cuMemAllocFromPoolAsync_ptsz,                                                                    \
          (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                      \
          (dptr, bytesize, pool, hStream))                                                                 \
        X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                           \
        X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                      \
        X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))             \
        X(cuStreamSynchronize, (CUstream hStream), (hStream))                                              \
        X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))                                         \
        X(cuCtxSynchronize, (void), ())                                                                     \
        X(cuEventSynchronize, (CUevent hEvent), (hEvent))                                                  \
        X(cuMemCreate,                                                                                     \
          (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,            \
           unsigned long long flags),                                                                      \
          (handle, size, prop, flags))                                                                     \
        X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                                   \
        X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),              \
          (pHandle, pAllocateArray))                                                                       \
        X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),          \
          (pHandle, pAllocateArray))                                                                       \
        X(cuArrayDestroy, (CUarray hArray), (hArray))                                                      \
        X(cuMipmappedArrayCreate,                                                                          \
          (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,                 \
           unsigned int numMipmapLevels),                                                                  \
          (pHandle, pMipmappedArrayDesc, numMipmapLevels))                                                 \
        X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))

/* The driver's own entry points the interposer calls but does not hook. */
#define MA_CUDA_CALLS(X)                                                                                   \
        X(cuCtxGetDevice, (CUdevice * device), (device))                                                   \
        X(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev), (pciBusId, len, dev))              \
        X(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), (bytes, dev))                                \
        X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value)) \
        X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev))             \
        X(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev), (pool, dev))

/* cuGetProcAddress(), hooked apart: it hands out the other hooks. */
#define MA_CUDA_PROC_ADDRESS(X)                                                                            \
        X(cuGetProcAddress_v2,                                                                             \
          (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                              \
           CUdriverProcAddressQueryResult *symbolStatus),                                                  \
          (symbol, pfn, cudaVersion, flags, symbolStatus))                                                 \
        X(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),           \
          (symbol, pfn, cudaVersion, flags))

/* The prototypes, the driver's exactly (check-cuda-h.c). */
#define MA_CUDA_PROTOTYPE(name, params, args) CUresult name params;
MA_CUDA_HOOKS(MA_CUDA_PROTOTYPE)
MA_CUDA_CALLS(MA_CUDA_PROTOTYPE)
#undef MA_CUDA_PROTOTYPE

/* The pointer types of all of them: ma_<name>_fn. */
#define MA_CUDA_FN_TYPE(name, params, args) typedef CUresult (*ma_##name##_fn) params;
MA_CUDA_HOOKS(MA_CUDA_FN_TYPE)
MA_CUDA_CALLS(MA_CUDA_FN_TYPE)
MA_CUDA_PROC_ADDRESS(MA_CUDA_FN_TYPE)
#undef MA_CUDA_FN_TYPE
