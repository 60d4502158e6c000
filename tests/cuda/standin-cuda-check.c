/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stand-in driver's own constants and layouts against cuda.h, at
 * compile time: built only into the check library (-DMA_CHECK_WITH_CUDA_H,
 * where the toolkit is installed), beside the stand-in's sources compiled
 * there against cuda.h's prototypes. What cuda-abi.h declares is compared
 * by client/cuda/check-cuda-h.c; this is what the stand-in adds, and the
 * array formats of cuda-array-bytes.h. Nothing of it runs.
 */

#include <stddef.h>

#include "cuda-array-bytes.h"
#include "standin-cuda.h"

#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " differs from cuda.h's " #theirs)

SAME(MA_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(MA_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(MA_CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE);
SAME(MA_CUDA_ERROR_ALREADY_MAPPED, CUDA_ERROR_ALREADY_MAPPED);
SAME(MA_CUDA_ERROR_NOT_MAPPED, CUDA_ERROR_NOT_MAPPED);
SAME(MA_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
SAME(STANDIN_DRIVER_VERSION, CUDA_VERSION);
SAME(MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
SAME(MA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
SAME(MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
SAME(MA_CU_MEMPOOL_ATTR_USED_MEM_HIGH, CU_MEMPOOL_ATTR_USED_MEM_HIGH);
SAME(1, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES);
SAME(3, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES);
SAME(MA_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME(MA_CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_NONE);
SAME(MA_CU_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_READ);
SAME(MA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME(MA_CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL);
SAME(MA_CU_MEM_ATTACH_HOST, CU_MEM_ATTACH_HOST);
SAME(0, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
SAME(1, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
/* Pointer casts: a constant expression to gcc, not to clang. */
#ifndef __clang__
SAME(MA_CU_STREAM_LEGACY, CU_STREAM_LEGACY);
SAME(MA_CU_STREAM_PER_THREAD, CU_STREAM_PER_THREAD);
#endif
SAME(MA_CU_AD_FORMAT_UNSIGNED_INT8, CU_AD_FORMAT_UNSIGNED_INT8);
SAME(MA_CU_AD_FORMAT_UNSIGNED_INT16, CU_AD_FORMAT_UNSIGNED_INT16);
SAME(MA_CU_AD_FORMAT_UNSIGNED_INT32, CU_AD_FORMAT_UNSIGNED_INT32);
SAME(MA_CU_AD_FORMAT_SIGNED_INT8, CU_AD_FORMAT_SIGNED_INT8);
SAME(MA_CU_AD_FORMAT_SIGNED_INT16, CU_AD_FORMAT_SIGNED_INT16);
SAME(MA_CU_AD_FORMAT_SIGNED_INT32, CU_AD_FORMAT_SIGNED_INT32);
SAME(MA_CU_AD_FORMAT_HALF, CU_AD_FORMAT_HALF);
SAME(MA_CU_AD_FORMAT_FLOAT, CU_AD_FORMAT_FLOAT);

#define LAYOUT(ours, theirs, of, tf) SAME(offsetof(ours, of), offsetof(theirs, tf))
SAME(sizeof(struct ma_cu_mem_pool_props), sizeof(CUmemPoolProps));
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, alloc_type, allocType);
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, handle_types, handleTypes);
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, location.type, location.type);
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, location.id, location.id);
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, max_size, maxSize);
LAYOUT(struct ma_cu_mem_pool_props, CUmemPoolProps, usage, usage);
SAME(sizeof(struct ma_cu_mem_access_desc), sizeof(CUmemAccessDesc));
LAYOUT(struct ma_cu_mem_access_desc, CUmemAccessDesc, location.type, location.type);
LAYOUT(struct ma_cu_mem_access_desc, CUmemAccessDesc, location.id, location.id);
LAYOUT(struct ma_cu_mem_access_desc, CUmemAccessDesc, flags, flags);

int ma_check_standin_cuda_h(void);
int ma_check_standin_cuda_h(void) {
        return CUDA_VERSION;
}
