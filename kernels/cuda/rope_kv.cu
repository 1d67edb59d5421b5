#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/rope_kv.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 128;

// Grid (token, pair blocks). Thread p of a token owns pair p % (head_dim / 2) of head
// p / (head_dim / 2), heads counted as query heads, then key heads, then value heads.
// A pair is (ia, ib) of rope()'s layout while i < rot_dim / 2, else two adjacent dims
// past rot_dim that only move.
__global__ void __launch_bounds__(kThreads)
    rope_kv_kernel(PagedAttentionArgs a, bf16* __restrict__ q, int half, bool interleaved,
                   const float* __restrict__ inv_freq, attn::FastDiv bs) {
  pdl_wait();
  pdl_release();
  const int pairs = a.head_dim / 2;
  const int p = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (p >= (a.n_heads + 2 * a.n_kv_heads) * pairs) return;
  const int h = p / pairs, i = p - h * pairs;
  const int t = blockIdx.x;
  const int32_t pos = a.positions[t];
  const bool rotates = i < half && h < a.n_heads + a.n_kv_heads;
  int ia, ib;
  if (i < half) {
    ia = interleaved ? 2 * i : i;
    ib = interleaved ? 2 * i + 1 : i + half;
  } else {
    ia = 2 * i;  // past rot_dim: dims rot_dim + 2j, rot_dim + 2j + 1 with 2 * half + 2j = 2i
    ib = 2 * i + 1;
  }
  const bf16* src;
  if (h < a.n_heads)
    src = q + static_cast<int64_t>(t) * a.q_stride + static_cast<int64_t>(h) * a.head_dim;
  else if (h < a.n_heads + a.n_kv_heads)
    src = a.k_new + static_cast<int64_t>(t) * a.kv_stride +
          static_cast<int64_t>(h - a.n_heads) * a.head_dim;
  else
    src = a.v_new + static_cast<int64_t>(t) * a.kv_stride +
          static_cast<int64_t>(h - a.n_heads - a.n_kv_heads) * a.head_dim;
  float x0 = __bfloat162float(src[ia]), x1 = __bfloat162float(src[ib]);
  if (rotates) {
    float s, c;
    sincosf(static_cast<float>(pos) * inv_freq[i], &s, &c);
    const float r0 = x0 * c - x1 * s, r1 = x1 * c + x0 * s;
    x0 = r0, x1 = r1;
  }
  if (h < a.n_heads) {
    if (!rotates) return;  // query dims past rot_dim stay as they are
    bf16* dst = q + static_cast<int64_t>(t) * a.q_stride + static_cast<int64_t>(h) * a.head_dim;
    dst[ia] = __float2bfloat16(x0);
    dst[ib] = __float2bfloat16(x1);
    return;
  }
  // The sequence that owns row t: the last s with cu_seqlens[s] <= t.
  int lo = 0, hi = a.num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.cu_seqlens[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  const attn::SeqBlocks sb = attn::seq_blocks(a, lo);
  // A position outside the sequence's blocks is a planning bug; writing it would corrupt
  // another sequence's cache, so the row is dropped (as write_kv_cache does).
  if (pos < 0 || pos >= sb.num_blocks * a.block_size) return;
  const bool is_k = h < a.n_heads + a.n_kv_heads;
  const int kvh = is_k ? h - a.n_heads : h - a.n_heads - a.n_kv_heads;
  bf16* dst = (is_k ? a.k_cache : a.v_cache) +
              attn::cache_row(sb, bs, a.n_kv_heads, kvh, static_cast<uint32_t>(pos)) * a.head_dim;
  dst[ia] = __float2bfloat16(x0);
  dst[ib] = __float2bfloat16(x1);
}

}  // namespace

cudaError_t rope_write_kv(const RopeKvArgs& a, cudaStream_t stream) {
  const PagedAttentionArgs& kv = a.kv;
  if (cudaError_t e = attn::check_common(kv); e != cudaSuccess) return e;
  if (!a.q || a.q != kv.q || !kv.k_new || !kv.v_new || !a.inv_freq || !kv.positions ||
      a.rot_dim <= 0 || a.rot_dim % 2 != 0 || a.rot_dim > kv.head_dim || kv.head_dim % 2 != 0 ||
      kv.q_stride < static_cast<int64_t>(kv.n_heads) * kv.head_dim ||
      kv.kv_stride < static_cast<int64_t>(kv.n_kv_heads) * kv.head_dim ||
      ceil_div(static_cast<int64_t>(kv.n_heads + 2 * kv.n_kv_heads) * (kv.head_dim / 2), kThreads) >
          65535)
    return cudaErrorInvalidValue;
  if (kv.num_seqs == 0 || kv.num_tokens == 0) return cudaSuccess;
  const dim3 grid(
      static_cast<unsigned>(kv.num_tokens),
      static_cast<unsigned>(ceil_div(
          static_cast<int64_t>(kv.n_heads + 2 * kv.n_kv_heads) * (kv.head_dim / 2), kThreads)));
  return launch_kernel(rope_kv_kernel, grid, kThreads, 0, stream, kv, a.q, a.rot_dim / 2,
                       a.layout == cpu::RopeLayout::kInterleaved, a.inv_freq,
                       attn::FastDiv::make(kv.block_size));
}

}  // namespace sy::cuda
