// The cuBLASLt BF16 GEMM, the bf16 GEMV and the Q8_0 products against OpenBLAS sgemm
// (through cpu::matmul_nt) on the same bf16-rounded or dequantized inputs.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_quant_util.h"
#include "cuda_test_util.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/q8_0_dequant.cuh"
#include "kernels/cuda/silu_mul.cuh"
#include "worker/model/convert.h"

namespace sy {
namespace {

using namespace sy::testing;
using bf16 = __nv_bfloat16;
using quant_test::random_q8_0;
using quant_test::Q8Host;

// fp32 accumulation over k terms differs from OpenBLAS's order by about k · 2^-24
// relative at worst; 1e-5 leaves room for k in the thousands.
constexpr double kF32Tolerance = 1e-5;

struct Shape {
  int64_t m, n, k;
};

std::vector<float> rounded_to_bf16(std::vector<float> v) {
  for (auto& x : v) x = round_bf16(x);
  return v;
}

// Random bf16 x [m, k] and w [n, k] (as floats), sgemm's x · wᵀ, and both on the device.
struct Bf16Problem {
  Bf16Problem(std::mt19937_64& rng, const Shape& s)
      : x(rounded_to_bf16(normal_floats(rng, s.m * s.k))),
        w(rounded_to_bf16(normal_floats(rng, s.n * s.k, 0.05f))),
        want(s.m * s.n),
        d_x(to_bf16(x)),
        d_w(to_bf16(w)) {
    cpu::matmul_nt(x.data(), w.data(), want.data(), s.m, s.n, s.k);
  }
  std::vector<float> x, w, want;
  DeviceArray<uint16_t> d_x, d_w;
};

TEST(CudaGemmBf16, MatchesSgemmOnBf16Inputs) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  cuda::GemmBf16 gemm;
  SY_CUDA_OK(gemm.init());
  for (const Shape s :
       {Shape{1, 4096, 4096}, Shape{1, 151680, 32}, Shape{3, 1000, 64}, Shape{17, 333, 96},
        Shape{64, 1024, 512}, Shape{200, 768, 1024}, Shape{5, 77, 37}, Shape{1, 7, 3}}) {
    const Bf16Problem p(rng, s);
    DeviceArray<uint16_t> d_y16(s.m * s.n);
    DeviceArray<float> d_y32(s.m * s.n);
    d_y16.poison();
    d_y32.poison();
    SY_CUDA_OK(gemm.matmul_nt(p.d_x.as<bf16>(), p.d_w.as<bf16>(), d_y32.get(), cuda::GemmOut::kF32,
                              s.m, s.n, s.k, nullptr));
    SY_CUDA_OK(gemm.matmul_nt(p.d_x.as<bf16>(), p.d_w.as<bf16>(), d_y16.get(), cuda::GemmOut::kBF16,
                              s.m, s.n, s.k, nullptr));
    EXPECT_LT(relative_error(d_y32.download(), p.want), kF32Tolerance)
        << s.m << "x" << s.n << "x" << s.k;
    EXPECT_LT(relative_error(from_bf16(d_y16.download()), p.want), kBf16Rounding)
        << s.m << "x" << s.n << "x" << s.k;
  }
  // The same shape again reuses its cached plan.
  const size_t plans = gemm.cached_plans();
  DeviceArray<uint16_t> x(64), w(64 * 64);
  DeviceArray<float> y(64);
  SY_CUDA_OK(
      gemm.matmul_nt(x.as<bf16>(), w.as<bf16>(), y.get(), cuda::GemmOut::kF32, 1, 64, 64, nullptr));
  SY_CUDA_OK(
      gemm.matmul_nt(x.as<bf16>(), w.as<bf16>(), y.get(), cuda::GemmOut::kF32, 1, 64, 64, nullptr));
  EXPECT_EQ(gemm.cached_plans(), plans + 1);
}

// With a fixed algorithm (batch-invariant numerics) the first rows' products are the
// same bits whatever the row count of the call, through GemmBf16 and through Linear in
// batch-invariant mode (no GEMV), and still match sgemm.
TEST(CudaGemmBf16, FixedAlgorithmRowsAreTheSameBitsForEveryRowCount) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  cuda::Linear linear;
  SY_CUDA_OK(linear.init(0));
  linear.set_gemv_max_rows(8);
  linear.set_batch_invariant(256);
  // Llama-3-8B's projections (QKV, O, gate/up, down) and a small odd one.
  for (const auto [n, k] : {std::pair<int64_t, int64_t>{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {333, 96}}) {
    constexpr int64_t kMaxRows = 2048;
    const std::vector<float> x = rounded_to_bf16(normal_floats(rng, kMaxRows * k));
    const std::vector<float> wf = rounded_to_bf16(normal_floats(rng, n * k, 0.05f));
    std::vector<float> want(static_cast<size_t>(4 * n));  // sgemm of the first four rows
    cpu::matmul_nt(x.data(), wf.data(), want.data(), 4, n, k);
    const DeviceArray<uint16_t> d_x(to_bf16(x)), d_w(to_bf16(wf));
    cuda::LinearWeight w;
    w.n = n;
    w.k = k;
    w.bf16 = d_w.as<bf16>();
    std::vector<float> first;  // the first rows of the first call (4 rows)
    for (const int64_t m : {int64_t{4}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{16}, int64_t{64}, int64_t{257},
                            int64_t{1000}, kMaxRows}) {
      SCOPED_TRACE(std::to_string(m) + " rows");
      DeviceArray<float> y(static_cast<size_t>(m * n));
      y.poison();
      SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), m, y.get(), cuda::GemmOut::kF32, nullptr));
      const std::vector<float> got = y.download();
      const int64_t rows = std::min<int64_t>(m, 4);
      if (first.empty()) {
        first.assign(got.begin(), got.begin() + rows * n);
        // kF32Tolerance is for k up to ~4K; the rounding error of a sum grows with k.
        EXPECT_LT(relative_error(first, want), kF32Tolerance * std::max<double>(1.0, static_cast<double>(k) / 4096))
            << n << "x" << k;
        continue;
      }
      size_t differ = 0;
      for (int64_t i = 0; i < rows * n; ++i)
        if (std::memcmp(&got[static_cast<size_t>(i)], &first[static_cast<size_t>(i)], sizeof(float)) != 0) ++differ;
      EXPECT_EQ(differ, 0u) << n << "x" << k << ": " << differ << " of the first " << rows * n
                            << " outputs differ between a call of " << m << " rows and one of 4";
    }
  }
}

// The small-batch GEMV directly and through Linear (which routes up to gemv_max_rows
// rows to it and falls back to cuBLASLt for shapes it does not take).
TEST(CudaGemvBf16, MatchesSgemmOnBf16Inputs) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  cuda::Linear linear;
  SY_CUDA_OK(linear.init(0));
  linear.set_gemv_max_rows(cuda::kGemvBf16MaxRows);
  // k: whole unrolled warp steps (4096, 14336), a tail of single chunks (4096 + 24), less
  // than one warp step (40), one chunk (8), and 37 (not a multiple of 8: cuBLASLt).
  for (const Shape s : {Shape{1, 4096, 4096}, Shape{2, 1000, 4096 + 24}, Shape{3, 333, 14336},
                        Shape{4, 6144, 1024}, Shape{5, 77, 40}, Shape{6, 9, 8}, Shape{7, 130, 512},
                        Shape{8, 1024, 2048}, Shape{1, 32000, 256}, Shape{2, 50, 37}}) {
    const Bf16Problem p(rng, s);
    DeviceArray<uint16_t> d_y16(s.m * s.n);
    DeviceArray<float> d_y32(s.m * s.n), d_lin(s.m * s.n);
    const bool takes = cuda::gemv_bf16_supports(p.d_w.as<bf16>(), s.n, s.k, p.d_x.as<bf16>(),
                                                static_cast<int>(s.m));
    EXPECT_EQ(takes, s.k % 8 == 0) << s.m << "x" << s.n << "x" << s.k;
    d_y16.poison();
    d_y32.poison();
    d_lin.poison();
    cuda::LinearWeight lw;
    lw.n = s.n;
    lw.k = s.k;
    lw.bf16 = p.d_w.as<bf16>();
    SY_CUDA_OK(linear.run(lw, p.d_x.as<bf16>(), s.m, d_lin.get(), cuda::GemmOut::kF32, nullptr));
    EXPECT_LT(relative_error(d_lin.download(), p.want), kF32Tolerance)
        << "Linear " << s.m << "x" << s.n << "x" << s.k;
    if (!takes) continue;
    cuda::GemvBf16Args a;
    a.w = p.d_w.as<bf16>();
    a.n = s.n;
    a.k = s.k;
    a.x = p.d_x.as<bf16>();
    a.m = static_cast<int>(s.m);
    a.y_f32 = d_y32.get();
    SY_CUDA_OK(cuda::gemv_bf16(a, nullptr));
    a.y_f32 = nullptr;
    a.y_bf16 = d_y16.as<bf16>();
    SY_CUDA_OK(cuda::gemv_bf16(a, nullptr));
    EXPECT_LT(relative_error(d_y32.download(), p.want), kF32Tolerance)
        << s.m << "x" << s.n << "x" << s.k;
    EXPECT_LT(relative_error(from_bf16(d_y16.download()), p.want), kBf16Rounding)
        << s.m << "x" << s.n << "x" << s.k;
  }
}

// The one-row variants with 2 and 4 warps per weight row (segments of k added in order):
// within fp32 rounding of sgemm and of the one-warp GEMV, shorter-than-a-step segments and
// partial last batches included; k not a multiple of 8 · split is refused.
TEST(CudaGemvBf16, SplitRowsMatchSgemm) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (const Shape s : {Shape{1, 1000, 4096}, Shape{1, 333, 14336}, Shape{1, 77, 4096 + 32},
                        Shape{1, 9, 64}, Shape{1, 130, 32}}) {
    const Bf16Problem p(rng, s);
    std::vector<float> one_warp;
    for (const int split : {1, 2, 4}) {
      DeviceArray<float> y(s.m * s.n);
      y.poison();
      cuda::GemvBf16Args a;
      a.w = p.d_w.as<bf16>();
      a.n = s.n;
      a.k = s.k;
      a.x = p.d_x.as<bf16>();
      a.m = 1;
      a.y_f32 = y.get();
      a.split = split;
      SY_CUDA_OK(cuda::gemv_bf16(a, nullptr));
      const std::vector<float> got = y.download();
      EXPECT_LT(relative_error(got, p.want), kF32Tolerance)
          << "split " << split << ", " << s.n << "x" << s.k;
      if (split == 1) one_warp = got;
      EXPECT_LT(relative_error(got, one_warp), 1e-5)
          << "split " << split << ", " << s.n << "x" << s.k;
    }
  }
}

TEST(CudaGemvBf16, RejectsBadShapes) {
  SY_SKIP_WITHOUT_CUDA();
  DeviceArray<uint16_t> w(64 * 16), x(9 * 64);
  DeviceArray<float> y(9 * 64);
  cuda::GemvBf16Args a;
  a.w = w.as<bf16>();
  a.n = 16;
  a.k = 60;  // not a multiple of 8
  a.x = x.as<bf16>();
  a.m = 1;
  a.y_f32 = y.get();
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.k = 64;
  a.m = cuda::kGemvBf16MaxRows + 1;
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.m = 1;
  a.x = x.as<bf16>() + 1;  // not 16-byte aligned
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.x = x.as<bf16>();
  a.y_bf16 = w.as<bf16>();  // two outputs
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.y_bf16 = nullptr;
  a.split = 3;  // not a variant
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.split = 4;
  a.k = 48;  // segments of 12: not a multiple of 8
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
  a.k = 64;
  a.m = 2;  // one row only
  EXPECT_EQ(cuda::gemv_bf16(a, nullptr), cudaErrorInvalidValue);
}

TEST(CudaQ8_0, GemvAndDequantizedGemmMatchSgemm) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  cuda::Linear linear;
  const int64_t n = 1000,
                k = 4096 + 96;  // k: a whole number of 32-blocks, not of the 512-wide warp step
  SY_CUDA_OK(linear.init(static_cast<size_t>(n * k)));
  const Q8Host q = random_q8_0(rng, n, k);
  DeviceArray<int8_t> d_q(q.quants);
  DeviceArray<uint16_t> d_s(q.scales);
  cuda::LinearWeight w;
  w.n = n;
  w.k = k;
  w.q8_0 = {d_q.get(), d_s.as<__half>(), n, k};
  for (int64_t m : {1, 2, 5, 8, 9, 40, 64, 80}) {
    const std::vector<float> x = rounded_to_bf16(normal_floats(rng, m * k));
    std::vector<float> want(m * n);
    cpu::matmul_nt(x.data(), q.dequantized.data(), want.data(), m, n, k);
    DeviceArray<uint16_t> d_x(to_bf16(x)), d_y16(m * n);
    DeviceArray<float> d_y32(m * n);
    d_y16.poison();
    d_y32.poison();
    SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), m, d_y32.get(), cuda::GemmOut::kF32, nullptr));
    SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), m, d_y16.get(), cuda::GemmOut::kBF16, nullptr));
    // Up to 8 rows the GEMV multiplies the exact weights; past that (the quantized GEMM to
    // 64 rows, then the expansion for cuBLASLt) the weights are rounded to bf16 first (at
    // most 2^-8 each, errors that mostly cancel in the sums).
    const double tol = m <= cuda::kQ8_0GemvMaxRows ? kF32Tolerance : kBf16Rounding;
    EXPECT_LT(relative_error(d_y32.download(), want), tol) << "m " << m;
    EXPECT_LT(relative_error(from_bf16(d_y16.download()), want), tol + kBf16Rounding) << "m " << m;
  }
}

TEST(CudaQ8_0, DequantizeIsScaleTimesQuantRoundedToBf16) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t n = 37, k = 320;
  const Q8Host q = random_q8_0(rng, n, k);
  DeviceArray<int8_t> d_q(q.quants);
  DeviceArray<uint16_t> d_s(q.scales), d_out(n * k);
  d_out.poison();
  SY_CUDA_OK(
      cuda::q8_0_dequantize({{d_q.get(), d_s.as<__half>(), n, k}, d_out.as<bf16>()}, nullptr));
  const std::vector<uint16_t> got = d_out.download();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], f32_to_bf16(q.dequantized[i])) << i;
}

TEST(CudaQ8_0, RejectsBadShapes) {
  SY_SKIP_WITHOUT_CUDA();
  DeviceArray<int8_t> qd(64);
  DeviceArray<uint16_t> sd(2), xd(64);
  DeviceArray<float> yd(8);
  cuda::Q8_0GemvArgs a;
  a.w = {qd.get(), sd.as<__half>(), 1, 48};  // k not a multiple of 32
  a.x = xd.as<bf16>();
  a.m = 1;
  a.y_f32 = yd.get();
  EXPECT_EQ(cuda::q8_0_gemv(a, nullptr), cudaErrorInvalidValue);
  a.w.k = 64;
  a.m = 9;  // more rows than the GEMV takes
  EXPECT_EQ(cuda::q8_0_gemv(a, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace sy
