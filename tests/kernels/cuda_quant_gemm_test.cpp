// The quantized GEMM (quant_gemm: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K weights times 9..64 bf16
// rows) against the scalar CPU dequantizer and a double-precision product, on random
// blocks, with and without splitting k, and its argument checks.
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda_quant_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/quant_gemm.cuh"

namespace sy {
namespace {

using namespace sy::testing;
using namespace sy::quant_test;
using bf16 = __nv_bfloat16;

// As the GEMV's (cuda_quant_test.cpp): the weights are expanded to bf16 with the GEMV's
// roundings (Q8_0: d · q rounded once), the products and sums are fp32.
constexpr double kElementBound = 1.0 / 128;
constexpr double kNormBound = kBf16Rounding;

// One weight in any of the five formats, on the device, with its CPU dequantization.
struct Weight {
  std::string name;
  int64_t n, k;
  std::vector<float> dequantized;
  std::unique_ptr<QuantProblem> quant;  // or
  std::unique_ptr<DeviceArray<int8_t>> q8_quants;
  std::unique_ptr<DeviceArray<uint16_t>> q8_scales;

  void set(cuda::QuantGemmArgs& a) const {
    if (quant)
      a.w = quant->matrix();
    else
      a.q8_0 = {q8_quants->get(), q8_scales->as<__half>(), n, k};
  }
};

Weight make_weight(std::mt19937_64& rng, int type, int64_t n, int64_t k) {  // type 4: Q8_0
  Weight w{type < 4 ? name(kTypes[type]) : "q8_0", n, k, {}, nullptr, nullptr, nullptr};
  if (type < 4) {
    w.quant = std::make_unique<QuantProblem>(rng, kTypes[type], n, k);
    w.dequantized = w.quant->dequantized;
  } else {
    Q8Host h = random_q8_0(rng, n, k);
    w.q8_quants = std::make_unique<DeviceArray<int8_t>>(h.quants);
    w.q8_scales = std::make_unique<DeviceArray<uint16_t>>(h.scales);
    w.dequantized = std::move(h.dequantized);
  }
  return w;
}

// Arguments for w times the m rows at x, k split `splits` ways (0: chosen) with the
// workspace given; the output is the caller's to set.
cuda::QuantGemmArgs gemm_args(const Weight& w, const DeviceArray<uint16_t>& x, int m, int splits,
                              const DeviceArray<float>& workspace, size_t workspace_floats) {
  cuda::QuantGemmArgs a;
  w.set(a);
  a.x = x.as<bf16>();
  a.m = m;
  a.splits = splits;
  a.workspace = workspace.get();
  a.workspace_bytes = workspace_floats * sizeof(float);
  return a;
}

int64_t block_values(int type) { return type < 4 ? cuda::quant_layout(kTypes[type]).block_values : 32; }

// Every format and row count, k split or not: fp32 and bf16 outputs within the
// expansion's bounds of the exact product of the CPU's weights.
TEST(CudaQuantGemm, MatchesTheCpuDequantizerInDouble) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  constexpr size_t kWorkspaceFloats = size_t{8} << 20;
  DeviceArray<float> workspace(kWorkspaceFloats);
  for (int type = 0; type < 5; ++type) {
    const int64_t bv = block_values(type);
    double worst = 0;
    // n: one row, fewer than a CTA's 128, not a multiple of 128, many; k: one block, k
    // not a multiple of the 128-value step (32-value blocks), several steps.
    std::vector<std::pair<int64_t, int64_t>> shapes = {{1, bv}, {37, 3 * bv}, {1003, 4096 + bv}, {300, 2 * 256}};
    for (const auto& [n, k] : shapes) {
      const Weight w = make_weight(rng, type, n, k);
      for (const int m : {9, 16, 17, 33, 64}) {
        const std::vector<float> x = random_x(rng, m, k);
        const Product want = reference_product(x, w.dequantized, m, n, k);
        DeviceArray<uint16_t> d_x(to_bf16(x)), d_y16(static_cast<size_t>(m * n));
        DeviceArray<float> d_y32(static_cast<size_t>(m * n));
        for (const int splits : {1, 0, 3}) {
          d_y16.poison();
          d_y32.poison();
          cuda::QuantGemmArgs a = gemm_args(w, d_x, m, splits, workspace, kWorkspaceFloats);
          a.y_f32 = d_y32.get();
          SY_CUDA_OK(cuda::quant_gemm(a, nullptr));
          a.y_f32 = nullptr;
          a.y_bf16 = d_y16.as<bf16>();
          SY_CUDA_OK(cuda::quant_gemm(a, nullptr));
          const std::vector<float> y32 = d_y32.download();
          const double e32 = worst_element(y32, want);
          worst = std::max(worst, e32);
          const std::string at = w.name + " m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                                 std::to_string(k) + " splits " + std::to_string(splits);
          EXPECT_LT(e32, kElementBound) << at;
          EXPECT_LT(worst_element(from_bf16(d_y16.download()), want), kElementBound + kBf16Rounding / 2) << at;
          if (n * m >= 1000) {
            EXPECT_LT(relative_error(y32, want.y), kNormBound) << at;
          }
        }
      }
    }
    std::printf("%s: quantized GEMM error at worst %.3g of sum |x||w|\n", type < 4 ? name(kTypes[type]).c_str() : "q8_0",
                worst);
  }
}

// Splitting k changes only the order of fp32 sums: within a few fp32 roundings of the
// unsplit result; and each split writes only its n columns of a wider output.
TEST(CudaQuantGemm, SplitsReorderSumsAndKeepToTheirColumns) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t n = 200, k = 4096, ldy = 203;
  const int m = 40;
  const Weight w = make_weight(rng, 1, n, k);  // Q4_K
  const std::vector<float> x = random_x(rng, m, k);
  DeviceArray<uint16_t> d_x(to_bf16(x));
  const size_t workspace_floats = static_cast<size_t>(n * m * 32);
  DeviceArray<float> workspace(workspace_floats), d_y(static_cast<size_t>(m * ldy));
  std::vector<std::vector<float>> got;
  for (const int splits : {1, 2, 7, 32}) {
    d_y.poison();
    cuda::QuantGemmArgs a = gemm_args(w, d_x, m, splits, workspace, workspace_floats);
    a.y_f32 = d_y.get();
    a.ldy = ldy;
    SY_CUDA_OK(cuda::quant_gemm(a, nullptr));
    const std::vector<float> y = d_y.download();
    std::vector<float> mine;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < ldy; ++j) {
        if (j < n)
          mine.push_back(y[r * ldy + j]);
        else
          EXPECT_TRUE(std::isnan(y[r * ldy + j])) << "splits " << splits << " row " << r << " col " << j;
      }
    got.push_back(std::move(mine));
  }
  for (size_t i = 1; i < got.size(); ++i) EXPECT_LT(relative_error(got[i], got[0]), 1e-5) << "arm " << i;
  EXPECT_LT(relative_error(got[0], reference(x, w.dequantized, m, n, k)), kNormBound);
}

TEST(CudaQuantGemm, RejectsBadArguments) {
  SY_SKIP_WITHOUT_CUDA();
  DeviceArray<uint8_t> body(4096);
  DeviceArray<uint16_t> x(64 * 256);
  DeviceArray<float> y(64 * 4);
  cuda::QuantGemmArgs a;
  a.w = {cuda::QuantType::kQ4_K, body.get(), nullptr, 2, 256};
  a.x = x.as<bf16>();
  a.m = 9;
  a.y_f32 = y.get();
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const int m : {0, cuda::kQuantGemmMaxRows + 1}) {
    a.m = m;
    EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue) << "m " << m;
  }
  a.m = 9;
  a.ldy = 1;  // narrower than n
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue);
  a.ldy = 0;
  a.splits = -1;
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue);
  a.splits = 0;
  a.y_bf16 = x.as<bf16>();  // two outputs
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue);
  a.y_bf16 = nullptr;
  a.w.k = 128;  // not whole 256-blocks
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue);
  a.w.k = 256;
  a.x = x.as<bf16>() + 1;
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorMisalignedAddress);
  a.x = x.as<bf16>();
  a.w = {};
  a.q8_0 = {reinterpret_cast<const int8_t*>(body.get()), nullptr, 2, 64};  // no scales
  EXPECT_EQ(cuda::quant_gemm(a, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace sy
