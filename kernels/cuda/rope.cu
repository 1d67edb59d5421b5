#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 128;

// One block per token; each thread takes pair i of every head, so its sin and cos are
// computed once per token (sincosf without fast math: about 1 ulp, like the CPU's
// double cos rounded to float).
__global__ void rope_kernel(bf16* __restrict__ x, int64_t row_stride, int n_heads, int head_dim,
                            int half, bool interleaved, const int32_t* __restrict__ positions,
                            const float* __restrict__ inv_freq) {
  pdl_wait();
  pdl_release();
  const int64_t t = blockIdx.x;
  const float pos = static_cast<float>(positions[t]);
  bf16* row = x + t * row_stride;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = pos * inv_freq[i];
    float s, c;
    sincosf(angle, &s, &c);
    const int ia = interleaved ? 2 * i : i;
    const int ib = interleaved ? 2 * i + 1 : i + half;
    for (int h = 0; h < n_heads; ++h) {
      bf16* v = row + static_cast<int64_t>(h) * head_dim;
      const float x0 = __bfloat162float(v[ia]), x1 = __bfloat162float(v[ib]);
      v[ia] = __float2bfloat16(x0 * c - x1 * s);
      v[ib] = __float2bfloat16(x1 * c + x0 * s);
    }
  }
}

// One thread per (head, pair) of a token: every pair of the row rotates at once (the
// loop above makes a decode step's single block walk the heads one after another). Each
// thread computes its own sin and cos, the same values as above.
__global__ void rope_pairs_kernel(bf16* __restrict__ x, int64_t row_stride, int n_heads,
                                  int head_dim, int half, bool interleaved,
                                  const int32_t* __restrict__ positions,
                                  const float* __restrict__ inv_freq) {
  pdl_wait();
  pdl_release();
  const int p = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (p >= n_heads * half) return;
  const int h = p / half, i = p - h * half;
  const int64_t t = blockIdx.x;
  const float angle = static_cast<float>(positions[t]) * inv_freq[i];
  float s, c;
  sincosf(angle, &s, &c);
  bf16* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  const int ia = interleaved ? 2 * i : i;
  const int ib = interleaved ? 2 * i + 1 : i + half;
  const float x0 = __bfloat162float(v[ia]), x1 = __bfloat162float(v[ib]);
  v[ia] = __float2bfloat16(x0 * c - x1 * s);
  v[ib] = __float2bfloat16(x1 * c + x0 * s);
}

}  // namespace

cudaError_t rope(const RopeArgs& a, cudaStream_t stream) {
  if (!a.x || !a.positions || !a.inv_freq || a.n_heads <= 0 || a.head_dim <= 0 || a.rot_dim <= 0 ||
      a.rot_dim % 2 != 0 || a.rot_dim > a.head_dim || a.tokens < 0 || a.tokens > INT32_MAX ||
      a.variant < 0 || a.variant > 1 ||
      ceil_div(static_cast<int64_t>(a.n_heads) * (a.rot_dim / 2), kThreads) > 65535)
    return cudaErrorInvalidValue;
  if (a.tokens == 0) return cudaSuccess;
  const int half = a.rot_dim / 2;
  const bool interleaved = a.layout == cpu::RopeLayout::kInterleaved;
  if (a.variant == 1)
    return launch_kernel(rope_kernel, static_cast<unsigned>(a.tokens), kThreads, 0, stream, a.x,
                         a.row_stride, a.n_heads, a.head_dim, half, interleaved, a.positions,
                         a.inv_freq);
  const dim3 grid(
      static_cast<unsigned>(a.tokens),
      static_cast<unsigned>(ceil_div(static_cast<int64_t>(a.n_heads) * half, kThreads)));
  return launch_kernel(rope_pairs_kernel, grid, kThreads, 0, stream, a.x, a.row_stride, a.n_heads,
                       a.head_dim, half, interleaved, a.positions, a.inv_freq);
}

}  // namespace sy::cuda
