// Tensor-core building blocks of the prefill attention kernel: ldmatrix fragment loads
// and the bf16 m16n8k16 mma (fp32 accumulate). Fragment layouts are the PTX ISA's
// ("Matrix Fragments for mma.m16n8k16"): in a warp, lane = 4·g + t holds rows g and g+8,
// columns 2t and 2t+1 of a C tile.
#pragma once

#include <cstdint>

#include "kernels/cuda/attention_common.cuh"

namespace sy::cuda::attn {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Element offset of (row, 16-byte chunk c) in a [rows][kChunks·8] bf16 tile whose chunks
// are XOR-swizzled by the row, so that the eight rows an ldmatrix reads at one chunk
// column fall in distinct banks.
template <int kChunks>
__device__ __forceinline__ int swizzled(int row, int c) {
  constexpr int kMask = (kChunks < 8 ? kChunks : 8) - 1;
  return row * kChunks * 8 + ((c ^ (row & kMask)) * 8);
}

// Four 8×8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a · b for a 16×16 (row) by 16×8 (col) bf16 product.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One online-softmax step (base 2) of one accumulator row of an m16n8 (or wgmma m64) C
// fragment: the thread holds keys key0 + 8j + 2t + e (j < kSlices, e = 0, 1) of the row
// through score(j, e), a float&; the row's other keys sit on the other three lanes of the
// quad. With `masked`, keys at or past `limit` become −∞. The running max and sum
// advance, the scores become probabilities 2^(s·c − m·c) with c = qk_scale (the max is
// taken in raw scores: scale > 0 keeps the order, and c folds into one FFMA per
// probability), and the factor the row's earlier output must be scaled by is returned.
template <int kSlices, typename Score>
__device__ __forceinline__ float online_softmax_row(Score&& score, bool masked, int key0, int t, int limit,
                                                    float qk_scale, float& m_run, float& l_run) {
  float mx = -INFINITY;
#pragma unroll
  for (int j = 0; j < kSlices; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float& x = score(j, e);
      if (masked && key0 + 8 * j + 2 * t + e >= limit) x = -INFINITY;
      mx = fmaxf(mx, x);
    }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(m_run, mx);
  const float base = m_new == -INFINITY ? 0.0f : m_new * qk_scale;  // a row with no keys yet
  const float alpha = fast_exp2(m_run * qk_scale - base);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kSlices; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float& x = score(j, e);
      x = fast_exp2(fmaf(x, qk_scale, -base));
      sum += x;
    }
  l_run = l_run * alpha + sum;
  m_run = m_new;
  return alpha;
}

}  // namespace sy::cuda::attn
