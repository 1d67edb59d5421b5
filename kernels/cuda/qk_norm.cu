#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/qk_norm.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

// One warp per (token, head): the head's values are read twice (sum of squares, then
// the scaled write), the second time from L1.
__global__ void qk_norm_kernel(bf16* __restrict__ x, int64_t tokens, int64_t row_stride, int n_q,
                               int n_kv, int head_dim, const float* __restrict__ q_weight,
                               const float* __restrict__ k_weight, float eps) {
  pdl_wait();
  pdl_release();
  const int heads = n_q + n_kv;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= tokens * heads) return;
  const int lane = threadIdx.x & 31;
  const int64_t t = item / heads;
  const int h = static_cast<int>(item % heads);
  bf16* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  const float* w = h < n_q ? q_weight : k_weight;
  float ss = 0;
  for (int i = lane; i < head_dim; i += 32) {
    const float f = __bfloat162float(v[i]);
    ss += f * f;
  }
  ss = warp_sum(ss);
  const float scale = rsqrtf(ss / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32)
    v[i] = __float2bfloat16(w[i] * (__bfloat162float(v[i]) * scale));
}

}  // namespace

cudaError_t qk_norm(const QkNormArgs& a, cudaStream_t stream) {
  if (!a.x || !a.q_weight || !a.k_weight || a.n_q_heads <= 0 || a.n_kv_heads < 0 ||
      a.head_dim <= 0 || a.tokens < 0)
    return cudaErrorInvalidValue;
  const int64_t items = a.tokens * (a.n_q_heads + a.n_kv_heads);
  if (items == 0) return cudaSuccess;
  const int64_t blocks = ceil_div(items, kWarpsPerBlock);
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  return launch_kernel(qk_norm_kernel, static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0,
                       stream, a.x, a.tokens, a.row_stride, a.n_q_heads, a.n_kv_heads, a.head_dim,
                       a.q_weight, a.k_weight, a.eps);
}

}  // namespace sy::cuda
