// kernels/cpu/linear.h on every SIMD level this machine has, against a float64 product
// of the stored weights' exact values: random shapes (odd n, k off the vector width),
// m = 1, 2, 7, 64, outputs poisoned with NaN, several slices of different types in one
// call, batch invariance and thread-count invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "kernels/cpu/invariant_gemm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/model/quants.h"

namespace sy::cpu {
namespace {

// A weight matrix [n, k] in `type`, with the float values it stands for.
struct Matrix {
  DType type;
  int64_t n, k;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // [n, k], exactly what the bytes encode
  // [n, k] for Q4_K: |d·sc·q| + |dmin·mn|, the magnitudes its two terms add in float32
  // (they may cancel in the value); empty otherwise.
  std::vector<double> magnitudes;
  size_t row_stride() const { return bytes.size() / static_cast<size_t>(n); }
  WeightSlice slice(int64_t y_col0 = 0) const {
    return {type, n, bytes.data(), row_stride(), y_col0};
  }
};

// Q4_K / Q5_K blocks of random bytes (small d, dmin), values from worker/model's
// scalar dequantizer; magnitudes |d·sc·q| + dmin·mn = (value + dmin·mn) + dmin·mn.
template <class Blk>
Matrix random_k4(Matrix m, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t blocks = m.n * m.k / kQKBlockSize;
  m.bytes.resize(static_cast<size_t>(blocks) * sizeof(Blk));
  m.magnitudes.resize(m.values.size());
  for (int64_t b = 0; b < blocks; ++b) {
    Blk blk;
    std::memset(&blk, 0, sizeof(blk));
    for (size_t i = 0; i < sizeof(blk); ++i)
      reinterpret_cast<uint8_t*>(&blk)[i] = static_cast<uint8_t>(rng() & 0xff);
    blk.d = f32_to_f16(0.002f * std::fabs(normal(rng)) + 1e-4f);
    blk.dmin = f32_to_f16(0.002f * std::fabs(normal(rng)));
    std::memcpy(m.bytes.data() + b * sizeof(Blk), &blk, sizeof(blk));
    float v[kQKBlockSize];
    if constexpr (std::is_same_v<Blk, BlockQ4_K>)
      dequantize_row_q4_k(&blk, v, kQKBlockSize);
    else
      dequantize_row_q5_k(&blk, v, kQKBlockSize);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    for (int i = 0; i < kQKBlockSize; ++i) {
      const double min = static_cast<double>(f16_to_f32(blk.dmin)) * mn[i / 32];
      m.values[static_cast<size_t>(b * kQKBlockSize + i)] = v[i];
      m.magnitudes[static_cast<size_t>(b * kQKBlockSize + i)] = std::fabs(v[i] + min) + min;
    }
  }
  return m;
}

Matrix random_matrix(DType type, int64_t n, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m{type, n, k, {}, std::vector<double>(static_cast<size_t>(n * k)), {}};
  if (type == DType::kQ6_K) {  // values from worker/model's scalar dequantizer
    const int64_t nb = k / kQKBlockSize;
    m.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ6_K));
    for (int64_t b = 0; b < n * nb; ++b) {
      BlockQ6_K blk;
      blk.d = f32_to_f16(1e-4f * std::fabs(normal(rng)) + 1e-5f);
      for (auto& q : blk.ql) q = static_cast<uint8_t>(rng() & 0xff);
      for (auto& q : blk.qh) q = static_cast<uint8_t>(rng() & 0xff);
      for (auto& s : blk.scales) s = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
      std::memcpy(m.bytes.data() + b * sizeof(BlockQ6_K), &blk, sizeof(blk));
      float v[kQKBlockSize];
      dequantize_row_q6_k(&blk, v, kQKBlockSize);
      for (int i = 0; i < kQKBlockSize; ++i)
        m.values[static_cast<size_t>(b * kQKBlockSize + i)] = v[i];
    }
    return m;
  }
  if (type == DType::kQ4_K) return random_k4<BlockQ4_K>(std::move(m), rng);
  if (type == DType::kQ5_K) return random_k4<BlockQ5_K>(std::move(m), rng);
  if (type == DType::kQ4_0) {
    const int64_t nb = k / kQ4_0BlockSize;
    m.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ4_0));
    for (int64_t b = 0; b < n * nb; ++b) {
      BlockQ4_0 blk;
      blk.d = f32_to_f16(0.01f * std::fabs(normal(rng)) + 1e-4f);
      for (int j = 0; j < 16; ++j) blk.qs[j] = static_cast<uint8_t>(rng() & 0xff);
      for (int i = 0; i < kQ4_0BlockSize; ++i) {
        const int q = (i < 16 ? blk.qs[i] & 0x0f : blk.qs[i - 16] >> 4) - 8;
        m.values[static_cast<size_t>(b * kQ4_0BlockSize + i)] =
            static_cast<double>(f16_to_f32(blk.d)) * q;
      }
      std::memcpy(m.bytes.data() + b * sizeof(BlockQ4_0), &blk, sizeof(blk));
    }
    return m;
  }
  if (type == DType::kQ8_0) {
    const int64_t nb = k / kQ8_0BlockSize;
    m.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ8_0));
    std::uniform_int_distribution<int> q(-128, 127);  // -128 too: files may hold it
    for (int64_t b = 0; b < n * nb; ++b) {
      BlockQ8_0 blk;
      blk.d = f32_to_f16(0.01f * std::fabs(normal(rng)) + 1e-4f);
      for (int i = 0; i < kQ8_0BlockSize; ++i) {
        blk.qs[i] = static_cast<int8_t>(q(rng));
        m.values[static_cast<size_t>(b * kQ8_0BlockSize + i)] =
            static_cast<double>(f16_to_f32(blk.d)) * blk.qs[i];
      }
      std::memcpy(m.bytes.data() + b * sizeof(BlockQ8_0), &blk, sizeof(blk));
    }
    return m;
  }
  const size_t es = type == DType::kF32 ? 4 : 2;
  m.bytes.resize(static_cast<size_t>(n * k) * es);
  for (size_t i = 0; i < m.values.size(); ++i) {
    const float v = normal(rng);
    if (type == DType::kF32) {
      std::memcpy(&m.bytes[i * 4], &v, 4);
      m.values[i] = v;
    } else {
      const uint16_t h = type == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(&m.bytes[i * 2], &h, 2);
      m.values[i] = type == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  return m;
}

std::vector<float> random_x(int64_t m, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (float& v : x) v = normal(rng);
  return x;
}

// The types multiplied against x quantized to int8 per block of 32.
bool int8_x(DType t) {
  return t != DType::kF32 && t != DType::kF16 && t != DType::kBF16;
}
// A row length that fills the type's blocks.
int64_t block_values(DType t) {
  return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K ? kQKBlockSize
         : int8_x(t)                                                 ? kQ8_0BlockSize
                                                                     : 1;
}

// The bound on |y - Σ x·w| for one element: float32 accumulation (a sum of k/8 + 8
// roundings at most per lane tree, twice for slack) and, for Q8_0, x's quantization to
// int8 per block of 32: each |Δx| <= max|x in its block| / 254, plus rounding of the
// scale (1%). x_bf16: x rounded to bf16 (the AMX bf16 tiles), each |Δx| <= 2^-9 |x|, and
// the tiles' fp32 sums in any order: k roundings.
double bound(const Matrix& w, const float* x, int64_t j, bool x_bf16 = false) {
  double abs_sum = 0, quant = 0;
  for (int64_t b = 0; b < w.k; b += kQ8_0BlockSize) {
    double amax = 0, wsum = 0;
    for (int64_t i = b; i < std::min(w.k, b + kQ8_0BlockSize); ++i) {
      const double wv = std::fabs(w.values[static_cast<size_t>(j * w.k + i)]);
      abs_sum += (w.magnitudes.empty() ? wv : w.magnitudes[static_cast<size_t>(j * w.k + i)]) *
                 std::fabs(x[i]);
      amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      wsum += wv;
    }
    quant += amax / 254.0 * wsum;
  }
  if (x_bf16) return (std::ldexp(1.0, -9) + static_cast<double>(w.k) * std::ldexp(1.0, -23)) * abs_sum + 1e-30;
  const double fp = 2.0 * (static_cast<double>(w.k) / 8 + 8) * std::ldexp(1.0, -24) * abs_sum;
  return fp + (int8_x(w.type) ? 1.01 * quant : 0.0) + 1e-30;
}

// Runs linear() on the slices into y [m, ldy] poisoned with NaN and checks every output
// against float64 and every other element is still NaN.
void check(std::span<const Matrix> ws, const std::vector<float>& x, int64_t m, int64_t k,
           ThreadPool& pool, const LinearOptions& opt, const std::string& what,
           std::vector<float>* out = nullptr) {
  std::vector<WeightSlice> slices;
  int64_t n = 0;
  for (const Matrix& w : ws) {
    slices.push_back(w.slice(n + 1));  // column 0 and the last stay untouched
    n += w.n;
  }
  const int64_t ldy = n + 2;
  std::vector<float> y(static_cast<size_t>(m * ldy), NAN);
  linear(x.data(), m, k, slices, y.data(), ldy, pool, opt);
  // linear.h's LinearOptions::amx: where bf16 rows see x rounded to bf16.
  const bool amx = opt.fast_prefill && opt.amx && m >= kFastPrefillRows && amx_usable() &&
                   simd_level() == SimdLevel::kAvx512Vnni;
  int64_t col = 1, bad = 0;
  for (const Matrix& w : ws) {
    const bool x_bf16 = amx && w.type == DType::kBF16 && k % 32 == 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < w.n; ++j) {
        double ref = 0;
        for (int64_t c = 0; c < k; ++c)
          ref += static_cast<double>(x[static_cast<size_t>(i * k + c)]) *
                 w.values[static_cast<size_t>(j * k + c)];
        const float got = y[static_cast<size_t>(i * ldy + col + j)];
        const double tol = bound(w, &x[static_cast<size_t>(i * k)], j, x_bf16);
        if (!(std::fabs(got - ref) <= tol) && bad++ < 5)
          ADD_FAILURE() << what << " " << dtype_name(w.type) << " row " << i << " col " << j << ": "
                        << got << " vs " << ref << " (bound " << tol << ")";
      }
    col += w.n;
  }
  for (int64_t i = 0; i < m; ++i) {
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * ldy)])) << what << " wrote before its columns";
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * ldy + ldy - 1)]))
        << what << " wrote past its columns";
  }
  if (out) *out = std::move(y);
}

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> l;
  for (int i = 0; i <= static_cast<int>(detected_simd_level()); ++i)
    l.push_back(static_cast<SimdLevel>(i));
  return l;
}

// Restores the process's level after a test that walks the levels.
struct LevelGuard {
  SimdLevel saved = simd_level();
  ~LevelGuard() { set_simd_level(saved); }
};

constexpr DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                            DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

TEST(CpuLinear, EveryTypeAndLevelMatchesFloat64) {
  LevelGuard guard;
  ThreadPool pool(3);
  std::mt19937 rng(19);
  for (const SimdLevel level : levels()) {
    ASSERT_EQ(set_simd_level(level), level);
    for (const DType t : kTypes)
      for (const int64_t m : {1, 2, 7, 64}) {
        std::uniform_int_distribution<int64_t> nd(1, 40), kd(1, 12);
        const int64_t n = 2 * nd(rng) + 1;  // odd
        const int64_t k = block_values(t) > 1 ? block_values(t) * (1 + kd(rng) % 3)
                                              : 16 * kd(rng) + kd(rng) - 1;  // off the lanes too
        const Matrix w = random_matrix(t, n, k, rng);
        check({&w, 1}, random_x(m, k, rng), m, k, pool, {},
              std::string(simd_level_name(level)) + " m=" + std::to_string(m));
      }
  }
}

// x whose int8 quantization is exact (integers in every block, one of them ±127): the
// Q8_0 products then carry only float32 rounding, a check far tighter than the bound.
TEST(CpuLinear, Q8_0IsExactWhereActivationsQuantizeExactly) {
  LevelGuard guard;
  ThreadPool pool(2);
  std::mt19937 rng(7);
  const int64_t m = 5, n = 37, k = 256;
  const Matrix w = random_matrix(DType::kQ8_0, n, k, rng);
  std::vector<float> x(static_cast<size_t>(m * k));
  std::uniform_int_distribution<int> q(-127, 127);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (i % 32 == 5 ? 127.0f : static_cast<float>(q(rng))) * 0.03125f;
  for (const SimdLevel level : levels()) {
    set_simd_level(level);
    std::vector<float> y(static_cast<size_t>(m * n), NAN);
    const WeightSlice s = w.slice();
    linear(x.data(), m, k, {&s, 1}, y.data(), n, pool);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t c = 0; c < k; ++c) {
          ref += static_cast<double>(x[static_cast<size_t>(i * k + c)]) *
                 w.values[static_cast<size_t>(j * k + c)];
          mag += std::fabs(
              x[static_cast<size_t>(i * k + c)] *
              (w.magnitudes.empty() ? w.values : w.magnitudes)[static_cast<size_t>(j * k + c)]);
        }
        EXPECT_NEAR(y[static_cast<size_t>(i * n + j)], ref, 1e-6 * mag)
            << simd_level_name(level) << " " << i << "," << j;
      }
  }
}

TEST(CpuLinear, SlicesOfMixedTypesInOneCall) {
  LevelGuard guard;
  ThreadPool pool(4);
  std::mt19937 rng(3);
  const int64_t k = 256;
  const std::vector<Matrix> ws = {
      random_matrix(DType::kBF16, 9, k, rng), random_matrix(DType::kQ8_0, 1, k, rng),
      random_matrix(DType::kF32, 5, k, rng),  random_matrix(DType::kQ4_0, 2, k, rng),
      random_matrix(DType::kQ4_K, 3, k, rng), random_matrix(DType::kQ6_K, 2, k, rng),
      random_matrix(DType::kQ5_K, 1, k, rng), random_matrix(DType::kF16, 3, k, rng)};
  for (const SimdLevel level : levels()) {
    set_simd_level(level);
    for (const int64_t m : {1, 7})
      check(ws, random_x(m, k, rng), m, k, pool, {}, simd_level_name(level));
  }
}

// The sgemm path for long prompts (not batch-invariant) against the same reference.
TEST(CpuLinear, FastPrefillMatchesFloat64) {
  ThreadPool pool(2);
  std::mt19937 rng(5);
  const int64_t m = 64, k = 256;
  LinearOptions opt;
  opt.fast_prefill = true;
  for (const DType t : kTypes) {
    const Matrix w = random_matrix(t, 45, k, rng);
    check({&w, 1}, random_x(m, k, rng), m, k, pool, opt, "fast prefill");
  }
}

// Q8_0 on the sgemm path multiplies x as the int8 kernels quantize it: the two paths
// agree to float32 rounding, far closer than the quantization error.
TEST(CpuLinear, FastPrefillOfInt8TypesAgreesWithTheInt8Kernels) {
  ThreadPool pool(2);
  std::mt19937 rng(23);
  const int64_t m = 20, n = 33, k = 256;
  for (const DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const Matrix w = random_matrix(t, n, k, rng);
    const WeightSlice s = w.slice();
    const std::vector<float> x = random_x(m, k, rng);
    std::vector<float> fast(static_cast<size_t>(m * n), NAN), exact(fast.size(), NAN);
    LinearOptions opt;
    opt.fast_prefill = true;
    linear(x.data(), m, k, {&s, 1}, fast.data(), n, pool, opt);
    linear(x.data(), m, k, {&s, 1}, exact.data(), n, pool);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double mag = 0;
        for (int64_t c = 0; c < k; ++c)
          mag += std::fabs(
              x[static_cast<size_t>(i * k + c)] *
              (w.magnitudes.empty() ? w.values : w.magnitudes)[static_cast<size_t>(j * k + c)]);
        EXPECT_NEAR(fast[static_cast<size_t>(i * n + j)], exact[static_cast<size_t>(i * n + j)],
                    1e-5 * mag)
            << dtype_name(t) << " " << i << "," << j;
      }
  }
}

// The AMX path (fast_prefill where the processor has AMX): every block type beside float
// slices in one call, rows not a multiple of the tiles' 32, panels of 32 columns cut
// short; against float64 and against the int8 kernels (the same exact integer sums per
// block: float32 rounding apart).
TEST(CpuLinear, AmxPrefillMatchesFloat64AndTheInt8Kernels) {
  if (!amx_usable()) GTEST_SKIP() << "no AMX here (AMX-TILE and AMX-INT8, granted by the OS): runs on the GPU host's Xeon";
  ThreadPool pool(3);
  std::mt19937 rng(29);
  const int64_t k = 512;
  const std::vector<Matrix> ws = {random_matrix(DType::kQ8_0, 45, k, rng), random_matrix(DType::kBF16, 7, k, rng),
                                  random_matrix(DType::kQ4_0, 33, k, rng), random_matrix(DType::kQ4_K, 17, k, rng),
                                  random_matrix(DType::kQ5_K, 50, k, rng), random_matrix(DType::kQ6_K, 31, k, rng)};
  LinearOptions opt;
  opt.fast_prefill = true;
  for (const int64_t m : {16, 45, 77}) {
    const std::vector<float> x = random_x(m, k, rng);
    std::vector<float> amx;
    check(ws, x, m, k, pool, opt, "amx m=" + std::to_string(m), &amx);
    std::vector<float> int8;
    check(ws, x, m, k, pool, {}, "int8 kernels m=" + std::to_string(m), &int8);
    const int64_t ldy = static_cast<int64_t>(amx.size()) / m;
    int64_t col = 1;
    for (const Matrix& w : ws) {
      for (int64_t i = 0; i < m && int8_x(w.type); ++i)
        for (int64_t j = 0; j < w.n; ++j) {
          double mag = 0;
          for (int64_t c = 0; c < k; ++c)
            mag += std::fabs(x[static_cast<size_t>(i * k + c)] *
                             (w.magnitudes.empty() ? w.values : w.magnitudes)[static_cast<size_t>(j * k + c)]);
          const size_t at = static_cast<size_t>(i * ldy + col + j);
          EXPECT_NEAR(amx[at], int8[at], 1e-5 * mag) << dtype_name(w.type) << " m=" << m << " " << i << "," << j;
        }
      col += w.n;
    }
  }
  // A lowered SIMD level keeps AMX out: the sgemm path's bits, as with amx off.
  LevelGuard guard;
  set_simd_level(SimdLevel::kAvx2);
  const int64_t m = 33;
  const std::vector<float> x = random_x(m, k, rng);
  const WeightSlice s = ws[0].slice();
  std::vector<float> lowered(static_cast<size_t>(m * s.n), NAN), sgemm(lowered.size(), NAN);
  linear(x.data(), m, k, {&s, 1}, lowered.data(), s.n, pool, opt);
  LinearOptions off = opt;
  off.amx = false;
  linear(x.data(), m, k, {&s, 1}, sgemm.data(), s.n, pool, off);
  EXPECT_EQ(0, std::memcmp(lowered.data(), sgemm.data(), lowered.size() * 4));
}

// AMX bf16 tiles: panels of 32 columns (n = 70: the third cut short), rows not a multiple
// of 32, k of 3 and 16 tile chunks, two slices in one call; tight against float64 of x
// rounded to bf16 (what the tiles multiply: the products are exact, only fp32 sums
// round), and k = 100 (not whole chunks) through sgemm against x as given.
TEST(CpuLinear, AmxBf16PrefillIsTheProductOfXRoundedToBf16) {
  if (!amx_usable()) GTEST_SKIP() << "no AMX here (AMX-TILE, -INT8, -BF16, granted by the OS): runs on the GPU host's Xeon";
  ThreadPool pool(3);
  std::mt19937 rng(31);
  LinearOptions opt;
  opt.fast_prefill = true;
  for (const int64_t k : {96, 512, 100})
    for (const int64_t m : {16, 45, 77}) {
      const std::vector<Matrix> ws = {random_matrix(DType::kBF16, 70, k, rng), random_matrix(DType::kBF16, 5, k, rng)};
      const std::vector<float> x = random_x(m, k, rng);
      std::vector<float> y;
      check(ws, x, m, k, pool, opt, "amx bf16 k=" + std::to_string(k) + " m=" + std::to_string(m), &y);
      if (k % 32 != 0) continue;
      const int64_t ldy = static_cast<int64_t>(y.size()) / m;
      int64_t col = 1, bad = 0;
      for (const Matrix& w : ws) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < w.n; ++j) {
            double ref = 0, mag = 0;
            for (int64_t c = 0; c < k; ++c) {
              const double p = bf16_to_f32(f32_to_bf16(x[static_cast<size_t>(i * k + c)])) * w.values[static_cast<size_t>(j * k + c)];
              ref += p;
              mag += std::fabs(p);
            }
            const float got = y[static_cast<size_t>(i * ldy + col + j)];
            if (!(std::fabs(got - ref) <= static_cast<double>(k) * std::ldexp(1.0, -23) * mag) && bad++ < 5)
              ADD_FAILURE() << "k=" << k << " m=" << m << " row " << i << " col " << col + j << ": " << got << " vs " << ref;
          }
        col += w.n;
      }
    }
}

// Each row's outputs are the same bits whatever else is in the step and however many
// threads share the weights: the property --numerics deterministic relies on.
TEST(CpuLinear, RowsAreBatchAndThreadInvariant) {
  LevelGuard guard;
  ThreadPool one(1), four(4);
  std::mt19937 rng(11);
  const int64_t k = 512, n = 77, m = 64;
  for (const SimdLevel level : levels()) {
    set_simd_level(level);
    for (const DType t : kTypes) {
      const Matrix w = random_matrix(t, n, k, rng);
      const WeightSlice s = w.slice();
      const std::vector<float> x = random_x(m, k, rng);
      std::vector<float> all(static_cast<size_t>(m * n)), row(static_cast<size_t>(n));
      linear(x.data(), m, k, {&s, 1}, all.data(), n, four);
      for (const int64_t r : {int64_t{0}, int64_t{5}, m - 1}) {
        linear(&x[static_cast<size_t>(r * k)], 1, k, {&s, 1}, row.data(), n, one);
        EXPECT_EQ(0, std::memcmp(row.data(), &all[static_cast<size_t>(r * n)], row.size() * 4))
            << simd_level_name(level) << " " << dtype_name(t) << " row " << r;
      }
    }
  }
}

// Every level performs linear.h's one sequence of operations: the same bits, scalar
// included, for every type (Q8_0's integer block sums are exact on every level), with
// the next weight rows prefetched or not: m = 1 and 3 take the prefetching tiles (rows
// that fit one kernel call), m = 7 the others on levels of 4 rows a call (n = 29: tiles
// cut short at the chunk's end).
TEST(CpuLinear, EveryLevelGivesTheSameBits) {
  LevelGuard guard;
  ThreadPool pool(2);
  std::mt19937 rng(13);
  const int64_t n = 29, k = 512;
  for (const int64_t m : {1, 3, 7})
    for (const DType t : kTypes) {
      const Matrix w = random_matrix(t, n, block_values(t) > 1 ? k : k - 3, rng);
      const WeightSlice s = w.slice();
      const std::vector<float> x = random_x(m, w.k, rng);
      std::vector<float> base(static_cast<size_t>(m * n), NAN), y(base.size(), NAN);
      set_simd_level(SimdLevel::kScalar);
      linear(x.data(), m, w.k, {&s, 1}, base.data(), n, pool);
      for (const SimdLevel level : levels())
        for (const bool prefetch : {true, false}) {
          set_simd_level(level);
          LinearOptions opt;
          opt.prefetch = prefetch;
          std::fill(y.begin(), y.end(), NAN);
          linear(x.data(), m, w.k, {&s, 1}, y.data(), n, pool, opt);
          EXPECT_EQ(0, std::memcmp(y.data(), base.data(), y.size() * 4))
              << simd_level_name(level) << " " << dtype_name(t) << " m=" << m << (prefetch ? "" : " without prefetch");
        }
    }
}

// Float weights follow invariant_gemm.h's sequence: a bf16 matrix gives the bits of its
// float32 widening through matmul_nt_invariant, so the CPU backend's deterministic
// numerics are the same on either weight path.
TEST(CpuLinear, FloatWeightsGiveTheInvariantGemmBits) {
  LevelGuard guard;
  ThreadPool pool(3);
  std::mt19937 rng(17);
  const int64_t m = 9, n = 31, k = 203;
  for (const DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    const Matrix w = random_matrix(t, n, k, rng);
    std::vector<float> wide(w.values.begin(), w.values.end());
    const std::vector<float> x = random_x(m, k, rng);
    std::vector<float> want(static_cast<size_t>(m * n), NAN), got(want.size(), NAN);
    matmul_nt_invariant(x.data(), wide.data(), want.data(), m, n, k, false, pool);
    const WeightSlice s = w.slice();
    for (const SimdLevel level : levels()) {
      set_simd_level(level);
      linear(x.data(), m, k, {&s, 1}, got.data(), n, pool);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4))
          << simd_level_name(level) << " " << dtype_name(t);
    }
  }
}

TEST(CpuLinear, LevelsAreClampedAndNamed) {
  LevelGuard guard;
  EXPECT_EQ(set_simd_level(SimdLevel::kAvx512Vnni), detected_simd_level());
  EXPECT_EQ(set_simd_level(SimdLevel::kScalar), SimdLevel::kScalar);
  EXPECT_STREQ(simd_level_name(SimdLevel::kAvx512Vnni), "avx512vnni");
  EXPECT_TRUE(linear_supports(DType::kQ5_K));
  EXPECT_TRUE(linear_supports(DType::kQ6_K));
  EXPECT_TRUE(linear_supports(DType::kQ4_0));
  EXPECT_TRUE(linear_supports(DType::kQ4_K));
  std::printf("SIMD level on this machine: %s\n", simd_level_name(detected_simd_level()));
}

}  // namespace
}  // namespace sy::cpu
