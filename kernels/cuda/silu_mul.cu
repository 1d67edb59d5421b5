#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/silu_mul.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;

// Grid-stride over the output; 8 values (16 bytes) per step when n allows it.
__global__ void silu_mul_kernel(const bf16* __restrict__ gate_up, bf16* __restrict__ out,
                                int64_t rows, int64_t n) {
  pdl_wait();
  pdl_release();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (n % 8 == 0) {
    const int64_t per_row = n / 8;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < rows * per_row; i += stride) {
      const int64_t r = i / per_row, c = (i % per_row) * 8;
      const uint4 g4 = *reinterpret_cast<const uint4*>(gate_up + r * 2 * n + c);
      const uint4 u4 = *reinterpret_cast<const uint4*>(gate_up + r * 2 * n + n + c);
      const auto* g = reinterpret_cast<const bf16*>(&g4);
      const auto* u = reinterpret_cast<const bf16*>(&u4);
      uint4 o4;
      auto* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = __float2bfloat16(silu_times(__bfloat162float(g[j]), __bfloat162float(u[j])));
      *reinterpret_cast<uint4*>(out + r * n + c) = o4;
    }
    return;
  }
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * n;
       i += stride) {
    const int64_t r = i / n, c = i % n;
    out[i] = __float2bfloat16(silu_times(__bfloat162float(gate_up[r * 2 * n + c]),
                                         __bfloat162float(gate_up[r * 2 * n + n + c])));
  }
}

}  // namespace

cudaError_t silu_mul(const SiluMulArgs& a, cudaStream_t stream) {
  if (!a.gate_up || !a.out || a.rows < 0 || a.n <= 0) return cudaErrorInvalidValue;
  const int64_t work = a.rows * (a.n % 8 == 0 ? a.n / 8 : a.n);
  if (work == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>(ceil_div(work, kThreads), 132 * 16);
  return launch_kernel(silu_mul_kernel, static_cast<unsigned>(blocks), kThreads, 0, stream,
                       a.gate_up, a.out, a.rows, a.n);
}

}  // namespace sy::cuda
