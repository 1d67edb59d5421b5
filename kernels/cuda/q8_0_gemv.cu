#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/q8_0_gemv.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

using gemv::kWarps;

// One warp per weight row; each lane reads 16 quants (16 bytes) per step, 512 per warp,
// and the matching 16 activations of each of the M rows (L1/L2 hits after the first
// warp). Sums stay in fp32 per scale block.
template <int M, typename Out>
__global__ void q8_0_gemv_kernel(const int8_t* __restrict__ quants,
                                 const __half* __restrict__ scales, int64_t n, int64_t k,
                                 const bf16* __restrict__ x, Out* __restrict__ y) {
  pdl_wait();
  pdl_release();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= n) return;
  const int lane = threadIdx.x & 31;
  const int8_t* q_row = quants + row * k;
  const __half* s_row = scales + row * (k / kQ8_0Block);
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0;
#pragma unroll 2
  for (int64_t c = lane * 16; c < k; c += 32 * 16) {
    const int4 q4 = *reinterpret_cast<const int4*>(q_row + c);
    const auto* q = reinterpret_cast<const int8_t*>(&q4);
    const float s = __half2float(s_row[c / kQ8_0Block]);
    float qf[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) qf[j] = static_cast<float>(q[j]);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const uint4* xp = reinterpret_cast<const uint4*>(x + m * k + c);
      const uint4 x0 = xp[0], x1 = xp[1];
      const auto* h0 = reinterpret_cast<const __nv_bfloat162*>(&x0);
      const auto* h1 = reinterpret_cast<const __nv_bfloat162*>(&x1);
      float dot = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 a = __bfloat1622float2(h0[j]);
        const float2 b = __bfloat1622float2(h1[j]);
        dot +=
            a.x * qf[2 * j] + a.y * qf[2 * j + 1] + b.x * qf[8 + 2 * j] + b.y * qf[8 + 2 * j + 1];
      }
      acc[m] += s * dot;
    }
  }
  gemv::write_rows<M>(acc, y, n, row, lane);
}

template <typename Out>
cudaError_t launch(const Q8_0GemvArgs& a, Out* y, cudaStream_t stream) {
  return gemv::dispatch_rows<kQ8_0GemvMaxRows>(a.m, [&](auto m) {
    return launch_kernel(q8_0_gemv_kernel<decltype(m)::value, Out>, gemv::blocks_for(a.w.n),
                         kWarps * 32, 0, stream, a.w.quants, a.w.scales, a.w.n, a.w.k, a.x, y);
  });
}

}  // namespace

cudaError_t q8_0_gemv(const Q8_0GemvArgs& a, cudaStream_t stream) {
  if (!a.w.quants || !a.w.scales || !a.x || a.w.n <= 0 || a.w.k <= 0 || a.w.k % kQ8_0Block != 0 ||
      a.m < 1 || a.m > kQ8_0GemvMaxRows || (a.y_f32 == nullptr) == (a.y_bf16 == nullptr) ||
      ceil_div(a.w.n, kWarps) > INT32_MAX)
    return cudaErrorInvalidValue;
  if ((reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.w.quants)) % 16 != 0)
    return cudaErrorMisalignedAddress;
  return a.y_f32 ? launch(a, a.y_f32, stream) : launch(a, a.y_bf16, stream);
}

}  // namespace sy::cuda
