#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/quant_chunk.cuh"
#include "kernels/cuda/quant_gemv.cuh"

namespace sy::cuda {
namespace {

// Warps per CTA (QuantGemvArgs::warps): all on the same 16 weight rows, each on every
// S-th group of four chunks of k, their sums added at the end.
constexpr int kDefaultWarps = 8;

// On tensor cores (mma.m16n8k16, bf16 in, fp32 sums): a CTA takes 16 weight rows, the
// 8 columns of B are the M activation rows (zeros past M). In a warp, lane (g, t) (lane
// = 4g + t) decodes one chunk of rows g and g + 8 and loads the matching 16 activations
// of row g of x. The k order inside an mma is free as long as A and B agree, so lane t's
// k slots {2t, 2t+1, 2t+8, 2t+9} of mma step s carry values 4s..4s+3 of its own
// chunk's run: every lane expands only what it loaded, with no exchange. The weights are
// expanded to bf16 (a · q + b, a and b rounded to bf16: the precision of the prefill
// path's expansion), the products and sums are fp32.
template <QuantType T, int M, int S, typename Out>
__global__ void __launch_bounds__(S * 32)
    quant_gemv_kernel(QuantMatrix w, const bf16* __restrict__ x, Out* __restrict__ y, int64_t ldy) {
  __shared__ float partial[S][32][4];
  pdl_wait();
  pdl_release();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * 16;
  // Rows past n decode the last row again; their outputs are never written.
  const quant::RowRef rows[2] = {quant::row_ref<T>(w, min(row0 + g, w.n - 1)),
                                 quant::row_ref<T>(w, min(row0 + g + 8, w.n - 1))};
  const int chunks = static_cast<int>(w.k / 32);
  const bf16* xr = x + static_cast<int64_t>(g < M ? g : 0) * w.k;
  float c[4] = {0, 0, 0, 0};
#pragma unroll 2
  for (int base = 4 * warp; base < chunks; base += 4 * S) {
    // Lanes whose chunk is past the row's end (k not a multiple of 128) add zeros.
    const bool valid = base + t < chunks;
    const int ch = valid ? base + t : chunks - 1;
    const quant::Chunk q[2] = {quant::decode_chunk<T>(rows[0], ch),
                               quant::decode_chunk<T>(rows[1], ch)};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      uint4 x0 = make_uint4(0, 0, 0, 0), x1 = x0;
      if (g < M && valid) {
        const uint4* xp = reinterpret_cast<const uint4*>(xr + q[0].col[r]);
        x0 = xp[0];
        x1 = xp[1];
      }
      const uint32_t xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
      const __nv_bfloat162 a0 = __float2bfloat162_rn(valid ? q[0].a[r] : 0.0f);
      const __nv_bfloat162 b0 = __float2bfloat162_rn(valid ? q[0].b[r] : 0.0f);
      const __nv_bfloat162 a1 = __float2bfloat162_rn(valid ? q[1].a[r] : 0.0f);
      const __nv_bfloat162 b1 = __float2bfloat162_rn(valid ? q[1].b[r] : 0.0f);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint32_t a[4] = {quant::bf16_pair(q[0].q[r][s], 0, a0, b0),
                               quant::bf16_pair(q[1].q[r][s], 0, a1, b1),
                               quant::bf16_pair(q[0].q[r][s], 2, a0, b0),
                               quant::bf16_pair(q[1].q[r][s], 2, a1, b1)};
        attn::mma_bf16(c, a, xw[2 * s], xw[2 * s + 1]);
      }
    }
  }
  // c[0], c[1]: row g, activation rows 2t and 2t + 1; c[2], c[3]: row g + 8.
#pragma unroll
  for (int i = 0; i < 4; ++i) partial[warp][lane][i] = c[i];
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float v = 0;
#pragma unroll
    for (int p = 0; p < S; ++p) v += partial[p][lane][i];
    const int m = 2 * t + (i & 1);
    const int64_t row = row0 + g + (i >> 1) * 8;
    if (m < M && row < w.n) gemv::store(y + m * ldy + row, v);
  }
}

template <int S, typename Out>
cudaError_t launch(const QuantGemvArgs& a, Out* y, cudaStream_t stream) {
  const int64_t ldy = a.ldy ? a.ldy : a.w.n;
  return quant::dispatch_type(a.w.type, [&](auto t) {
    return gemv::dispatch_rows<kQuantGemvMaxRows>(a.m, [&](auto m) {
      return launch_kernel(quant_gemv_kernel<decltype(t)::value, decltype(m)::value, S, Out>,
                           static_cast<unsigned>(ceil_div(a.w.n, 16)), S * 32, 0, stream, a.w, a.x,
                           y, ldy);
    });
  });
}

template <typename Out>
cudaError_t launch(const QuantGemvArgs& a, Out* y, cudaStream_t stream) {
  return a.warps == 16 ? launch<16>(a, y, stream) : launch<kDefaultWarps>(a, y, stream);
}

}  // namespace

cudaError_t quant_gemv(const QuantGemvArgs& a, cudaStream_t stream) {
  if (!quant_matrix_ok(a.w) || !a.x || a.m < 1 || a.m > kQuantGemvMaxRows ||
      (a.y_f32 == nullptr) == (a.y_bf16 == nullptr) || (a.ldy != 0 && a.ldy < a.w.n) ||
      (a.warps != 0 && a.warps != kDefaultWarps && a.warps != 16) ||
      ceil_div(a.w.n, 16) > INT32_MAX || a.w.k / 32 > INT32_MAX)
    return cudaErrorInvalidValue;
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0) return cudaErrorMisalignedAddress;
  return a.y_f32 ? launch(a, a.y_f32, stream) : launch(a, a.y_bf16, stream);
}

}  // namespace sy::cuda
