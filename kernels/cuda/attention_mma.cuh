// Tensor-core building blocks of the prefill attention kernel: ldmatrix fragment loads
// and the bf16 m16n8k16 mma (fp32 accumulate). Fragment layouts are the PTX ISA's
// ("Matrix Fragments for mma.m16n8k16"): in a warp, lane = 4·g + t holds rows g and g+8,
// columns 2t and 2t+1 of a C tile.
#pragma once

#include <cstdint>

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

}  // namespace sy::cuda::attn
