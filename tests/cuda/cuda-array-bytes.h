/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The bytes a CUDA array takes, as the stand-in driver counts them: the
 * one formula, so that the interposer (which charges an array before the
 * driver makes it) can charge exactly what the stand-in then holds.
 *
 *   bytes = width × max(height, 1) × max(depth, 1) × channels × element size
 *
 * where the element size is the format's: 1 for (UN)SIGNED_INT8, 2 for
 * (UN)SIGNED_INT16 and HALF, 4 for (UN)SIGNED_INT32 and FLOAT. A
 * mipmapped array is the sum over its levels, each level's extents
 * halved from the one before and never below 1 (level l has
 * max(1, width >> l), and so on; an extent of 0, a 1D or 2D array, stays
 * 1 at every level).
 *
 * The real driver pads rows and rounds allocations to its own
 * granularity, so these are the stand-in's figures, not a GPU's; the
 * point is that both sides agree. Header-only (static inline) so that a
 * test and the interposer each compile their own copy.
 */

#include <stddef.h>
#include <stdint.h>

/* CUarray_format values the formula knows (cuda.h's CU_AD_FORMAT_*). */
#define MA_CU_AD_FORMAT_UNSIGNED_INT8 0x01
#define MA_CU_AD_FORMAT_UNSIGNED_INT16 0x02
#define MA_CU_AD_FORMAT_UNSIGNED_INT32 0x03
#define MA_CU_AD_FORMAT_SIGNED_INT8 0x08
#define MA_CU_AD_FORMAT_SIGNED_INT16 0x09
#define MA_CU_AD_FORMAT_SIGNED_INT32 0x0a
#define MA_CU_AD_FORMAT_HALF 0x10
#define MA_CU_AD_FORMAT_FLOAT 0x20

/**
 * ma_cuda_format_bytes() - the bytes of one channel of @format.
 * Return: 1, 2 or 4; 0 for a format the formula does not know (the
 * packed, block-compressed and video formats), which the stand-in refuses.
 */
static inline size_t ma_cuda_format_bytes(int format) {
        switch (format) {
        case MA_CU_AD_FORMAT_UNSIGNED_INT8:
        case MA_CU_AD_FORMAT_SIGNED_INT8:
                return 1;
        case MA_CU_AD_FORMAT_UNSIGNED_INT16:
        case MA_CU_AD_FORMAT_SIGNED_INT16:
        case MA_CU_AD_FORMAT_HALF:
                return 2;
        case MA_CU_AD_FORMAT_UNSIGNED_INT32:
        case MA_CU_AD_FORMAT_SIGNED_INT32:
        case MA_CU_AD_FORMAT_FLOAT:
                return 4;
        default:
                return 0;
        }
}

/**
 * ma_cuda_array_bytes() - the bytes of an array of @width × @height ×
 * @depth elements of @channels channels of @format (height and depth 0
 * for fewer dimensions, as the descriptors say it).
 * Return: the bytes; 0 for what no driver makes (width 0, channels other
 * than 1, 2 or 4, an unknown format); SIZE_MAX when the product does not
 * fit in a size_t (more than any device holds).
 */
static inline size_t ma_cuda_array_bytes(size_t width, size_t height, size_t depth, int format,
                                         unsigned int channels) {
        size_t element = ma_cuda_format_bytes(format), bytes;

        if (width == 0 || element == 0 || !(channels == 1 || channels == 2 || channels == 4))
                return 0;
        if (__builtin_mul_overflow(width, height ? height : 1, &bytes) ||
            __builtin_mul_overflow(bytes, depth ? depth : 1, &bytes) ||
            __builtin_mul_overflow(bytes, element * channels, &bytes))
                return SIZE_MAX;
        return bytes;
}

/**
 * ma_cuda_mipmap_levels_max() - the most levels an array of these extents
 * has: 1 + floor(log2(the largest extent)), as the driver allows.
 */
static inline unsigned int ma_cuda_mipmap_levels_max(size_t width, size_t height, size_t depth) {
        size_t largest = width > height ? width : height;
        unsigned int levels = 0;

        if (depth > largest)
                largest = depth;
        for (; largest > 0; largest >>= 1)
                levels++;
        return levels;
}

/**
 * ma_cuda_mipmapped_array_bytes() - the bytes of a mipmapped array of
 * @levels levels, the first of @width × @height × @depth.
 * Return: the sum over the levels; 0 as ma_cuda_array_bytes() says it, or
 * for 0 levels or more than ma_cuda_mipmap_levels_max(); SIZE_MAX on
 * overflow.
 */
static inline size_t ma_cuda_mipmapped_array_bytes(size_t width, size_t height, size_t depth, int format,
                                                   unsigned int channels, unsigned int levels) {
        size_t total = 0;

        if (levels == 0 || levels > ma_cuda_mipmap_levels_max(width, height, depth))
                return 0;
        for (unsigned int l = 0; l < levels; l++) {
                size_t w = width >> l, h = height >> l, d = depth >> l;
                size_t bytes = ma_cuda_array_bytes(w ? w : 1, h ? h : 1, d ? d : 1, format, channels);

                if (bytes == 0 || bytes == SIZE_MAX)
                        return bytes;
                if (__builtin_add_overflow(total, bytes, &total))
                        return SIZE_MAX;
        }
        return total;
}
