// kernels/cpu/attention.h on every SIMD level this machine has, against float64
// attention over the same cache: random Q/K/V, GQA groups of 1-4, head dims on and off
// the vector widths, sequences mixing prefill chunks and decode rows over scattered
// blocks, outputs poisoned with NaN. Then invariance: a row's output is the same bits
// whatever else is in the batch and however many threads run it (the decode split into
// single heads and the grouped prefill tasks must compute each head alike). Each with a
// float32 and an IEEE half cache (the reference reading the half values). And the
// softmax exponentials of every level against float64 exp, and each level's conversion
// to half against the scalar one, specials included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_kernels.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace {

struct Shape {
  int n_heads, n_kv_heads, head_dim, block_size;
};

// A batch: sequences with a context length each and the number of query rows at its
// end (1 = a decode step), their blocks scattered over the cache.
struct Batch {
  Shape shape;
  std::vector<int32_t> ctx, rows;
  std::vector<int32_t> indptr, indices, last_len, cu, positions;
  std::vector<float> q, k_new, v_new, k_cache, v_cache, out, lse;
  bool half = false;  // the cache in k16/v16 (to_half)
  std::vector<uint16_t> k16, v16;

  Batch(Shape s, std::vector<int32_t> contexts, std::vector<int32_t> query_rows, std::mt19937& rng)
      : shape(s), ctx(std::move(contexts)), rows(std::move(query_rows)) {
    const int bs = s.block_size;
    indptr = {0};
    cu = {0};
    int32_t blocks = 0;
    for (size_t i = 0; i < ctx.size(); ++i) {
      const int32_t n = (ctx[i] + bs - 1) / bs;
      indptr.push_back(indptr.back() + n);
      last_len.push_back(ctx[i] - (n - 1) * bs);
      blocks += n;
      cu.push_back(cu.back() + rows[i]);
      for (int32_t p = ctx[i] - rows[i]; p < ctx[i]; ++p) positions.push_back(p);
    }
    indices.resize(static_cast<size_t>(blocks));
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), rng);
    const auto T = static_cast<size_t>(cu.back());
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, size_t n) {
      v.resize(n);
      for (float& x : v) x = nd(rng);
    };
    fill(q, T * static_cast<size_t>(s.n_heads * s.head_dim));
    fill(k_new, T * static_cast<size_t>(s.n_kv_heads * s.head_dim));
    fill(v_new, k_new.size());
    // Keys of earlier positions already cached: random too.
    fill(k_cache, static_cast<size_t>(blocks) * s.n_kv_heads * bs * s.head_dim);
    fill(v_cache, k_cache.size());
    out.assign(T * static_cast<size_t>(s.n_heads * s.head_dim), NAN);
    lse.assign(T * static_cast<size_t>(s.n_heads), NAN);
  }

  // The cache from here on in IEEE half: the earlier positions' keys and values rounded.
  void to_half() {
    half = true;
    for (auto [from, to] : {std::pair{&k_cache, &k16}, std::pair{&v_cache, &v16}}) {
      to->resize(from->size());
      for (size_t i = 0; i < from->size(); ++i) (*to)[i] = f32_to_f16((*from)[i]);
    }
  }

  AttentionParams params() {
    AttentionParams p;
    p.n_heads = shape.n_heads;
    p.n_kv_heads = shape.n_kv_heads;
    p.head_dim = shape.head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    p.q = q.data();
    p.q_stride = static_cast<int64_t>(shape.n_heads) * shape.head_dim;
    p.k_new = k_new.data();
    p.v_new = v_new.data();
    p.kv_stride = static_cast<int64_t>(shape.n_kv_heads) * shape.head_dim;
    p.out = out.data();
    p.lse = lse.data();
    p.cache = half ? KvLayer{nullptr, nullptr, k16.data(), v16.data()} : KvLayer{k_cache.data(), v_cache.data()};
    p.table = {indptr.data(), indices.data(), last_len.data(), static_cast<int32_t>(ctx.size()), shape.block_size};
    p.cu_seqlens = cu.data();
    p.positions = positions.data();
    return p;
  }

  // Float64 attention of query row t, head h over the cache (after write_kv).
  void reference(int64_t t, int h, std::vector<double>& o, double& lse_out) const {
    const Shape& s = shape;
    int32_t seq = 0;
    while (cu[static_cast<size_t>(seq) + 1] <= t) ++seq;
    const int64_t n_keys = positions[static_cast<size_t>(t)] + 1;
    const int kv = h / (s.n_heads / s.n_kv_heads);
    const int d = s.head_dim;
    // Element i of key (or value) j, as the cache holds it.
    auto key = [&](bool value, int64_t j, int i) -> double {
      const int32_t block = indices[static_cast<size_t>(indptr[static_cast<size_t>(seq)] + j / s.block_size)];
      const auto at = static_cast<size_t>(((static_cast<int64_t>(block) * s.n_kv_heads + kv) * s.block_size + j % s.block_size) * d + i);
      if (half) return f16_to_f32((value ? v16 : k16)[at]);
      return (value ? v_cache : k_cache)[at];
    };
    const float* qr = q.data() + t * s.n_heads * d + static_cast<int64_t>(h) * d;
    std::vector<double> sc(static_cast<size_t>(n_keys));
    double mx = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) {
      double dot = 0;
      for (int i = 0; i < d; ++i) dot += static_cast<double>(qr[i]) * key(false, j, i);
      sc[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
      mx = std::max(mx, sc[static_cast<size_t>(j)]);
    }
    double denom = 0;
    for (double& x : sc) denom += (x = std::exp(x - mx));
    o.assign(static_cast<size_t>(d), 0.0);
    for (int64_t j = 0; j < n_keys; ++j)
      for (int i = 0; i < d; ++i) o[static_cast<size_t>(i)] += sc[static_cast<size_t>(j)] * key(true, j, i) / denom;
    lse_out = mx + std::log(denom);
  }
};

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> l;
  for (int i = 0; i <= static_cast<int>(detected_simd_level()); ++i) l.push_back(static_cast<SimdLevel>(i));
  return l;
}

struct LevelGuard {
  SimdLevel saved = simd_level();
  ~LevelGuard() { set_simd_level(saved); }
};

TEST(CpuAttention, EveryLevelMatchesFloat64OnMixedBatches) {
  const LevelGuard guard;
  std::mt19937 rng(7);
  ThreadPool pool(3);
  const Shape shapes[] = {{16, 8, 128, 16}, {8, 2, 64, 16}, {4, 1, 72, 8}, {6, 6, 40, 4}, {8, 2, 256, 16}};
  for (const SimdLevel level : levels()) {
    ASSERT_EQ(set_simd_level(level), level);
    for (const bool half : {false, true}) {
      for (const Shape& s : shapes) {
        // A decode row at a block boundary, a decode row mid-block, a prefill chunk of 37
        // rows after 50 cached tokens, a whole prompt of 5, and longer contexts: a decode
        // row at 300, 70 rows from 131 to 200.
        Batch b(s, {33, 70, 87, 5, 300, 200}, {1, 1, 37, 5, 1, 70}, rng);
        if (half) b.to_half();
        AttentionParams p = b.params();
        write_kv(p);
        paged_attention(p, pool);
        std::vector<double> o;
        double lse = 0;
        const int64_t T = b.cu.back();
        for (int64_t t = 0; t < T; ++t)
          for (int h = 0; h < s.n_heads; ++h) {
            b.reference(t, h, o, lse);
            const float* got = b.out.data() + (t * s.n_heads + h) * s.head_dim;
            double err = 0, norm = 0;
            for (int i = 0; i < s.head_dim; ++i) {
              ASSERT_FALSE(std::isnan(got[i])) << simd_level_name(level) << " half " << half << " row " << t << " head " << h;
              err = std::max(err, std::fabs(got[i] - o[static_cast<size_t>(i)]));
              norm = std::max(norm, std::fabs(o[static_cast<size_t>(i)]));
            }
            // float32 scores of d products and sums over ≤ 300 keys: a few ulps of the
            // largest output per head.
            ASSERT_LE(err, 2e-5 * std::max(norm, 1.0))
                << simd_level_name(level) << " half " << half << " d=" << s.head_dim << " row " << t << " head " << h;
            ASSERT_NEAR(b.lse[static_cast<size_t>(t * s.n_heads + h)], lse, 1e-4 * std::max(1.0, std::fabs(lse)));
          }
      }
    }
  }
}

// A decode row alone with one thread, then beside a prefill and another decode row on
// four threads (where the decode split into single heads applies only to the first):
// the same bits.
TEST(CpuAttention, RowOutputIsTheSameBitsWhateverTheBatchAndThreads) {
  const LevelGuard guard;
  std::mt19937 rng(11);
  const Shape s{16, 4, 128, 16};
  ThreadPool one(1), four(4);
  for (const SimdLevel level : levels()) {
    set_simd_level(level);
    for (const bool half : {false, true}) {
      Batch mixed(s, {300, 120, 41}, {1, 40, 1}, rng);
      if (half) mixed.to_half();
      Batch alone = mixed;  // the first sequence on its own
      alone.ctx = {300};
      alone.rows = {1};
      alone.indptr.resize(2);
      alone.last_len.resize(1);
      alone.cu = {0, 1};
      alone.positions.resize(1);
      alone.out.assign(static_cast<size_t>(s.n_heads * s.head_dim), NAN);
      alone.lse.assign(static_cast<size_t>(s.n_heads), NAN);
      AttentionParams pa = alone.params(), pm = mixed.params();
      write_kv(pa);
      paged_attention(pa, one);
      write_kv(pm);
      paged_attention(pm, four);
      for (int i = 0; i < s.n_heads * s.head_dim; ++i)
        ASSERT_EQ(alone.out[static_cast<size_t>(i)], mixed.out[static_cast<size_t>(i)])
            << simd_level_name(level) << " half " << half << " " << i;
      // The last decode row too, against the same batch on one thread.
      Batch again = mixed;
      again.out.assign(again.out.size(), NAN);
      AttentionParams pg = again.params();
      paged_attention(pg, one);
      ASSERT_EQ(again.out, mixed.out) << simd_level_name(level) << " half " << half;
    }
  }
}

// Each level's exp_sum against float64 exp: lengths on and off the vector widths, values
// from 0 down past the float32 range, -inf (0), NaN (kept); within 2 ulp per value where
// the result is normal, and the sum within float64 rounding of the values' own sum.
TEST(CpuAttention, EveryLevelsExpSumMatchesFloat64Exp) {
  std::vector<std::pair<const char*, const detail::AttentionKernels*>> tables = {{"scalar", detail::attention_kernels_scalar()}};
  if (detected_simd_level() >= SimdLevel::kAvx2) tables.emplace_back("avx2", detail::attention_kernels_avx2());
  if (detected_simd_level() >= SimdLevel::kAvx512) tables.emplace_back("avx512", detail::attention_kernels_avx512());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> spread(-95.0f, 0.0f);
  for (const auto& [name, k] : tables) {
    ASSERT_NE(k, nullptr) << name;
    for (const int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 100, 1000}) {
      const float max = 3.5f;
      std::vector<float> s(static_cast<size_t>(n));
      for (float& v : s) v = max + spread(rng);
      s[0] = max;  // exp(0) = 1
      if (n > 2) s[1] = -INFINITY;
      if (n > 3) s[2] = max - 87.0f;  // near the bottom of the normal range
      const std::vector<float> in = s;
      const double sum = k->exp_sum(s.data(), n, max);
      double want_sum = 0, got_sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double want = std::exp(static_cast<double>(in[static_cast<size_t>(j)]) - max);
        const float got = s[static_cast<size_t>(j)];
        ASSERT_FALSE(std::isnan(got)) << name << " n=" << n << " j=" << j;
        if (want >= 1.2e-38) {
          EXPECT_LE(std::fabs(got - want), 2.5 * std::ldexp(1.0, std::ilogb(want) - 23))
              << name << " n=" << n << " x=" << in[static_cast<size_t>(j)] - max << " got " << got << " want " << want;
        } else {
          EXPECT_LE(got, 1.2e-38) << name << " x=" << in[static_cast<size_t>(j)] - max;
        }
        want_sum += want;
        got_sum += got;
      }
      EXPECT_EQ(s[0], 1.0f) << name;
      if (n > 2) {
        EXPECT_EQ(s[1], 0.0f) << name;
      }
      EXPECT_NEAR(sum, got_sum, 1e-12 * got_sum) << name << " n=" << n;
      EXPECT_NEAR(sum, want_sum, 3e-7 * want_sum) << name << " n=" << n;
    }
    std::vector<float> with_nan = {0.0f, NAN, -1.0f, -2.0f, 0.5f, -3.0f, -4.0f, -5.0f, -6.0f};
    EXPECT_TRUE(std::isnan(k->exp_sum(with_nan.data(), static_cast<int64_t>(with_nan.size()), 0.5f))) << name;
    EXPECT_TRUE(std::isnan(with_nan[1])) << name;
  }
}

// Each level's conversion to half gives the scalar one's bits (IEEE round to nearest even
// in both): values across the whole range, ties, half's subnormals, overflow to infinity,
// signed zeros and infinities; NaN stays NaN. Lengths on and off the vector widths.
TEST(CpuAttention, EveryLevelsHalfConversionIsTheScalarOne) {
  std::vector<float> in;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int e = -30; e <= 18; ++e)
    for (int r = 0; r < 24; ++r) in.push_back((r % 2 ? -1.0f : 1.0f) * std::ldexp(mant(rng), e));
  for (const float x : {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.0f, 65520.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                        5.9604645e-8f, 2.9802322e-8f, 8.9406967e-8f, 6.1035156e-5f, 6.0975552e-5f})
    in.push_back(x);
  in.push_back(NAN);
  const auto n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> want(in.size());
  detail::attention_kernels_scalar()->to_f16(in.data(), want.data(), n);
  std::vector<std::pair<const char*, const detail::AttentionKernels*>> tables;
  if (detected_simd_level() >= SimdLevel::kAvx2) tables.emplace_back("avx2", detail::attention_kernels_avx2());
  if (detected_simd_level() >= SimdLevel::kAvx512) tables.emplace_back("avx512", detail::attention_kernels_avx512());
  for (const auto& [name, k] : tables)
    for (const int64_t len : {n, n - 1, n - 7}) {
      std::vector<uint16_t> got(in.size(), 0xbeef);
      k->to_f16(in.data(), got.data(), len);
      for (int64_t i = 0; i < len; ++i) {
        if (std::isnan(in[static_cast<size_t>(i)])) {
          EXPECT_TRUE(std::isnan(f16_to_f32(got[static_cast<size_t>(i)]))) << name;
          continue;
        }
        ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]) << name << " x=" << in[static_cast<size_t>(i)];
      }
      for (int64_t i = len; i < n; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], 0xbeef) << name << " wrote past n";
    }
  // And the scalar one against the definition: every half value converts back to itself.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_f16(f), h);
    }
  }
}

}  // namespace
}  // namespace sy::cpu
