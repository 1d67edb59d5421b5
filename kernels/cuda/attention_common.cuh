// Device helpers shared by the paged-attention kernels (attention_*.cu): argument checks,
// the head_dim dispatch, block-table addressing with a fast divide, cp.async and bf16
// unpacking. Internal to kernels/cuda.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/attention.cuh"

namespace sy::cuda::attn {

// Softmax runs in base 2: q is pre-scaled by scale·log2(e), so exp(x) becomes exp2(x').
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

#ifdef __CUDACC__
// A row's natural-log log-sum-exp from the online softmax's raw-score max m, the base-2
// scale c (scale · log2 e) and the sum l of 2^(s·c − m·c): ln Σ e^(s·scale) =
// (m·c + log2 l) · ln 2; −∞ for a row that saw no key (l = 0).
__device__ __forceinline__ float natural_lse(float m, float c, float l) {
  return l > 0.0f ? (m * c + __log2f(l)) * kLn2 : -INFINITY;
}
#endif

// n / d and n % d for a divisor fixed per launch (the block size), by multiply and
// shift (Granlund–Montgomery, as CUTLASS's FastDivmod). Valid for 0 <= n < 2^31.
struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;
  static FastDiv make(uint32_t d) {
    FastDiv f;
    f.d = d;
    while ((1u << f.shift) < d) ++f.shift;
    const uint64_t one = 1;
    f.mul = static_cast<uint32_t>(((one << 32) * ((one << f.shift) - d)) / d + 1);
    return f;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(__umulhi(n, mul)) + n) >> shift);
  }
};

// Where one sequence's keys live: token j of head h is row
// (indices[j / bs] * n_kv_heads + h) * bs + j % bs of the cache, in head_dim elements.
struct SeqBlocks {
  const int32_t* blocks;  // this sequence's block ids
  int32_t num_blocks;
  int32_t context;        // tokens held
};

__device__ __forceinline__ SeqBlocks seq_blocks(const PagedAttentionArgs& a, int s) {
  const int32_t b0 = a.kv_indptr[s];
  const int32_t n = a.kv_indptr[s + 1] - b0;
  const int32_t ctx = n == 0 ? 0 : (n - 1) * a.block_size + a.kv_last_block_len[s];
  return {a.kv_indices + b0, n, ctx};
}

// Cache row of token j (j < context) of kv head h, counted in head_dim-element rows.
__device__ __forceinline__ int64_t cache_row(const SeqBlocks& sb, const FastDiv& bs, int n_kv_heads, int h,
                                             uint32_t j) {
  const uint32_t blk = bs.div(j);
  const uint32_t slot = j - blk * bs.d;
  return (static_cast<int64_t>(sb.blocks[blk]) * n_kv_heads + h) * bs.d + slot;
}

// 16-byte global→shared copy; with valid == false the destination is zero-filled and
// nothing is read.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Eight bf16 (one 16-byte vector) to float.
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// 2^x by the special-function unit (exp2(-inf) = 0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Shape and pointer checks shared by every launcher: a bad argument returns
// cudaErrorInvalidValue before anything is launched.
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }
inline bool supported_head_dim(int d) { return d == 8 || d == 16 || d == 64 || d == 128; }
inline cudaError_t check_common(const PagedAttentionArgs& a) {
  if (a.n_heads <= 0 || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0) return cudaErrorInvalidValue;
  if (!supported_head_dim(a.head_dim) || a.block_size <= 0 || !(a.scale > 0.0f)) return cudaErrorInvalidValue;
  if (a.num_seqs < 0 || a.num_tokens < 0) return cudaErrorInvalidValue;
  if (a.num_seqs == 0 || a.num_tokens == 0) return cudaSuccess;
  if (!a.k_cache || !a.v_cache || !a.kv_indptr || !a.kv_indices || !a.kv_last_block_len || !a.cu_seqlens ||
      !a.positions)
    return cudaErrorInvalidValue;
  if (!aligned16(a.k_cache) || !aligned16(a.v_cache)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

// Lets `kernel` use `bytes` of dynamic shared memory (above the default 48 KB), once per
// kernel and device (`done`, one per kernel, has a bit per device that has it): the
// attribute is per device, and setting it is no stream operation, so it is also safe
// while a stream is being captured into a graph.
template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes, std::atomic<uint64_t>& done) {
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  const uint64_t bit = dev < 64 ? uint64_t{1} << dev : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess) done.fetch_or(bit, std::memory_order_release);
  return e;
}

// Calls fn(std::integral_constant<int, D>{}) for the supported head dims.
template <typename Fn>
cudaError_t dispatch_head_dim(int d, Fn&& fn) {
  switch (d) {
    case 8: return fn(std::integral_constant<int, 8>{});
    case 16: return fn(std::integral_constant<int, 16>{});
    case 64: return fn(std::integral_constant<int, 64>{});
    case 128: return fn(std::integral_constant<int, 128>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace sy::cuda::attn
