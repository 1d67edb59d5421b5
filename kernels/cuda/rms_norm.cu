#include <algorithm>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxThreads = 1024;
constexpr int kMaxVecs = 8;  // float4 per thread: rows up to 8 · 4 · 1024 = 32768 values

// One block per row. The sum of squares is a float tree sum (the CPU reference sums in
// double; over a few thousand values the two differ by ~1e-7 relative).
__global__ void add_rms_norm_kernel(float* __restrict__ residual, const float* __restrict__ delta,
                                    const float* __restrict__ weight, bf16* __restrict__ out, int n,
                                    float eps) {
  __shared__ float scratch[32];
  pdl_wait();
  pdl_release();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  float* res = residual + base;
  float ss = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = res[i];
    if (delta) {
      v += delta[base + i];
      res[i] = v;
    }
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float scale = rsqrtf(ss / static_cast<float>(n) + eps);
  // Each thread reads back only what it wrote above.
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    out[base + i] = __float2bfloat16(weight[i] * (res[i] * scale));
}

// The same with the row held in registers, V float4 per thread: every load of a row is
// issued before the first is used (a decode step's handful of rows is otherwise a chain
// of dependent memory round trips), and the second pass reads nothing back.
template <int V>
__global__ void add_rms_norm_vec_kernel(float* __restrict__ residual,
                                        const float* __restrict__ delta,
                                        const float* __restrict__ weight, bf16* __restrict__ out,
                                        int n, float eps) {
  __shared__ float scratch[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  const int n4 = n / 4;
  auto* res = reinterpret_cast<float4*>(residual + base);
  float4 v[V], d[V];
  pdl_wait();
  pdl_release();
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) {
      v[j] = res[i];
      if (delta) d[j] = reinterpret_cast<const float4*>(delta + base)[i];
    }
  }
  float ss = 0;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) {
      if (delta) {
        v[j].x += d[j].x;
        v[j].y += d[j].y;
        v[j].z += d[j].z;
        v[j].w += d[j].w;
        res[i] = v[j];
      }
      ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
  }
  ss = block_sum(ss, scratch);
  const float scale = rsqrtf(ss / static_cast<float>(n) + eps);
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) {
      const float4 w = reinterpret_cast<const float4*>(weight)[i];
      __nv_bfloat162 o[2];
      o[0] = __floats2bfloat162_rn(w.x * (v[j].x * scale), w.y * (v[j].y * scale));
      o[1] = __floats2bfloat162_rn(w.z * (v[j].z * scale), w.w * (v[j].w * scale));
      reinterpret_cast<uint2*>(out + base)[i] = *reinterpret_cast<const uint2*>(o);
    }
  }
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace

cudaError_t add_rms_norm(const AddRmsNormArgs& a, cudaStream_t stream) {
  if (!a.residual || !a.weight || !a.out || a.n <= 0 || a.rows < 0 || a.rows > INT32_MAX)
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  const auto rows = static_cast<unsigned>(a.rows);
  const int n4 = a.n / 4;
  const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, ceil_div(n4, 32) * 32));
  const int vecs = n4 > 0 ? static_cast<int>(ceil_div(n4, threads)) : 0;
  const bool vec = a.n % 4 == 0 && vecs >= 1 && vecs <= kMaxVecs &&
                   aligned(a.residual, 16) && aligned(a.weight, 16) && aligned(a.out, 8) &&
                   (!a.delta || aligned(a.delta, 16));
  if (!vec)
    return launch_kernel(add_rms_norm_kernel, rows, kThreads, 0, stream, a.residual, a.delta,
                         a.weight, a.out, a.n, a.eps);
  switch (vecs) {
#define SY_NORM_CASE(V)                                                                       \
  case V:                                                                                     \
    return launch_kernel(add_rms_norm_vec_kernel<V>, rows, threads, 0, stream, a.residual, \
                         a.delta, a.weight, a.out, a.n, a.eps);
    SY_NORM_CASE(1)
    SY_NORM_CASE(2)
    SY_NORM_CASE(3)
    SY_NORM_CASE(4)
    SY_NORM_CASE(5)
    SY_NORM_CASE(6)
    SY_NORM_CASE(7)
    SY_NORM_CASE(8)
#undef SY_NORM_CASE
  }
  return cudaErrorInvalidValue;  // unreachable: vec needs 1 <= vecs <= kMaxVecs
}

}  // namespace sy::cuda
