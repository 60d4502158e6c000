/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cuda-abi.h against the CUDA toolkit's cuda.h, at compile time: built
 * only where cuda.h is installed (meson finds it). Every prototype in
 * cuda-abi.h is declared again after cuda.h's own, so a signature that
 * differs is a conflicting-types error; every constant and every layout
 * the interposer reads is compared here. Nothing of it runs.
 */

#include <cuda.h>
#include <stddef.h>

#include "cuda-abi.h"

#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " differs from cuda.h's " #theirs)

SAME(MA_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(MA_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(MA_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(MA_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(MA_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME(MA_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME(MA_CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
SAME(MA_CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
SAME(MA_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
SAME(MA_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
SAME(MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
SAME(MA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
SAME(MA_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);

#define LAYOUT(ours, theirs, of, tf) SAME(offsetof(ours, of), offsetof(theirs, tf))
SAME(sizeof(struct ma_cu_mem_allocation_prop), sizeof(CUmemAllocationProp));
LAYOUT(struct ma_cu_mem_allocation_prop, CUmemAllocationProp, type, type);
LAYOUT(struct ma_cu_mem_allocation_prop, CUmemAllocationProp, location.type, location.type);
LAYOUT(struct ma_cu_mem_allocation_prop, CUmemAllocationProp, location.id, location.id);
SAME(sizeof(struct ma_cuda_array_descriptor), sizeof(CUDA_ARRAY_DESCRIPTOR));
LAYOUT(struct ma_cuda_array_descriptor, CUDA_ARRAY_DESCRIPTOR, width, Width);
LAYOUT(struct ma_cuda_array_descriptor, CUDA_ARRAY_DESCRIPTOR, height, Height);
LAYOUT(struct ma_cuda_array_descriptor, CUDA_ARRAY_DESCRIPTOR, format, Format);
LAYOUT(struct ma_cuda_array_descriptor, CUDA_ARRAY_DESCRIPTOR, num_channels, NumChannels);
SAME(sizeof(struct ma_cuda_array3d_descriptor), sizeof(CUDA_ARRAY3D_DESCRIPTOR));
LAYOUT(struct ma_cuda_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR, width, Width);
LAYOUT(struct ma_cuda_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR, height, Height);
LAYOUT(struct ma_cuda_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR, depth, Depth);
LAYOUT(struct ma_cuda_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR, format, Format);
LAYOUT(struct ma_cuda_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR, num_channels, NumChannels);
SAME(sizeof(CUdeviceptr), sizeof(unsigned long long));

/* cuGetProcAddress is a macro for cuGetProcAddress_v2 in cuda.h: the
 * pointer type of the 5-argument form is compared with the function. */
_Static_assert(__builtin_types_compatible_p(ma_cuGetProcAddress_v2_fn, __typeof__(&cuGetProcAddress_v2)),
               "cuGetProcAddress_v2 differs from cuda.h's");

int ma_check_cuda_h(void);
int ma_check_cuda_h(void) {
        return CUDA_VERSION;
}
