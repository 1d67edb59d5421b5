// What the two GEMV kernels (gemv_bf16.cu, q8_0_gemv.cu) share: one warp per weight
// row, four warps per CTA, M activation rows chosen at compile time, and the warp's sums
// written as fp32 or bf16.
#pragma once

#include <type_traits>
#include <utility>

#include "kernels/cuda/cuda_utils.cuh"

namespace sy::cuda::gemv {

constexpr int kWarps = 4;  // per CTA, one weight row each

#ifdef __CUDACC__
template <typename Out>
__device__ __forceinline__ void store(Out* p, float v) {
  if constexpr (std::is_same_v<Out, float>)
    *p = v;
  else
    *p = __float2bfloat16(v);
}

// Sums each row's partial dot products over the warp; lane 0 writes y[m, row].
template <int M, typename Out>
__device__ __forceinline__ void write_rows(const float (&acc)[M], Out* __restrict__ y, int64_t n,
                                           int64_t row, int lane) {
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const float v = warp_sum(acc[m]);
    if (lane == 0) store(y + m * n + row, v);
  }
}
#endif  // __CUDACC__

template <typename Fn, int... I>
cudaError_t dispatch_rows(int m, Fn& fn, std::integer_sequence<int, I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((m == I + 1 && ((e = fn(std::integral_constant<int, I + 1>{})), true)) || ...);
  return e;
}

// fn(std::integral_constant<int, M>{}) for the M in 1..kMax equal to m; an error for any
// other m.
template <int kMax, typename Fn>
cudaError_t dispatch_rows(int m, Fn&& fn) {
  return dispatch_rows(m, fn, std::make_integer_sequence<int, kMax>{});
}

// CTAs for n weight rows.
inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(ceil_div(n, kWarps));
}

}  // namespace sy::cuda::gemv
