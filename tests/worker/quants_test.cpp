// The block formats' dequantizers on hand-built blocks (every value computed in the test
// from the layout as ggml documents it, with a few spelled out as numbers), and the
// quantizers' round trip on random rows within the bounds docs/NUMERICS.md reasons.
#include "worker/model/quants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "common/half.h"
#include "worker/model/convert.h"

namespace sy {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Dequantizes through to_f32 (the dispatch every loader uses) into a poisoned buffer.
template <typename Block>
std::vector<float> dequantized(DType t, const std::vector<Block>& blocks) {
  const int64_t n = static_cast<int64_t>(blocks.size()) * dtype_block_values(t);
  std::vector<float> y(static_cast<size_t>(n), kNaN);
  to_f32(t, blocks.data(), y.data(), n);
  return y;
}

// Sub-block scales and mins with high bits set in sub-blocks 4-7, and their packed bytes
// worked out by hand from the layout.
constexpr uint8_t kScales[8] = {1, 2, 3, 4, 33, 47, 63, 17};
constexpr uint8_t kMins[8] = {5, 0, 63, 9, 20, 36, 1, 48};
constexpr uint8_t kPacked[12] = {129, 130, 195, 68, 69, 128, 63, 201, 65, 79, 31, 1};

TEST(Quants, KScalesPackAndUnpack) {
  uint8_t packed[12];
  pack_k_scales(kScales, kMins, packed);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(packed[i], kPacked[i]) << i;
  uint8_t sc[8], mn[8];
  unpack_k_scales(kPacked, sc, mn);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(sc[i], kScales[i]) << i;
    EXPECT_EQ(mn[i], kMins[i]) << i;
  }
}

TEST(Quants, Q4_0DequantizesHandBuiltBlocks) {
  // Two blocks: d = 0.5 and d = -2; byte j holds q = j (element j) and 15 - j (element j + 16).
  std::vector<BlockQ4_0> b(2);
  b[0].d = 0x3800;  // 0.5
  b[1].d = 0xC000;  // -2
  for (auto& blk : b)
    for (int j = 0; j < 16; ++j) blk.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequantized(DType::kQ4_0, b);
  for (int blk = 0; blk < 2; ++blk) {
    const float d = blk == 0 ? 0.5f : -2.0f;
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[32 * blk + j], static_cast<float>(j - 8) * d);
      EXPECT_EQ(y[32 * blk + 16 + j], static_cast<float>(7 - j) * d);
    }
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[16], 3.5f);
  EXPECT_EQ(y[32 + 31], 16.0f);  // q = 0 at d = -2
}

// Level of element i in the K-quant test blocks.
int q4_level(int i) { return (i * 7 + 3) % 16; }
int q5_level(int i) { return (i * 11 + 5) % 32; }
int q6_level(int i) { return (i * 13 + 7) % 64; }

TEST(Quants, Q4_KDequantizesAHandBuiltBlock) {
  std::vector<BlockQ4_K> b(2);
  for (int blk = 0; blk < 2; ++blk) {
    b[blk].d = 0x3400;     // 0.25
    b[blk].dmin = 0x3000;  // 0.125
    std::copy(kPacked, kPacked + 12, b[blk].scales);
    // 32 bytes per pair of sub-blocks: element 64p + l in the low nibble of byte 32p + l,
    // element 64p + 32 + l in its high nibble.
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l) b[blk].qs[32 * p + l] = static_cast<uint8_t>(q4_level(64 * p + l) | (q4_level(64 * p + 32 + l) << 4));
  }
  b[1].d = 0x3800;  // 0.5: the second block reads its own scale
  const auto y = dequantized(DType::kQ4_K, b);
  for (int blk = 0; blk < 2; ++blk)
    for (int i = 0; i < 256; ++i) {
      const float d = blk == 0 ? 0.25f : 0.5f;
      ASSERT_EQ(y[256 * blk + i], d * kScales[i / 32] * static_cast<float>(q4_level(i)) - 0.125f * kMins[i / 32]) << blk << " " << i;
    }
  EXPECT_EQ(y[0], 0.125f);    // 0.25 * 1 * 3 - 0.125 * 5
  EXPECT_EQ(y[130], 5.75f);   // sub-block 4: 0.25 * 33 * 1 - 0.125 * 20
  EXPECT_EQ(y[255], 45.0f);   // sub-block 7: 0.25 * 17 * 12 - 0.125 * 48
}

TEST(Quants, Q5_KDequantizesAHandBuiltBlock) {
  std::vector<BlockQ5_K> b(1);
  b[0].d = 0x3400;
  b[0].dmin = 0x3000;
  std::copy(kPacked, kPacked + 12, b[0].scales);
  std::fill(std::begin(b[0].qh), std::end(b[0].qh), 0);
  // Low nibbles as Q4_K; the fifth bit of element 32 s + l is bit s of qh[l].
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l) {
      const int q0 = q5_level(64 * p + l), q1 = q5_level(64 * p + 32 + l);
      b[0].qs[32 * p + l] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
      b[0].qh[l] |= static_cast<uint8_t>(((q0 >> 4) << (2 * p)) | ((q1 >> 4) << (2 * p + 1)));
    }
  const auto y = dequantized(DType::kQ5_K, b);
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(y[i], 0.25f * kScales[i / 32] * static_cast<float>(q5_level(i)) - 0.125f * kMins[i / 32]) << i;
  EXPECT_EQ(y[0], 0.625f);     // 0.25 * 1 * 5 - 0.125 * 5
  EXPECT_EQ(y[200], 456.625f);  // sub-block 6: 0.25 * 63 * 29 - 0.125 * 1
  EXPECT_EQ(y[255], 104.5f);    // 0.25 * 17 * 26 - 0.125 * 48
}

TEST(Quants, Q6_KDequantizesAHandBuiltBlock) {
  const int8_t scales[16] = {1, -2, 3, -4, 5, -6, 7, -8, 127, -128, 10, -10, 20, -20, 64, -1};
  std::vector<BlockQ6_K> b(1);
  b[0].d = 0x3800;  // 0.5
  std::copy(scales, scales + 16, b[0].scales);
  std::fill(std::begin(b[0].ql), std::end(b[0].ql), 0);
  std::fill(std::begin(b[0].qh), std::end(b[0].qh), 0);
  // Element 128 h + 32 k + l: low nibble in ql[64 h + l] (k = 0: low, k = 2: high) or
  // ql[64 h + 32 + l] (k = 1, 3); top two bits at bit 2k of qh[32 h + l].
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = (i % 128) / 32, l = i % 32, q = q6_level(i);
    b[0].ql[64 * h + (k & 1) * 32 + l] |= static_cast<uint8_t>((q & 15) << (k >= 2 ? 4 : 0));
    b[0].qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
  }
  const auto y = dequantized(DType::kQ6_K, b);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], 0.5f * scales[i / 16] * static_cast<float>(q6_level(i) - 32)) << i;
  EXPECT_EQ(y[0], -12.5f);   // 0.5 * 1 * (7 - 32)
  EXPECT_EQ(y[150], -320.0f);  // sub-block 9: 0.5 * -128 * (37 - 32)
  EXPECT_EQ(y[255], -13.0f);   // sub-block 15: 0.5 * -1 * (58 - 32)
}


// Quantizes `x` with `quantize` and reads it back through to_f32 (poisoned first).
template <typename Block>
std::vector<float> round_trip(DType t, const std::vector<float>& x, void (*quantize)(const float*, Block*, int64_t)) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<Block> blocks(static_cast<size_t>(n / dtype_block_values(t)));
  quantize(x.data(), blocks.data(), n);
  return dequantized(t, blocks);
}

struct Errors {
  double rms = 0;  // RMS error over RMS value
  double max = 0;  // the worst block's max |error| over its max |value|
  bool finite = true;
};

Errors errors(const std::vector<float>& x, const std::vector<float>& y, int block) {
  Errors e;
  double se = 0, sx = 0;
  for (size_t b = 0; b < x.size(); b += static_cast<size_t>(block)) {
    double amax = 0, emax = 0;
    for (size_t i = b; i < b + static_cast<size_t>(block); ++i) {
      e.finite = e.finite && std::isfinite(y[i]);
      const double d = static_cast<double>(y[i]) - x[i];
      se += d * d;
      sx += static_cast<double>(x[i]) * x[i];
      amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      emax = std::max(emax, std::fabs(d));
    }
    if (amax > 0) e.max = std::max(e.max, emax / amax);
  }
  e.rms = sx > 0 ? std::sqrt(se / sx) : std::sqrt(se);
  return e;
}

// Bounds per type: docs/NUMERICS.md, "Block-quantized weights", says where they come from.
struct Bound {
  DType type;
  double rms, max;
};

Errors run(DType t, const std::vector<float>& x) {
  switch (t) {
    case DType::kQ4_0: return errors(x, round_trip(t, x, quantize_row_q4_0), kQ4_0BlockSize);
    case DType::kQ4_K: return errors(x, round_trip(t, x, quantize_row_q4_k), kQKBlockSize);
    case DType::kQ5_K: return errors(x, round_trip(t, x, quantize_row_q5_k), kQKBlockSize);
    case DType::kQ6_K: return errors(x, round_trip(t, x, quantize_row_q6_k), kQKBlockSize);
    default: return {};
  }
}

constexpr Bound kBounds[] = {
    {DType::kQ4_0, 0.10, 0.13},
    {DType::kQ4_K, 0.09, 0.15},
    {DType::kQ5_K, 0.045, 0.08},
    {DType::kQ6_K, 0.022, 0.04},
};

TEST(Quants, RandomRowsRoundTripWithinTheBounds) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Gaussian rows at unit scale and at make-model's weight scale (0.02: the f16 block
  // factors come near their subnormal range), 8 rows of 1024.
  for (const float sigma : {1.0f, 0.02f}) {
    std::normal_distribution<float> g(0.0f, sigma);
    std::vector<float> x(8 * 1024);
    for (float& v : x) v = g(rng);
    for (const Bound& b : kBounds) {
      const Errors e = run(b.type, x);
      std::printf("%s sigma %.2f: rms %.4f max %.4f\n", dtype_name(b.type), sigma, e.rms, e.max);
      EXPECT_TRUE(e.finite) << dtype_name(b.type);
      EXPECT_LT(e.rms, b.rms) << dtype_name(b.type) << " sigma " << sigma;
      EXPECT_LT(e.max, b.max) << dtype_name(b.type) << " sigma " << sigma;
    }
  }
}

TEST(Quants, EdgeRowsRoundTrip) {
  // Zeros stay zeros; a constant block, a lone outlier and all-negative or all-positive
  // sub-blocks (the K-quants' min must stay non-negative) stay within the bounds.
  std::vector<float> x(1024, 0.0f);
  for (const Bound& b : kBounds) {
    const Errors e = run(b.type, x);
    EXPECT_TRUE(e.finite);
    EXPECT_EQ(e.rms, 0.0) << dtype_name(b.type);
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : x) v = g(rng);
  for (int i = 256; i < 512; ++i) x[static_cast<size_t>(i)] = -0.75f;                 // a constant super-block
  x[600] = 40.0f;                                                                      // an outlier
  for (int i = 768; i < 800; ++i) x[static_cast<size_t>(i)] = 1.0f + std::fabs(x[static_cast<size_t>(i)]);  // all positive
  for (int i = 800; i < 832; ++i) x[static_cast<size_t>(i)] = -1.0f - std::fabs(x[static_cast<size_t>(i)]); // all negative
  for (const Bound& b : kBounds) {
    const Errors e = run(b.type, x);
    EXPECT_TRUE(e.finite) << dtype_name(b.type);
    EXPECT_LT(e.max, b.max) << dtype_name(b.type);
  }
}

}  // namespace
}  // namespace sy
