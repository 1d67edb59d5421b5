// The unit the quantized kernels (quant_gemv.cu, quant_gemm.cu, quant_dequant.cu) read: a chunk of 32
// values of one row, made of two runs of 16 consecutive columns, each run with one
// scale a and offset b (value = a · q + b, q an unsigned integer below 256). Every
// format fits this shape: a Q4_0 block is one chunk (runs at 0 and 16), a K-quant block
// is 8 (16 bytes of 4-bit quants each: low nibbles one run, high nibbles another), and a
// run never straddles a sub-block scale. Chunk c of a row covers 32 values, but not
// necessarily columns [32c, 32c + 32).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/quant_matrix.cuh"

namespace sy::cuda::quant {

#ifdef __CUDACC__

struct Chunk {
  uint32_t q[2][4];  // run r's 16 quants, four per word, value 4w + i in byte i of word w
  float a[2], b[2];
  int col[2];  // first column of each run within the row
};

__device__ __forceinline__ uint4 load16(const uint8_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// Byte `idx` (0..15) of a 16-byte vector held in registers, without indexing them
// dynamically (which would put them in local memory).
__device__ __forceinline__ uint32_t byte_of(const uint4& v, int idx) {
  const uint32_t w = idx < 8 ? (idx < 4 ? v.x : v.y) : (idx < 12 ? v.z : v.w);
  return (w >> (8 * (idx & 3))) & 0xFF;
}

// The 6-bit scale and min of sub-block s of a Q4_K/Q5_K block whose first 16 bytes
// (d, dmin, the 12 packed scale bytes) are `h`. Packed bytes 0-3 (h.y) hold scales 0-3
// and the top bits of scales 4-7, bytes 4-7 (h.z) the mins likewise, bytes 8-11 (h.w)
// the low nibbles of scales and mins 4-7: the byte of each word at s % 4 is all it needs.
__device__ __forceinline__ void k_scale_min(const uint4& h, int s, float& sc, float& mn) {
  const int shift = 8 * (s & 3);
  const uint32_t b0 = (h.y >> shift) & 0xFF, b1 = (h.z >> shift) & 0xFF, b2 = (h.w >> shift) & 0xFF;
  sc = static_cast<float>(s < 4 ? b0 & 63 : (b2 & 0xF) | ((b0 >> 6) << 4));
  mn = static_cast<float>(s < 4 ? b1 & 63 : (b2 >> 4) | ((b1 >> 6) << 4));
}

__device__ __forceinline__ float lo_half(uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFF)));
}
__device__ __forceinline__ float hi_half(uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

// Q4_K and Q5_K: chunk p (0..7) of a block is qs bytes [16p, 16p + 16): pair j = p / 2
// of sub-blocks (2j in the low nibbles, 2j + 1 in the high ones), offset l0 within.
template <bool kFifthBit>
__device__ __forceinline__ Chunk decode_k4(const uint8_t* block, int p) {
  constexpr int kQs = kFifthBit ? 48 : 16;
  const int j = p >> 1, l0 = (p & 1) * 16;
  const uint4 h = load16(block);
  const uint4 qs = load16(block + kQs + 32 * j + l0);
  const float d = lo_half(h.x), dmin = hi_half(h.x);
  Chunk c;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sc, mn;
    k_scale_min(h, 2 * j + r, sc, mn);
    c.a[r] = d * sc;
    c.b[r] = -(dmin * mn);
    c.col[r] = 64 * j + 32 * r + l0;
  }
  const uint32_t w[4] = {qs.x, qs.y, qs.z, qs.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    c.q[0][i] = w[i] & 0x0F0F0F0F;
    c.q[1][i] = (w[i] >> 4) & 0x0F0F0F0F;
  }
  if constexpr (kFifthBit) {
    // qh[l] holds the fifth bit of value l of sub-block s at bit s.
    const uint4 qh = load16(block + 16 + l0);
    const uint32_t hw[4] = {qh.x, qh.y, qh.z, qh.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      c.q[0][i] |= ((hw[i] >> (2 * j)) & 0x01010101) << 4;
      c.q[1][i] |= ((hw[i] >> (2 * j + 1)) & 0x01010101) << 4;
    }
  }
  return c;
}

// Q6_K: chunk p (0..7) reads ql bytes [64 hf + 32 s + l0, +16) (hf = p / 4: the half of
// the block, s = (p / 2) % 2, l0 = 16 (p % 2)) and the matching qh bytes; its low nibbles
// are values 128 hf + 32 s + l0 + i (top bits at bits 2s of qh), its high nibbles the same
// plus 64 (bits 2s + 4). A value's scale is scales[value / 16].
__device__ __forceinline__ Chunk decode_q6_k(const uint8_t* block, float d, int p) {
  const int hf = p >> 2, s = (p >> 1) & 1, l0 = (p & 1) * 16;
  const uint4 ql = load16(block + 64 * hf + 32 * s + l0);
  const uint4 qh = load16(block + 128 + 32 * hf + l0);
  const uint4 sc = load16(block + 192);
  const uint32_t lw[4] = {ql.x, ql.y, ql.z, ql.w}, hw[4] = {qh.x, qh.y, qh.z, qh.w};
  Chunk c;
  c.col[0] = 128 * hf + 32 * s + l0;
  c.col[1] = c.col[0] + 64;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const auto scale = static_cast<int8_t>(byte_of(sc, c.col[r] >> 4));
    c.a[r] = d * static_cast<float>(scale);
    c.b[r] = -32.0f * c.a[r];  // q - 32, exactly: a · q - 32 a rounds once
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    c.q[0][i] = (lw[i] & 0x0F0F0F0F) | (((hw[i] >> (2 * s)) & 0x03030303) << 4);
    c.q[1][i] = ((lw[i] >> 4) & 0x0F0F0F0F) | (((hw[i] >> (2 * s + 4)) & 0x03030303) << 4);
  }
  return c;
}

// Where row `row` of w starts in each plane.
struct RowRef {
  const uint8_t* body;
  const __half* d;  // null without a scale plane
};

template <QuantType T>
__device__ __forceinline__ RowRef row_ref(const QuantMatrix& w, int64_t row) {
  constexpr QuantLayout L = quant_layout(T);
  const int64_t blocks = row * (w.k / L.block_values);
  return {w.body + blocks * L.body_bytes, L.d_offset >= 0 ? w.d + blocks : nullptr};
}

// Chunk `c` (0..k/32) of a row; columns relative to the row's start.
template <QuantType T>
__device__ __forceinline__ Chunk decode_chunk(const RowRef& row, int c) {
  constexpr QuantLayout L = quant_layout(T);
  constexpr int kChunks = L.block_values / 32;  // per block
  const int b = c / kChunks;
  const int p = c % kChunks;
  const uint8_t* block = row.body + static_cast<int64_t>(b) * L.body_bytes;
  const int col0 = b * L.block_values;
  Chunk ch;
  if constexpr (T == QuantType::kQ4_0) {
    // Byte j: value j in the low nibble, value j + 16 in the high one; x = d (q - 8).
    const float d = __half2float(row.d[b]);
    const uint4 qs = load16(block);
    const uint32_t qw[4] = {qs.x, qs.y, qs.z, qs.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ch.q[0][i] = qw[i] & 0x0F0F0F0F;
      ch.q[1][i] = (qw[i] >> 4) & 0x0F0F0F0F;
    }
    ch.a[0] = ch.a[1] = d;
    ch.b[0] = ch.b[1] = -8.0f * d;
    ch.col[0] = 0;
    ch.col[1] = 16;
  } else if constexpr (T == QuantType::kQ4_K) {
    ch = decode_k4<false>(block, p);
  } else if constexpr (T == QuantType::kQ5_K) {
    ch = decode_k4<true>(block, p);
  } else {
    ch = decode_q6_k(block, __half2float(row.d[b]), p);
  }
  ch.col[0] += col0;
  ch.col[1] += col0;
  return ch;
}

// The first column of run r of chunk 4s + t relative to column 128s, the start of the
// four chunks' 128 values (what decode_chunk puts in col[r] for that chunk, less 128s):
// for readers that must know where a chunk's runs lie before decoding it.
template <QuantType T>
__host__ __device__ constexpr int run_col_in_step(int t, int r) {
  if constexpr (T == QuantType::kQ4_0)
    return 32 * t + 16 * r;  // block t, values 16r..
  else if constexpr (T == QuantType::kQ6_K)
    return 16 * t + 64 * r;  // low nibbles of ql run t, high nibbles 64 values on
  else
    return 64 * (t >> 1) + 16 * (t & 1) + 32 * r;  // sub-blocks 2j (low), 2j + 1 (high)
}

// Run r of a chunk as 16 floats: a · q + b with one rounding. The quant byte becomes a
// float through the exponent trick (0x4B000000 | q is 2^23 + q), cheaper than a
// conversion instruction.
__device__ __forceinline__ void expand_run(const Chunk& c, int r, float (&out)[16]) {
#pragma unroll
  for (int w = 0; w < 4; ++w)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float q = __int_as_float(__byte_perm(c.q[r][w], 0x4B000000u, 0x7440 + i)) - 8388608.0f;
      out[4 * w + i] = fmaf(q, c.a[r], c.b[r]);
    }
}

// Two quants (bytes i and i + 1 of `word`, each below 128) as bf16 a · q + b: the bytes
// become 128 + q through the exponent of bf16 128.0 (0x43), exactly, and 128 comes off
// before the one rounding fused multiply-add.
__device__ __forceinline__ uint32_t bf16_pair(uint32_t word, int i, __nv_bfloat162 a,
                                          __nv_bfloat162 b) {
  const uint32_t sel = static_cast<uint32_t>(i | 4 << 4 | (i + 1) << 8 | 4 << 12);
  const uint32_t biased = __byte_perm(word, 0x43u, sel);
  const __nv_bfloat162 q = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased),
                                   __floats2bfloat162_rn(128.0f, 128.0f));
  const __nv_bfloat162 w = __hfma2(q, a, b);
  return *reinterpret_cast<const uint32_t*>(&w);
}

#endif  // __CUDACC__

// Calls fn(std::integral_constant<QuantType, T>{}) for the T equal to t.
template <typename Fn>
cudaError_t dispatch_type(QuantType t, Fn&& fn) {
  switch (t) {
    case QuantType::kQ4_0: return fn(std::integral_constant<QuantType, QuantType::kQ4_0>{});
    case QuantType::kQ4_K: return fn(std::integral_constant<QuantType, QuantType::kQ4_K>{});
    case QuantType::kQ5_K: return fn(std::integral_constant<QuantType, QuantType::kQ5_K>{});
    case QuantType::kQ6_K: return fn(std::integral_constant<QuantType, QuantType::kQ6_K>{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace sy::cuda::quant
