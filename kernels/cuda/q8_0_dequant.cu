#include <algorithm>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/q8_0_dequant.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;

// 16 quants in, 16 bf16 out per thread step.
__global__ void q8_0_dequant_kernel(const int8_t* __restrict__ quants,
                                    const __half* __restrict__ scales, int64_t total,
                                    bf16* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 16;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 16; i < total;
       i += stride) {
    const int4 q4 = *reinterpret_cast<const int4*>(quants + i);
    const auto* q = reinterpret_cast<const int8_t*>(&q4);
    const float s = __half2float(scales[i / kQ8_0Block]);
    uint4 o[2];
    auto* h = reinterpret_cast<bf16*>(o);
#pragma unroll
    for (int j = 0; j < 16; ++j) h[j] = __float2bfloat16(s * static_cast<float>(q[j]));
    reinterpret_cast<uint4*>(out + i)[0] = o[0];
    reinterpret_cast<uint4*>(out + i)[1] = o[1];
  }
}

}  // namespace

cudaError_t q8_0_dequantize(const Q8_0DequantArgs& a, cudaStream_t stream) {
  if (!a.w.quants || !a.w.scales || !a.out || a.w.n <= 0 || a.w.k <= 0 || a.w.k % kQ8_0Block != 0)
    return cudaErrorInvalidValue;
  if ((reinterpret_cast<uintptr_t>(a.out) | reinterpret_cast<uintptr_t>(a.w.quants)) % 16 != 0)
    return cudaErrorMisalignedAddress;
  const int64_t total = a.w.n * a.w.k;
  const int64_t blocks = std::min<int64_t>(ceil_div(total / 16, kThreads), 132 * 32);
  q8_0_dequant_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      a.w.quants, a.w.scales, total, a.out);
  return launch_status();
}

}  // namespace sy::cuda
