#include <cmath>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;

template <typename Out>
__device__ __forceinline__ Out from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16(v);
}

// One block per output row; 8 columns (16 bytes of table) per step when rows allow it.
template <typename Out>
__global__ void gather_rows_kernel(const bf16* __restrict__ table, int64_t table_rows, int64_t cols,
                                   const int32_t* __restrict__ ids, Out* __restrict__ out, int64_t row0,
                                   bool slice) {
  pdl_wait();
  pdl_release();
  const int64_t r = blockIdx.x;
  const int64_t id = ids[r] - row0;
  Out* dst = out + r * cols;
  if (id < 0 || id >= table_rows) {
    const float fill = slice ? 0.0f : NAN;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = from_float<Out>(fill);
    return;
  }
  const bf16* src = table + id * cols;
  if (cols % 8 == 0) {
    const auto* src8 = reinterpret_cast<const uint4*>(src);
    for (int64_t c8 = threadIdx.x; c8 < cols / 8; c8 += blockDim.x) {
      const uint4 v = src8[c8];
      const auto* h = reinterpret_cast<const bf16*>(&v);
#pragma unroll
      for (int j = 0; j < 8; ++j) dst[c8 * 8 + j] = from_float<Out>(__bfloat162float(h[j]));
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dst[c] = from_float<Out>(__bfloat162float(src[c]));
  }
}

}  // namespace

cudaError_t gather_rows(const GatherRowsArgs& a, cudaStream_t stream) {
  if (!a.table || !a.ids || a.cols <= 0 || a.rows < 0 ||
      (a.out_f32 == nullptr) == (a.out_bf16 == nullptr))
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  if (a.rows > INT32_MAX) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(a.rows));
  if (a.out_f32)
    return launch_kernel(gather_rows_kernel<float>, grid, kThreads, 0, stream, a.table,
                         a.table_rows, a.cols, a.ids, a.out_f32, a.row0, a.slice);
  return launch_kernel(gather_rows_kernel<bf16>, grid, kThreads, 0, stream, a.table, a.table_rows,
                       a.cols, a.ids, a.out_bf16, a.row0, a.slice);
}

}  // namespace sy::cuda
