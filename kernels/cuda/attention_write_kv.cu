// write_kv_cache: scatters this step's K/V rows into their blocks of the paged cache.
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 128;

// One CTA per token row; each thread moves 16-byte vectors of K and V.
__global__ void __launch_bounds__(kThreads) write_kv_kernel(PagedAttentionArgs a, attn::FastDiv bs) {
  pdl_wait();
  pdl_release();
  const int t = blockIdx.x;
  // The sequence that owns row t: the last s with cu_seqlens[s] <= t.
  int lo = 0, hi = a.num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.cu_seqlens[mid] <= t) lo = mid; else hi = mid - 1;
  }
  const attn::SeqBlocks sb = attn::seq_blocks(a, lo);
  const int32_t pos = a.positions[t];
  // A position outside the sequence's blocks is a planning bug; writing it would corrupt
  // another sequence's cache, so the row is dropped.
  if (pos < 0 || pos >= sb.num_blocks * a.block_size) return;
  const int chunks = a.head_dim / 8;
  for (int i = threadIdx.x; i < a.n_kv_heads * chunks; i += kThreads) {
    const int h = i / chunks, c = i % chunks;
    const int64_t dst = attn::cache_row(sb, bs, a.n_kv_heads, h, static_cast<uint32_t>(pos)) * a.head_dim + c * 8;
    const int64_t src = t * a.kv_stride + static_cast<int64_t>(h) * a.head_dim + c * 8;
    *reinterpret_cast<uint4*>(a.k_cache + dst) = *reinterpret_cast<const uint4*>(a.k_new + src);
    *reinterpret_cast<uint4*>(a.v_cache + dst) = *reinterpret_cast<const uint4*>(a.v_new + src);
  }
}

}  // namespace

cudaError_t write_kv_cache(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (cudaError_t e = attn::check_common(a); e != cudaSuccess) return e;
  if (a.num_seqs == 0 || a.num_tokens == 0) return cudaSuccess;
  if (!a.k_new || !a.v_new || !attn::aligned16(a.k_new) || !attn::aligned16(a.v_new) || a.kv_stride % 8 != 0 ||
      a.kv_stride < static_cast<int64_t>(a.n_kv_heads) * a.head_dim)
    return cudaErrorInvalidValue;
  return launch_kernel(write_kv_kernel, a.num_tokens, kThreads, 0, stream, a,
                       attn::FastDiv::make(a.block_size));
}

}  // namespace sy::cuda
