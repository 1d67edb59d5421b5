#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/quant_chunk.cuh"
#include "kernels/cuda/quant_gemv.cuh"

namespace sy::cuda {
namespace {

using gemv::kWarps;

// Weight rows a warp takes for M activation rows: each activation load then serves R
// weight rows, which matters once M rows of activations outweigh the weight bytes
// (L1 traffic, not DRAM, bounds the kernel there).
template <int M>
constexpr int rows_per_warp() {
  return M >= 4 ? 4 : M >= 2 ? 2 : 1;
}

// One warp per R weight rows; lane l takes chunks l, l + 32, ... of each row (32 values
// each: one 16-byte load of quants), so a warp reads consecutive bytes of a row. Each
// run's 16 activations of every one of the M rows are loaded once (from L1/L2) for the
// R rows.
template <QuantType T, int M, typename Out>
__global__ void quant_gemv_kernel(QuantMatrix w, const bf16* __restrict__ x, Out* __restrict__ y,
                                  int64_t ldy) {
  constexpr int R = rows_per_warp<M>();
  pdl_wait();
  pdl_release();
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5)) * R;
  if (row0 >= w.n) return;
  const int lane = threadIdx.x & 31;
  const int64_t chunks = w.k / 32;
  float acc[R][M];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[i][m] = 0;
#pragma unroll 2
  for (int64_t c = lane; c < chunks; c += 32) {
    quant::Chunk ch[R];
#pragma unroll
    for (int i = 0; i < R; ++i)  // rows past n re-read the last row; never written
      ch[i] = quant::decode_chunk<T>(w, min(row0 + i, w.n - 1), c);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float wv[R][16];
#pragma unroll
      for (int i = 0; i < R; ++i) quant::expand_run(ch[i], r, wv[i]);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const uint4* xp = reinterpret_cast<const uint4*>(x + m * w.k + ch[0].col[r]);
        const uint4 x0 = xp[0], x1 = xp[1];
        const auto* h0 = reinterpret_cast<const __nv_bfloat162*>(&x0);
        const auto* h1 = reinterpret_cast<const __nv_bfloat162*>(&x1);
        float xv[16];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 a = __bfloat1622float2(h0[j]);
          const float2 b = __bfloat1622float2(h1[j]);
          xv[2 * j] = a.x;
          xv[2 * j + 1] = a.y;
          xv[8 + 2 * j] = b.x;
          xv[8 + 2 * j + 1] = b.y;
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
          float dot = 0;
#pragma unroll
          for (int j = 0; j < 16; ++j) dot = fmaf(xv[j], wv[i][j], dot);
          acc[i][m] += dot;
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i)
    if (row0 + i < w.n) gemv::write_rows<M>(acc[i], y, ldy, row0 + i, lane);
}

template <typename Out>
cudaError_t launch(const QuantGemvArgs& a, Out* y, cudaStream_t stream) {
  const int64_t ldy = a.ldy ? a.ldy : a.w.n;
  return quant::dispatch_type(a.w.type, [&](auto t) {
    return gemv::dispatch_rows<kQuantGemvMaxRows>(a.m, [&](auto m) {
      constexpr int M = decltype(m)::value;
      const auto blocks = static_cast<unsigned>(ceil_div(a.w.n, kWarps * rows_per_warp<M>()));
      return launch_kernel(quant_gemv_kernel<decltype(t)::value, M, Out>, blocks, kWarps * 32, 0,
                           stream, a.w, a.x, y, ldy);
    });
  });
}

}  // namespace

cudaError_t quant_gemv(const QuantGemvArgs& a, cudaStream_t stream) {
  if (!quant_matrix_ok(a.w) || !a.x || a.m < 1 || a.m > kQuantGemvMaxRows ||
      (a.y_f32 == nullptr) == (a.y_bf16 == nullptr) || (a.ldy != 0 && a.ldy < a.w.n) ||
      ceil_div(a.w.n, kWarps) > INT32_MAX)
    return cudaErrorInvalidValue;
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0) return cudaErrorMisalignedAddress;
  return a.y_f32 ? launch(a, a.y_f32, stream) : launch(a, a.y_bf16, stream);
}

}  // namespace sy::cuda
