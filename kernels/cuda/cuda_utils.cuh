// Device helpers shared by the kernels in this folder: bf16 conversions, warp and block
// reductions, and launch-shape arithmetic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

using bf16 = __nv_bfloat16;

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The error of the launch just made (configuration errors surface here, not at the
// call): every launcher returns this after its <<<>>>.
inline cudaError_t launch_status() {
  return cudaGetLastError();
}

#ifdef __CUDACC__

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the result. `scratch` holds 32 values of T in
// shared memory; blockDim.x is a multiple of 32. Back-to-back calls may share the
// scratch: each call synchronizes before writing it.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // earlier readers of scratch are done
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = lane < warps ? scratch[lane] : T(0);
  return warp_sum(total);
}

#endif  // __CUDACC__

}  // namespace sy::cuda
