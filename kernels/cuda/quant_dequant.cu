#include <algorithm>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/quant_chunk.cuh"
#include "kernels/cuda/quant_dequant.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;

// One chunk (32 values, two runs of 16) per thread step; consecutive threads take
// consecutive chunks, so a warp reads consecutive bytes and writes whole blocks' rows.
template <QuantType T>
__global__ void quant_dequant_kernel(QuantMatrix w, int64_t total_chunks, bf16* __restrict__ out) {
  const int64_t chunks_per_row = w.k / 32;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total_chunks;
       g += stride) {
    const int64_t row = g / chunks_per_row;
    const quant::Chunk ch =
        quant::decode_chunk<T>(quant::row_ref<T>(w, row), static_cast<int>(g % chunks_per_row));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float v[16];
      quant::expand_run(ch, r, v);
      uint4 o[2];
      auto* h = reinterpret_cast<__nv_bfloat162*>(o);
#pragma unroll
      for (int j = 0; j < 8; ++j) h[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
      auto* dst = reinterpret_cast<uint4*>(out + row * w.k + ch.col[r]);
      dst[0] = o[0];
      dst[1] = o[1];
    }
  }
}

}  // namespace

cudaError_t quant_dequantize(const QuantDequantArgs& a, cudaStream_t stream) {
  if (!quant_matrix_ok(a.w) || !a.out || a.w.k / 32 > INT32_MAX) return cudaErrorInvalidValue;
  if (reinterpret_cast<uintptr_t>(a.out) % 16 != 0) return cudaErrorMisalignedAddress;
  const int64_t total = a.w.n * (a.w.k / 32);
  const int64_t blocks = std::min<int64_t>(ceil_div(total, kThreads), 132 * 32);
  return quant::dispatch_type(a.w.type, [&](auto t) {
    quant_dequant_kernel<decltype(t)::value>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a.w, total, a.out);
    return launch_status();
  });
}

}  // namespace sy::cuda
