// Partial attention (kernels/cpu/attention.h with lse) and its merge (attention_merge.h)
// against unsharded attention: a sequence's keys split over 2, 3 or 4 shards, in
// contiguous ranges or interleaved token by token (the two ways decode context parallelism
// can shard the KV cache), each shard in its own paged cache with its own block table;
// the decode rows' partial states merged must equal attention over all keys. Fresh random
// inputs, NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_merge.h"
#include "kernels/cpu/thread_pool.h"

namespace sy {
namespace {

constexpr int kHeads = 8, kKvHeads = 2, kDim = 64, kBlock = 16, kRows = 3;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Attended {
  std::vector<float> out, lse;  // [kRows, kHeads, kDim], [kRows, kHeads]
};

// Attention of kRows query rows, all at position `pos`, over the keys and values `k`, `v`
// ([n, kKvHeads * kDim]) laid into a fresh paged cache in order.
Attended attend(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t n, int32_t pos) {
  const int32_t blocks = static_cast<int32_t>((n + kBlock - 1) / kBlock);
  const size_t cache = static_cast<size_t>(std::max(blocks, 1)) * kKvHeads * kBlock * kDim;
  std::vector<float> kc(cache, kNaN), vc(cache, kNaN);
  std::vector<int32_t> indptr = {0, blocks}, indices(static_cast<size_t>(blocks)), last = {static_cast<int32_t>(n - (blocks - 1) * kBlock)};
  for (int32_t b = 0; b < blocks; ++b) indices[static_cast<size_t>(b)] = blocks - 1 - b;  // not in order
  if (n == 0) last = {0};
  cpu::AttentionParams p;
  p.n_heads = kHeads;
  p.n_kv_heads = kKvHeads;
  p.head_dim = kDim;
  p.scale = 0.125f;
  p.cache = {kc.data(), vc.data()};
  p.table = {indptr.data(), indices.data(), last.data(), 1, kBlock};
  // Keys and values in: one "token row" each, at shard-local positions 0..n-1.
  std::vector<int32_t> kv_pos(static_cast<size_t>(n)), kv_cu = {0, static_cast<int32_t>(n)};
  for (int64_t i = 0; i < n; ++i) kv_pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  p.k_new = k.data();
  p.v_new = v.data();
  p.kv_stride = kKvHeads * kDim;
  p.cu_seqlens = kv_cu.data();
  p.positions = kv_pos.data();
  cpu::write_kv(p);
  // The query rows.
  Attended a;
  a.out.assign(static_cast<size_t>(kRows) * kHeads * kDim, kNaN);
  a.lse.assign(static_cast<size_t>(kRows) * kHeads, kNaN);
  std::vector<int32_t> q_pos(kRows, pos), q_cu = {0, kRows};
  p.q = q.data();
  p.q_stride = kHeads * kDim;
  p.out = a.out.data();
  p.lse = a.lse.data();
  p.cu_seqlens = q_cu.data();
  p.positions = q_pos.data();
  cpu::paged_attention(p, cpu::ThreadPool::global());
  return a;
}

std::vector<float> rows_of(const std::vector<float>& kv, const std::vector<int64_t>& tokens) {
  std::vector<float> out;
  for (const int64_t t : tokens) out.insert(out.end(), kv.begin() + t * kKvHeads * kDim, kv.begin() + (t + 1) * kKvHeads * kDim);
  return out;
}

double max_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(PartialAttention, ShardsMergedByLseEqualAttentionOverAllKeys) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
  };
  for (const int64_t ctx : {1, 2, 17, 100, 333}) {
    const auto k = random(static_cast<size_t>(ctx) * kKvHeads * kDim), v = random(k.size());
    const auto q = random(static_cast<size_t>(kRows) * kHeads * kDim);
    const auto pos = static_cast<int32_t>(ctx - 1);  // decode rows: every key is visible
    const Attended whole = attend(q, k, v, ctx, pos);
    // The lse against a double-precision reference of row 0, head 0.
    {
      double m = -INFINITY, s = 0;
      std::vector<double> sc(static_cast<size_t>(ctx));
      for (int64_t t = 0; t < ctx; ++t) {
        double dot = 0;
        for (int i = 0; i < kDim; ++i) dot += static_cast<double>(q[static_cast<size_t>(i)]) * k[static_cast<size_t>(t * kKvHeads * kDim + i)];
        sc[static_cast<size_t>(t)] = dot * 0.125;
        m = std::max(m, sc[static_cast<size_t>(t)]);
      }
      for (const double x : sc) s += std::exp(x - m);
      EXPECT_NEAR(whole.lse[0], m + std::log(s), 1e-4 * (1 + std::fabs(m))) << ctx << " keys";
    }
    for (const int parts : {2, 3, 4})
      for (const bool interleaved : {false, true}) {
        SCOPED_TRACE(std::to_string(ctx) + " keys over " + std::to_string(parts) + (interleaved ? " interleaved" : " contiguous") + " shards");
        std::vector<Attended> partial;
        for (int s = 0; s < parts; ++s) {
          std::vector<int64_t> tokens;
          for (int64_t t = 0; t < ctx; ++t)
            if (interleaved ? t % parts == s : t * parts / ctx == s) tokens.push_back(t);
          partial.push_back(attend(q, rows_of(k, tokens), rows_of(v, tokens), static_cast<int64_t>(tokens.size()), pos));
        }
        std::vector<const float*> outs, lses;
        for (const auto& a : partial) {
          outs.push_back(a.out.data());
          lses.push_back(a.lse.data());
        }
        std::vector<float> out(whole.out.size(), kNaN), lse(whole.lse.size(), kNaN);
        cpu::merge_attention_states(outs.data(), lses.data(), parts, out.data(), lse.data(), kRows, kHeads, kDim);
        EXPECT_LT(max_rel(out, whole.out), 1e-5);
        EXPECT_LT(max_rel(lse, whole.lse), 1e-5);
      }
  }
}

TEST(PartialAttention, PartsThatSawNoKeyWeighNothing) {
  std::vector<float> a(kHeads * kDim, 1.0f), b(kHeads * kDim, kNaN);  // b's values are never read
  std::vector<float> la(kHeads, 0.5f), lb(kHeads, -INFINITY);
  const float* outs[] = {a.data(), b.data()};
  const float* lses[] = {la.data(), lb.data()};
  std::vector<float> out(a.size(), kNaN), lse(la.size(), kNaN);
  cpu::merge_attention_states(outs, lses, 2, out.data(), lse.data(), 1, kHeads, kDim);
  for (const float x : out) EXPECT_EQ(x, 1.0f);
  for (const float x : lse) EXPECT_FLOAT_EQ(x, 0.5f);
  const float* none_outs[] = {b.data(), b.data()};
  const float* none_lses[] = {lb.data(), lb.data()};
  cpu::merge_attention_states(none_outs, none_lses, 2, out.data(), lse.data(), 1, kHeads, kDim);
  for (const float x : out) EXPECT_EQ(x, 0.0f);
  for (const float x : lse) EXPECT_EQ(x, -INFINITY);
}

}  // namespace
}  // namespace sy
