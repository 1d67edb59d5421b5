#include <algorithm>
#include <atomic>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/quant_chunk.cuh"
#include "kernels/cuda/quant_gemm.cuh"

namespace sy::cuda {
namespace {

constexpr int kWarps = 8;              // per CTA, 16 weight rows each
constexpr int kCtaRows = 16 * kWarps;  // weight rows per CTA
constexpr int kStep = 128;             // k values per step: four chunks of 32
constexpr int kXStride = kStep + 8;    // bf16 per staged activation row (one 16-byte pad)

// The 16 weights of one run of one weight row as mma operand words: w[s][0] holds values
// 4s and 4s + 1 of the run, w[s][1] values 4s + 2 and 4s + 3.
struct RunWords {
  uint32_t w[4][2];
};

// The weight formats as the kernel reads them. Lane t of a warp takes chunk 4 · step + t
// of its rows; col(t, r) is the first column of run r of that chunk relative to the step's
// first column, 128 · step.
template <QuantType T>
struct QuantSource {
  QuantMatrix w;
  using Loaded = quant::Chunk;
  __device__ int64_t n() const { return w.n; }
  __device__ int64_t k() const { return w.k; }
  __device__ Loaded load(int64_t row, int chunk) const {
    return quant::decode_chunk<T>(quant::row_ref<T>(w, row), chunk);
  }
  // As the GEMV expands them (quant::bf16_pair); an invalid chunk expands to zeros.
  __device__ static void expand(const Loaded& c, int r, bool valid, RunWords& out) {
    const __nv_bfloat162 a = __float2bfloat162_rn(valid ? c.a[r] : 0.0f);
    const __nv_bfloat162 b = __float2bfloat162_rn(valid ? c.b[r] : 0.0f);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      out.w[s][0] = quant::bf16_pair(c.q[r][s], 0, a, b);
      out.w[s][1] = quant::bf16_pair(c.q[r][s], 2, a, b);
    }
  }
  __host__ __device__ static constexpr int col(int t, int r) { return quant::run_col_in_step<T>(t, r); }
};

// Q8_0: chunk c is block c (columns 32c..32c + 31), run r its values 16r..16r + 15.
struct Q8Source {
  Q8_0Matrix w;
  struct Loaded {
    uint4 q[2];
    float d;
  };
  __device__ int64_t n() const { return w.n; }
  __device__ int64_t k() const { return w.k; }
  __device__ Loaded load(int64_t row, int chunk) const {
    const auto* p = reinterpret_cast<const uint4*>(w.quants + row * w.k + 32 * chunk);
    return {{__ldg(p), __ldg(p + 1)}, __half2float(w.scales[row * (w.k / kQ8_0Block) + chunk])};
  }
  // d · q rounded once to bf16, as q8_0_dequant does: a signed byte plus 128 becomes
  // fp16 1024 + (q + 128) through the exponent byte 0x64, and 1152 comes off exactly.
  __device__ static void expand(const Loaded& l, int r, bool valid, RunWords& out) {
    const float d = valid ? l.d : 0.0f;
    const uint32_t words[4] = {l.q[r].x, l.q[r].y, l.q[r].z, l.q[r].w};
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const uint32_t u = words[s] ^ 0x80808080u;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t biased = __byte_perm(u, 0x64u, h == 0 ? 0x4140 : 0x4342);
        const float2 q = __half22float2(
            __hsub2(*reinterpret_cast<const __half2*>(&biased), __floats2half2_rn(1152.0f, 1152.0f)));
        const __nv_bfloat162 v = __floats2bfloat162_rn(q.x * d, q.y * d);
        out.w[s][h] = *reinterpret_cast<const uint32_t*>(&v);
      }
    }
  }
  __host__ __device__ static constexpr int col(int t, int r) { return 32 * t + 16 * r; }
};

// A CTA takes 128 weight rows (16 a warp) and the steps [s0, s1) of its split of k. Per
// step the CTA stages the activations' 128 columns of that step in shared memory (two
// buffers, cp.async), in the order the lanes read them: for each activation row, run r of
// lane t's chunk at 16-byte units 8r + 2t and 8r + 2t + 1, the row padded by one unit, so
// that the eight lanes of a quarter-warp read eight different bank groups. Each lane
// decodes its chunk of weight rows g and g + 8 and, for each group of 8 activation rows,
// runs the GEMV's mma steps (quant_gemv.cu: lane t's k slots of step s carry values
// 4s..4s + 3 of its own run, in A and B alike).
template <class Src, int NT, typename Out>
__global__ void __launch_bounds__(kWarps * 32)
    quant_gemm_kernel(Src src, const bf16* __restrict__ x, int m, Out* __restrict__ y, int64_t ldy,
                      float* __restrict__ partial) {
  __shared__ __align__(16) bf16 xs[2][NT * 8 * kXStride];
  pdl_wait();
  pdl_release();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t n = src.n(), k = src.k();
  const int chunks = static_cast<int>(k / 32), steps = (chunks + 3) / 4;
  const int s0 = static_cast<int>(static_cast<int64_t>(steps) * blockIdx.y / gridDim.y);
  const int s1 = static_cast<int>(static_cast<int64_t>(steps) * (blockIdx.y + 1) / gridDim.y);
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kCtaRows + warp * 16;
  // Rows past n decode the last row again; their outputs are never written.
  const int64_t rows[2] = {min(row0 + g, n - 1), min(row0 + g + 8, n - 1)};

  // Unit u (16 bytes) of staged row i: values 8 (u % 2).. of run u / 8 of chunk (u / 2) % 4;
  // rows past m and columns past k are zeros.
  auto stage = [&](int step, int buf) {
    for (int i = threadIdx.x; i < NT * 8 * 16; i += kWarps * 32) {
      const int row = i >> 4, u = i & 15;
      const int64_t col = static_cast<int64_t>(step) * kStep + Src::col((u >> 1) & 3, u >> 3) + 8 * (u & 1);
      const bool valid = row < m && col < k;
      attn::cp_async16(&xs[buf][row * kXStride + u * 8], x + (valid ? row * k + col : 0), valid);
    }
    attn::cp_async_commit();
  };

  float c[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) c[nt][0] = c[nt][1] = c[nt][2] = c[nt][3] = 0.0f;
  if (s0 < s1) stage(s0, 0);
  for (int step = s0; step < s1; ++step) {
    const int buf = (step - s0) & 1;
    const bool more = step + 1 < s1;
    if (more) stage(step + 1, buf ^ 1);
    const int ch = 4 * step + t;
    const bool valid = ch < chunks;  // the last step of a k not a multiple of 128
    const typename Src::Loaded w0 = src.load(rows[0], valid ? ch : chunks - 1);
    const typename Src::Loaded w1 = src.load(rows[1], valid ? ch : chunks - 1);
    if (more)
      attn::cp_async_wait<1>();
    else
      attn::cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      RunWords a0, a1;
      Src::expand(w0, r, valid, a0);
      Src::expand(w1, r, valid, a1);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const auto* xp = reinterpret_cast<const uint4*>(&xs[buf][(nt * 8 + g) * kXStride + (8 * r + 2 * t) * 8]);
        const uint4 x0 = xp[0], x1 = xp[1];
        const uint32_t xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const uint32_t af[4] = {a0.w[s][0], a1.w[s][0], a0.w[s][1], a1.w[s][1]};
          attn::mma_bf16(c[nt], af, xw[2 * s], xw[2 * s + 1]);
        }
      }
    }
    __syncthreads();  // the buffer is staged again two steps on
  }
  // c[nt][0], c[nt][1]: weight row g, activation rows 8 nt + 2t and + 1; c[nt][2], c[nt][3]: row g + 8.
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int mr = nt * 8 + 2 * t + (i & 1);
      const int64_t row = row0 + g + (i >> 1) * 8;
      if (mr >= m || row >= n) continue;
      if (gridDim.y == 1)
        gemv::store(y + mr * ldy + row, c[nt][i]);
      else
        partial[(static_cast<int64_t>(blockIdx.y) * m + mr) * n + row] = c[nt][i];
    }
}

// y[r, j] = the splits' partial sums added in split order.
template <typename Out>
__global__ void split_sum_kernel(const float* __restrict__ partial, int splits, int m, int64_t n,
                                 Out* __restrict__ y, int64_t ldy) {
  pdl_wait();
  pdl_release();
  const int64_t total = static_cast<int64_t>(m) * n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = 0;
    for (int s = 0; s < splits; ++s) v += partial[s * total + i];
    gemv::store(y + (i / n) * ldy + i % n, v);
  }
}

// The current device's SM count, asked of the driver once per device (launches of
// decode steps outside a CUDA graph come here for every linear).
int sm_count() {
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 132;
  if (device < kDevices && known[device].load(std::memory_order_relaxed) > 0) return known[device].load(std::memory_order_relaxed);
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) return 132;
  if (device < kDevices) known[device].store(sms, std::memory_order_relaxed);
  return sms;
}

template <class Src, typename Out>
cudaError_t launch(const Src& src, int64_t n, int64_t k, const QuantGemmArgs& a, Out* y, cudaStream_t stream) {
  const int64_t ldy = a.ldy ? a.ldy : n;
  const int64_t row_ctas = ceil_div(n, kCtaRows);
  const int64_t steps = ceil_div(k / 32, 4);
  int64_t splits = a.splits ? a.splits : ceil_div(2 * sm_count(), row_ctas);
  splits = std::min<int64_t>({splits, steps, 65535});
  if (!a.workspace || quant_gemm_workspace_bytes(n, a.m, 2) > a.workspace_bytes)
    splits = 1;
  else
    splits = std::min<int64_t>(splits, static_cast<int64_t>(a.workspace_bytes / quant_gemm_workspace_bytes(n, a.m, 1)));
  const dim3 grid(static_cast<unsigned>(row_ctas), static_cast<unsigned>(std::max<int64_t>(splits, 1)));
  auto run = [&](auto nt) {
    return launch_kernel(quant_gemm_kernel<Src, decltype(nt)::value, Out>, grid, kWarps * 32, 0, stream, src,
                         a.x, a.m, y, ldy, a.workspace);
  };
  cudaError_t e = a.m <= 16 ? run(std::integral_constant<int, 2>{})
                  : a.m <= 32 ? run(std::integral_constant<int, 4>{})
                              : run(std::integral_constant<int, 8>{});
  if (e != cudaSuccess || grid.y == 1) return e;
  const int64_t blocks = std::min<int64_t>(ceil_div(a.m * n, 256), 4 * sm_count());
  return launch_kernel(split_sum_kernel<Out>, static_cast<unsigned>(blocks), 256, 0, stream,
                       static_cast<const float*>(a.workspace), static_cast<int>(grid.y), a.m, n, y, ldy);
}

template <typename Out>
cudaError_t launch(const QuantGemmArgs& a, Out* y, cudaStream_t stream) {
  if (a.q8_0.quants) return launch(Q8Source{a.q8_0}, a.q8_0.n, a.q8_0.k, a, y, stream);
  return quant::dispatch_type(a.w.type, [&](auto t) {
    return launch(QuantSource<decltype(t)::value>{a.w}, a.w.n, a.w.k, a, y, stream);
  });
}

}  // namespace

cudaError_t quant_gemm(const QuantGemmArgs& a, cudaStream_t stream) {
  const bool q8 = a.q8_0.quants != nullptr;
  const int64_t n = q8 ? a.q8_0.n : a.w.n, k = q8 ? a.q8_0.k : a.w.k;
  const bool weight_ok = q8 ? a.q8_0.scales && n > 0 && k > 0 && k % kQ8_0Block == 0 : quant_matrix_ok(a.w);
  if (!weight_ok || !a.x || a.m < 1 || a.m > kQuantGemmMaxRows || (a.y_f32 == nullptr) == (a.y_bf16 == nullptr) ||
      (a.ldy != 0 && a.ldy < n) || a.splits < 0 || ceil_div(n, kCtaRows) > INT32_MAX || k / 32 > INT32_MAX)
    return cudaErrorInvalidValue;
  if ((reinterpret_cast<uintptr_t>(a.x) | (q8 ? reinterpret_cast<uintptr_t>(a.q8_0.quants) : 0)) % 16 != 0)
    return cudaErrorMisalignedAddress;
  return a.y_f32 ? launch(a, a.y_f32, stream) : launch(a, a.y_bf16, stream);
}

}  // namespace sy::cuda
