// The Q4_0 / Q4_K / Q5_K / Q6_K kernels (quant_gemv, quant_dequant, and Linear over a
// weight whose parts are in different formats) against the scalar CPU dequantizer
// (worker/model/quants.h through to_f32) and a double-precision product, on random
// blocks: random bytes for every quant and packed scale, random sane fp16 scales.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "cuda_quant_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/quant_dequant.cuh"
#include "kernels/cuda/quant_gemv.cuh"
#include "worker/model/convert.h"

namespace sy {
namespace {

using namespace sy::testing;
using bf16 = __nv_bfloat16;
using cuda::QuantType;
using namespace sy::quant_test;

// The GEMV expands weights to bf16 as a · q + b with a and b rounded to bf16 and one
// rounding of the result (2^-9 relative each), then sums in fp32. So each output is off
// by at most about 3 · 2^-9 of Σ |x| · |w| over its row (a Q4_K weight's terms a · q and
// b may exceed |w|; the bound below leaves room for that), and over many outputs the
// norm of the error stays near 2^-8 of the norm of y.
constexpr double kGemvElementBound = 1.0 / 128;
constexpr double kGemvNormBound = kBf16Rounding;

TEST(CudaQuant, GemvMatchesTheCpuDequantizerInDouble) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (const QuantType t : kTypes) {
    double worst = 0, worst_norm = 0;
    const int64_t bv = cuda::quant_layout(t).block_values;
    std::uniform_int_distribution<int64_t> rows(1, 300), blocks(1, 4096 / bv + 2);
    // n not a multiple of the 16 rows a CTA takes, up to a large vocabulary-like n; k
    // from one block to more than one pass of the CTA (8 warps × 4 chunks of 32 values)
    // and not a multiple of the 128 values of 4 chunks.
    std::vector<std::pair<int64_t, int64_t>> shapes = {
        {1, bv}, {37, 3 * bv}, {1003, 4096 + bv}, {8195, 2 * bv + (bv == 32 ? 64 : 0)}};
    for (int i = 0; i < 3; ++i) shapes.push_back({rows(rng), blocks(rng) * bv});
    for (const auto& [n, k] : shapes) {
      const QuantProblem w(rng, t, n, k);
      for (int m = 1; m <= cuda::kQuantGemvMaxRows; ++m) {
        const std::vector<float> x = random_x(rng, m, k);
        const Product want = reference_product(x, w.dequantized, m, n, k);
        DeviceArray<uint16_t> d_x(to_bf16(x)), d_y16(static_cast<size_t>(m * n));
        DeviceArray<float> d_y32(static_cast<size_t>(m * n));
        d_y16.poison();
        d_y32.poison();
        cuda::QuantGemvArgs a;
        a.w = w.matrix();
        a.x = d_x.as<bf16>();
        a.m = m;
        a.y_f32 = d_y32.get();
        SY_CUDA_OK(cuda::quant_gemv(a, nullptr));
        a.y_f32 = nullptr;
        a.y_bf16 = d_y16.as<bf16>();
        SY_CUDA_OK(cuda::quant_gemv(a, nullptr));
        const std::vector<float> y32 = d_y32.download(), y16 = from_bf16(d_y16.download());
        // The 16-warp arm (QuantGemvArgs::warps) sums the same products in another order.
        d_y32.poison();
        a.y_bf16 = nullptr;
        a.y_f32 = d_y32.get();
        a.warps = 16;
        SY_CUDA_OK(cuda::quant_gemv(a, nullptr));
        EXPECT_LT(worst_element(d_y32.download(), want), kGemvElementBound)
            << name(t) << " 16 warps, m " << m << " n " << n << " k " << k;
        const double e32 = worst_element(y32, want);
        worst = std::max(worst, e32);
        EXPECT_LT(e32, kGemvElementBound) << name(t) << " m " << m << " n " << n << " k " << k;
        // The bf16 output adds one rounding of y (2^-9 of |y| ≤ Σ |x| · |w|).
        EXPECT_LT(worst_element(y16, want), kGemvElementBound + kBf16Rounding / 2)
            << name(t) << " m " << m << " n " << n << " k " << k;
        if (n * m >= 1000) {  // enough outputs for the norm to average the roundings
          const double norm = relative_error(y32, want.y);
          worst_norm = std::max(worst_norm, norm);
          EXPECT_LT(norm, kGemvNormBound) << name(t) << " m " << m << " n " << n << " k " << k;
        }
      }
    }
    std::printf("%s: GEMV error at worst %.3g of Σ|x||w|, %.3g of |y| in the norm\n",
                name(t).c_str(), worst, worst_norm);
  }
}

// A row stride wider than n: each row's n outputs are written, the columns past them
// stay as they were (NaN here).
TEST(CudaQuant, GemvWritesOnlyItsColumnsOfAWiderOutput) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t n = 45, k = 512, ldy = 50, m = 3;
  const QuantProblem w(rng, QuantType::kQ5_K, n, k);
  const std::vector<float> x = random_x(rng, m, k);
  const std::vector<float> want = reference(x, w.dequantized, m, n, k);
  DeviceArray<uint16_t> d_x(to_bf16(x));
  DeviceArray<float> d_y(static_cast<size_t>(m * ldy));
  d_y.poison();
  cuda::QuantGemvArgs a;
  a.w = w.matrix();
  a.x = d_x.as<bf16>();
  a.m = m;
  a.y_f32 = d_y.get();
  a.ldy = ldy;
  SY_CUDA_OK(cuda::quant_gemv(a, nullptr));
  const std::vector<float> y = d_y.download();
  std::vector<float> got;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < ldy; ++j) {
      if (j < n)
        got.push_back(y[r * ldy + j]);
      else
        EXPECT_TRUE(std::isnan(y[r * ldy + j])) << "row " << r << " col " << j;
    }
  EXPECT_LT(relative_error(got, want), kGemvNormBound * 2);
}

// The expansion to bf16: the CPU dequantizer's value rounded to bf16. Q4_0 and Q6_K
// compute the same fp32 value as the CPU (one rounding of d·(q − offset)) and must match
// exactly (the sign of a zero aside); Q4_K/Q5_K fuse d·sc·q − dmin·m into one rounding where the CPU takes two,
// so a value may differ by its fp32 rounding (relative to the larger term) before the
// bf16 rounding.
TEST(CudaQuant, DequantizeIsTheCpuValueRoundedToBf16) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (const QuantType t : kTypes) {
    const int64_t bv = cuda::quant_layout(t).block_values;
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 5 * bv}, {1, bv}, {300, 4096}}) {
      const QuantProblem w(rng, t, n, k);
      DeviceArray<uint16_t> d_out(static_cast<size_t>(n * k));
      d_out.poison();
      SY_CUDA_OK(cuda::quant_dequantize({w.matrix(), d_out.as<bf16>()}, nullptr));
      const std::vector<uint16_t> got = d_out.download();
      const bool exact = t == QuantType::kQ4_0 || t == QuantType::kQ6_K;
      float row_max = 0;
      for (float v : w.dequantized) row_max = std::max(row_max, std::fabs(v));
      int bad = 0;
      for (size_t i = 0; i < got.size() && bad < 5; ++i) {
        const float g = bf16_to_f32(got[i]), ref = w.dequantized[i];
        const bool ok = exact ? g == bf16_to_f32(f32_to_bf16(ref))  // 0 == -0: a·(32 − 32)
                              : std::isfinite(g) && std::fabs(g - ref) <=
                                                        std::fabs(ref) / 256 + row_max * 1e-6f;
        if (!ok) {
          ++bad;
          ADD_FAILURE() << name(t) << " n " << n << " k " << k << " element " << i << ": " << g
                        << " vs " << ref;
        }
      }
    }
  }
}

// A fused weight in three formats (as a Q4_K_M file's Q, K in Q4_K and V in Q6_K):
// Linear runs each part's GEMV into its columns up to 8 rows, its quantized GEMM up to
// 64, and past that expands the parts into one bf16 scratch for one GEMM.
TEST(CudaQuant, LinearOverPartsInDifferentFormats) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t k = 1024 + 256;
  const QuantProblem parts[] = {{rng, QuantType::kQ4_K, 130, k},
                                {rng, QuantType::kQ6_K, 33, k},
                                {rng, QuantType::kQ4_0, 64, k}};
  cuda::LinearWeight w;
  w.k = k;
  std::vector<float> dequantized;
  for (const QuantProblem& p : parts) {
    w.quant[w.quant_parts++] = p.matrix();
    w.n += p.n;
    dequantized.insert(dequantized.end(), p.dequantized.begin(), p.dequantized.end());
  }
  cuda::Linear linear;
  SY_CUDA_OK(linear.init(static_cast<size_t>(w.n * k)));
  for (int64_t m : {1, 4, 8, 9, 40, 64, 65, 100}) {
    const std::vector<float> x = random_x(rng, m, k);
    const std::vector<float> want = reference(x, dequantized, m, w.n, k);
    DeviceArray<uint16_t> d_x(to_bf16(x)), d_y16(static_cast<size_t>(m * w.n));
    DeviceArray<float> d_y32(static_cast<size_t>(m * w.n));
    d_y16.poison();
    d_y32.poison();
    SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), m, d_y32.get(), cuda::GemmOut::kF32, nullptr));
    SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), m, d_y16.get(), cuda::GemmOut::kBF16, nullptr));
    // Up to 64 rows the GEMV's expansion (kGemvNormBound), past them the fp32 weights
    // rounded to bf16 once: 2^-8 of |y| in the norm either way.
    const double tol = kBf16Rounding;
    EXPECT_LT(relative_error(d_y32.download(), want), tol) << "m " << m;
    EXPECT_LT(relative_error(from_bf16(d_y16.download()), want), tol + kBf16Rounding) << "m " << m;
  }
  // Batch-invariant numerics take the expansion and the GEMM at every row count.
  linear.set_batch_invariant(64);
  const std::vector<float> x = random_x(rng, 1, k);
  DeviceArray<uint16_t> d_x(to_bf16(x));
  DeviceArray<float> d_y(static_cast<size_t>(w.n));
  d_y.poison();
  SY_CUDA_OK(linear.run(w, d_x.as<bf16>(), 1, d_y.get(), cuda::GemmOut::kF32, nullptr));
  EXPECT_LT(relative_error(d_y.download(), reference(x, dequantized, 1, w.n, k)), kBf16Rounding);
}

TEST(CudaQuant, RejectsBadShapes) {
  SY_SKIP_WITHOUT_CUDA();
  DeviceArray<uint8_t> body(4096);
  DeviceArray<uint16_t> d(64), x(1024), out(4096);
  DeviceArray<float> y(64);
  cuda::QuantGemvArgs a;
  a.w = {QuantType::kQ4_K, body.get(), nullptr, 2, 128};  // k not whole 256-blocks
  a.x = x.as<bf16>();
  a.m = 1;
  a.y_f32 = y.get();
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::quant_dequantize({a.w, out.as<bf16>()}, nullptr), cudaErrorInvalidValue);
  a.w.k = 256;
  a.m = cuda::kQuantGemvMaxRows + 1;
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  a.m = 1;
  a.ldy = 1;  // narrower than n
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  a.ldy = 0;
  a.w.type = QuantType::kQ6_K;  // needs its scale plane
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  a.w.d = d.as<__half>();
  a.w.body = body.get() + 8;  // bodies must be 16-byte aligned
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  a.w.body = body.get();
  a.warps = 12;  // 8 or 16 only
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaErrorInvalidValue);
  a.warps = 0;
  EXPECT_EQ(cuda::quant_gemv(a, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace sy
