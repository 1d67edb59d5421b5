#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace {

constexpr int64_t kQueriesPerTask = 16;

inline float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// One task: a run of query rows of one sequence for one query head.
struct Task {
  int32_t seq;
  int32_t head;
  int64_t row_begin;
  int64_t row_end;
};

}  // namespace

void write_kv(const AttentionParams& p) {
  const int64_t head_bytes = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
  for (int32_t s = 0; s < p.table.num_seqs; ++s) {
    for (int64_t t = p.cu_seqlens[s]; t < p.cu_seqlens[s + 1]; ++t) {
      const int64_t pos = p.positions[t];
      const int64_t slot = static_cast<int64_t>(p.table.block_of(s, pos)) * p.table.block_size + p.table.slot_of(pos);
      std::memcpy(p.cache.k + slot * head_bytes, p.k_new + t * p.kv_stride, static_cast<size_t>(head_bytes) * 4);
      std::memcpy(p.cache.v + slot * head_bytes, p.v_new + t * p.kv_stride, static_cast<size_t>(head_bytes) * 4);
    }
  }
}

void paged_attention(const AttentionParams& p, ThreadPool& pool) {
  std::vector<Task> tasks;
  for (int32_t s = 0; s < p.table.num_seqs; ++s)
    for (int32_t h = 0; h < p.n_heads; ++h)
      for (int64_t r = p.cu_seqlens[s]; r < p.cu_seqlens[s + 1]; r += kQueriesPerTask)
        tasks.push_back({s, h, r, std::min<int64_t>(r + kQueriesPerTask, p.cu_seqlens[s + 1])});

  const int group = p.n_heads / p.n_kv_heads;
  const int64_t token_stride = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
  const int d = p.head_dim;

  pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& task = tasks[static_cast<size_t>(ti)];
    const int kvh = task.head / group;
    const int64_t ctx = p.table.context_len(task.seq);
    std::vector<float> scores(static_cast<size_t>(ctx));
    std::vector<float> acc(static_cast<size_t>(d));
    for (int64_t row = task.row_begin; row < task.row_end; ++row) {
      const float* q = p.q + row * p.q_stride + static_cast<int64_t>(task.head) * d;
      const int64_t n_keys = std::min<int64_t>(p.positions[row] + 1, ctx);  // causal
      float max_score = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        const int64_t slot = static_cast<int64_t>(p.table.block_of(task.seq, j)) * p.table.block_size + p.table.slot_of(j);
        const float sc = dot(q, p.cache.k + slot * token_stride + static_cast<int64_t>(kvh) * d, d) * p.scale;
        scores[static_cast<size_t>(j)] = sc;
        max_score = std::max(max_score, sc);
      }
      double denom = 0;
      for (int64_t j = 0; j < n_keys; ++j) {
        const float e = std::exp(scores[static_cast<size_t>(j)] - max_score);
        scores[static_cast<size_t>(j)] = e;
        denom += e;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const int64_t slot = static_cast<int64_t>(p.table.block_of(task.seq, j)) * p.table.block_size + p.table.slot_of(j);
        const float* v = p.cache.v + slot * token_stride + static_cast<int64_t>(kvh) * d;
        const float w = scores[static_cast<size_t>(j)];
        for (int i = 0; i < d; ++i) acc[static_cast<size_t>(i)] += w * v[i];
      }
      float* out = p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(task.head) * d;
      const float inv = static_cast<float>(1.0 / denom);
      for (int i = 0; i < d; ++i) out[i] = acc[static_cast<size_t>(i)] * inv;
    }
  });
}

}  // namespace sy::cpu
