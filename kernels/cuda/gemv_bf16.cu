#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_bf16.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

using gemv::kWarps;
constexpr int kChunk = 8;   // bf16 values per 16-byte load
constexpr int kUnroll = 4;  // 16-byte weight loads each lane has in flight

// Weights are read once: skip L1 (it keeps the activations) and ask L2 for the next
// 256 bytes as well.
__device__ __forceinline__ uint4 load_streaming(const bf16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// bf16 → fp32 is a 16-bit shift: the low half of a word is the first value.
__device__ __forceinline__ float lo(uint32_t u) {
  return __uint_as_float(u << 16);
}
__device__ __forceinline__ float hi(uint32_t u) {
  return __uint_as_float(u & 0xffff0000u);
}

template <int M>
__device__ __forceinline__ void fma_chunk(const uint4& w, const bf16* __restrict__ x, int64_t k,
                                          int64_t c, float (&acc)[M]) {
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + m * k + c));
    float s = acc[m];
    s = fmaf(lo(w.x), lo(xv.x), s);
    s = fmaf(hi(w.x), hi(xv.x), s);
    s = fmaf(lo(w.y), lo(xv.y), s);
    s = fmaf(hi(w.y), hi(xv.y), s);
    s = fmaf(lo(w.z), lo(xv.z), s);
    s = fmaf(hi(w.z), hi(xv.z), s);
    s = fmaf(lo(w.w), lo(xv.w), s);
    s = fmaf(hi(w.w), hi(xv.w), s);
    acc[m] = s;
  }
}

// acc[m] += w_row · x[m] for lane `lane` of a warp: chunks lane, lane + 32, ... (8 values
// each) in order, kUnroll loads issued before any is used, the first kUnroll already in
// `first`;
// loads past the row's end are skipped (predicated), so no tail runs one load at a time.
constexpr int64_t kStep = 32 * kChunk;  // values a warp covers per load

__device__ __forceinline__ void load_batch(const bf16* __restrict__ w_row, int64_t k, int64_t c,
                                           uint4 (&wv)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    wv[u] = c + u * kStep < k ? load_streaming(w_row + c + u * kStep) : make_uint4(0, 0, 0, 0);
}

template <int M>
__device__ __forceinline__ void row_dot(const bf16* __restrict__ w_row, int64_t k,
                                        const bf16* __restrict__ x, int lane,
                                        const uint4 (&first)[kUnroll], float (&acc)[M]) {
  const int64_t c0 = static_cast<int64_t>(lane) * kChunk;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (c0 + u * kStep < k) fma_chunk<M>(first[u], x, k, c0 + u * kStep, acc);
  for (int64_t c = c0 + kUnroll * kStep; c < k; c += kUnroll * kStep) {
    uint4 wv[kUnroll];
    load_batch(w_row, k, c, wv);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (c + u * kStep < k) fma_chunk<M>(wv[u], x, k, c + u * kStep, acc);
  }
}

// One warp per output row. The first kUnroll loads are issued before pdl_wait(): under
// programmatic launch they overlap the kernel ahead (which writes x).
template <int M, typename Out>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_bf16_kernel(const bf16* __restrict__ w, int64_t n, int64_t k, const bf16* __restrict__ x,
                     Out* __restrict__ y) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= n) return;
  const int lane = threadIdx.x & 31;
  const int64_t c0 = static_cast<int64_t>(lane) * kChunk;
  uint4 first[kUnroll];
  load_batch(w + row * k, k, c0, first);
  pdl_wait();
  pdl_release();
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0;
  row_dot<M>(w + row * k, k, x, lane, first, acc);
  gemv::write_rows<M>(acc, y, n, row, lane);
}

// One row at a time, S warps per row (S = 2 or 4): warp w of the CTA takes segment w % S
// of row (CTA · 4 + w) / S, so twice or four times the warps stream the weight, each over
// a shorter stretch; the segments' sums meet in shared memory and are added in segment
// order (deterministic, though not the one-warp order).
template <typename Out, int S>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_bf16_split_kernel(const bf16* __restrict__ w, int64_t n, int64_t k,
                           const bf16* __restrict__ x, Out* __restrict__ y) {
  __shared__ float seg_sum[kWarps];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) / S;
  const int seg = warp % S;
  const int64_t k_seg = k / S, off = seg * k_seg;
  const bool valid = row < n;  // every warp reaches the barrier below
  const bf16* w_seg = w + (valid ? row : 0) * k + off;
  uint4 first[kUnroll];
  if (valid) load_batch(w_seg, k_seg, static_cast<int64_t>(lane) * kChunk, first);
  pdl_wait();
  pdl_release();
  float acc[1] = {0.0f};
  if (valid) row_dot<1>(w_seg, k_seg, x + off, lane, first, acc);
  const float total = warp_sum(acc[0]);
  if (lane == 0) seg_sum[warp] = total;
  __syncthreads();
  if (!valid || seg != 0 || lane != 0) return;
  float sum = seg_sum[warp];
#pragma unroll
  for (int s = 1; s < S; ++s) sum += seg_sum[warp + s];
  gemv::store(y + row, sum);
}

template <typename Out>
cudaError_t launch(const GemvBf16Args& a, Out* y, cudaStream_t stream) {
  // The split variants exist for one row, where they are compared.
  if (a.m == 1 && a.split == 2)
    return launch_kernel(gemv_bf16_split_kernel<Out, 2>, gemv::blocks_for(2 * a.n), kWarps * 32,
                         0, stream, a.w, a.n, a.k, a.x, y);
  if (a.m == 1 && a.split == 4)
    return launch_kernel(gemv_bf16_split_kernel<Out, 4>, gemv::blocks_for(4 * a.n), kWarps * 32,
                         0, stream, a.w, a.n, a.k, a.x, y);
  if (a.split != 1) return cudaErrorInvalidValue;
  return gemv::dispatch_rows<kGemvBf16MaxRows>(a.m, [&](auto m) {
    return launch_kernel(gemv_bf16_kernel<decltype(m)::value, Out>,
                         gemv::blocks_for(a.n), kWarps * 32, 0, stream, a.w, a.n, a.k, a.x, y);
  });
}

}  // namespace

bool gemv_bf16_supports(const bf16* w, int64_t n, int64_t k, const bf16* x, int m) {
  return w && x && n > 0 && k > 0 && k % kChunk == 0 && m >= 1 && m <= kGemvBf16MaxRows &&
         ceil_div(n, kWarps) <= INT32_MAX &&
         (reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x)) % 16 == 0;
}

cudaError_t gemv_bf16(const GemvBf16Args& a, cudaStream_t stream) {
  if (!gemv_bf16_supports(a.w, a.n, a.k, a.x, a.m) || (a.y_f32 == nullptr) == (a.y_bf16 == nullptr))
    return cudaErrorInvalidValue;
  if (a.split != 1 && (a.split != 2 && a.split != 4 || a.m != 1 ||
                       a.k % (8 * a.split) != 0 || ceil_div(a.n * a.split, kWarps) > INT32_MAX))
    return cudaErrorInvalidValue;
  return a.y_f32 ? launch<float>(a, a.y_f32, stream) : launch<bf16>(a, a.y_bf16, stream);
}

}  // namespace sy::cuda
