// ggml's 4- to 6-bit block formats (Q4_0, Q4_K, Q5_K, Q6_K; common/dtype.h) as the GPU
// keeps them: a weight matrix stays quantized and is expanded in registers by the
// GEMV (quant_gemv.cuh) or into a bf16 scratch for the GEMM (quant_dequant.cuh).
//
// Device layout, one row after the other: each block's bytes as GGUF stores them,
// except that a lone fp16 scale that would break 16-byte alignment is moved into a
// plane of its own. Q4_K (144 bytes) and Q5_K (176) are kept whole; Q4_0 keeps its 16
// quant bytes and moves `d` out; Q6_K keeps ql, qh and scales (208 bytes) and moves `d`
// out. Every block body then starts on a 16-byte boundary, so each thread reads its
// quants with one 16-byte load, and a warp reads consecutive bytes of a row.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

enum class QuantType : int8_t { kQ4_0, kQ4_K, kQ5_K, kQ6_K };

// Where a GGUF block's bytes go on the device.
struct QuantLayout {
  int block_values;  // values a block holds
  int file_bytes;    // bytes of a block in GGUF
  int body_offset;   // the bytes [body_offset, body_offset + body_bytes) of a GGUF block
  int body_bytes;    // form the device block body (a multiple of 16)
  int d_offset;      // the fp16 moved to the scale plane, or -1 (no scale plane)
};

inline constexpr QuantLayout quant_layout(QuantType t) {
  switch (t) {
    case QuantType::kQ4_0: return {32, 18, 2, 16, 0};
    case QuantType::kQ4_K: return {256, 144, 0, 144, -1};
    case QuantType::kQ5_K: return {256, 176, 0, 176, -1};
    case QuantType::kQ6_K: return {256, 210, 0, 208, 208};
  }
  return {1, 0, 0, 0, -1};
}

// Bytes a quantized matrix of n rows and k columns takes on the device.
inline constexpr int64_t quant_device_bytes(QuantType t, int64_t n, int64_t k) {
  const QuantLayout l = quant_layout(t);
  return n * (k / l.block_values) * (l.body_bytes + (l.d_offset >= 0 ? 2 : 0));
}

// A quantized weight matrix [n, k] (k a multiple of the block size) on the device.
struct QuantMatrix {
  QuantType type = QuantType::kQ4_0;
  const uint8_t* body = nullptr;  // [n, k / block_values] block bodies, 16-byte aligned
  const __half* d = nullptr;      // [n, k / block_values] for Q4_0 and Q6_K, else null
  int64_t n = 0;
  int64_t k = 0;
};

// Rejects what the kernels cannot take: null planes, k not whole blocks, misalignment.
inline bool quant_matrix_ok(const QuantMatrix& w) {
  const QuantLayout l = quant_layout(w.type);
  return w.body && (l.d_offset < 0 || w.d) && w.n > 0 && w.k > 0 && w.k % l.block_values == 0 &&
         reinterpret_cast<uintptr_t>(w.body) % 16 == 0;
}

}  // namespace sy::cuda
