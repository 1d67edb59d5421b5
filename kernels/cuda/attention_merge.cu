#include <cmath>

#include "kernels/cuda/attention_merge.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

// One CTA per (row, head); thread d owns dimension d (and d + blockDim.x, ...).
__global__ void merge_states_kernel(MergeStatesArgs a) {
  pdl_wait();
  pdl_release();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * a.heads + blockIdx.y;
  float m = -INFINITY;
  for (int p = 0; p < a.num_parts; ++p) m = fmaxf(m, a.lses[p][i]);
  float den = 0.0f;
  float w[kMaxMergeParts];
  for (int p = 0; p < a.num_parts; ++p) {
    w[p] = m == -INFINITY ? 0.0f : expf(a.lses[p][i] - m);  // 0 for a part without keys
    den += w[p];
  }
  const float inv = den > 0.0f ? 1.0f / den : 0.0f;
  for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
    const int64_t e = i * a.head_dim + d;
    float acc = 0.0f;
    for (int p = 0; p < a.num_parts; ++p)
      if (w[p] != 0.0f) acc += w[p] * __bfloat162float(a.outs[p][e]);
    a.out[e] = __float2bfloat16(acc * inv);
  }
  if (a.lse && threadIdx.x == 0) a.lse[i] = den > 0.0f ? m + logf(den) : -INFINITY;
}

}  // namespace

cudaError_t merge_attention_states(const MergeStatesArgs& a, cudaStream_t stream) {
  if (a.num_parts < 1 || a.num_parts > kMaxMergeParts || !a.out || a.rows < 0 || a.rows > INT32_MAX || a.heads <= 0 ||
      a.heads > 65535 || a.head_dim <= 0 || a.head_dim > 1024)
    return cudaErrorInvalidValue;
  for (int p = 0; p < a.num_parts; ++p)
    if (!a.outs[p] || !a.lses[p]) return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  const int threads = static_cast<int>(std::min<int64_t>(256, ceil_div(a.head_dim, 32) * 32));
  return launch_kernel(merge_states_kernel, dim3(static_cast<unsigned>(a.rows), static_cast<unsigned>(a.heads)), threads,
                       0, stream, a);
}

}  // namespace sy::cuda
