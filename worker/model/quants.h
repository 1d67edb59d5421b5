// Row (de)quantizers for ggml's block formats Q4_0, Q4_K, Q5_K and Q6_K (layouts in
// common/dtype.h). The dequantizers are the plain scalar reference that SIMD and CUDA
// kernels are tested against; the quantizers write what llama.cpp's dequantizers read.
// `n` is the number of values: a multiple of 32 (Q4_0) or 256 (the K-quants).
#pragma once

#include <cstdint>

#include "common/dtype.h"

namespace sy {

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n);
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n);
void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t n);
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n);

// Q4_0: per block of 32, d = (the value of largest magnitude) / -8, q = round(x / d) + 8
// clamped to 0..15 (so that value itself lands on q = 0 exactly).
void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n);
// Q4_K / Q5_K: per sub-block of 32 a scale and a min searched to minimise the squared
// error, then both quantized to 6 bits against the super-block's d and dmin.
void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n);
void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t n);
// Q6_K: per sub-block of 16 a symmetric scale (searched likewise), quantized to int8
// against the super-block's d.
void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n);

// The 6-bit scales and mins of the 8 sub-blocks of a Q4_K / Q5_K block, unpacked from
// and packed into its 12 bytes (bytes 0-3: scales 0-3 and the top bits of scales 4-7;
// 4-7: mins 0-3 and the top bits of mins 4-7; 8-11: low nibbles of scales and mins 4-7).
void unpack_k_scales(const uint8_t packed[12], uint8_t scales[8], uint8_t mins[8]);
void pack_k_scales(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]);

}  // namespace sy
