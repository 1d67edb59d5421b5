#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace {

constexpr int64_t kQueriesPerTask = 16;

// Eight independent partial sums let the compiler vectorize the reduction without
// -ffast-math (which would reorder every other float sum too).
inline float dot(const float* a, const float* b, int n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += a[i + j] * b[i + j];
  float s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// One task: a run of query rows of one sequence for one KV head and the query heads
// that share it (GQA), so each key and value is read once per group.
struct Task {
  int32_t seq;
  int32_t kv_head;
  int64_t row_begin;
  int64_t row_end;
};

}  // namespace

void write_kv(const AttentionParams& p) {
  const int64_t d = p.head_dim;
  const int64_t bs = p.table.block_size;
  for (int32_t s = 0; s < p.table.num_seqs; ++s) {
    for (int64_t t = p.cu_seqlens[s]; t < p.cu_seqlens[s + 1]; ++t) {
      const int64_t pos = p.positions[t];
      const int64_t block = p.table.block_of(s, pos);
      if (block < 0) continue;  // a block another context-parallel rank holds
      const int64_t slot = p.table.slot_of(pos);
      for (int64_t h = 0; h < p.n_kv_heads; ++h) {
        const int64_t dst = ((block * p.n_kv_heads + h) * bs + slot) * d;
        std::memcpy(p.cache.k + dst, p.k_new + t * p.kv_stride + h * d, static_cast<size_t>(d) * 4);
        std::memcpy(p.cache.v + dst, p.v_new + t * p.kv_stride + h * d, static_cast<size_t>(d) * 4);
      }
    }
  }
}

void paged_attention(const AttentionParams& p, ThreadPool& pool) {
  std::vector<Task> tasks;
  for (int32_t s = 0; s < p.table.num_seqs; ++s)
    for (int32_t h = 0; h < p.n_kv_heads; ++h)
      for (int64_t r = p.cu_seqlens[s]; r < p.cu_seqlens[s + 1]; r += kQueriesPerTask)
        tasks.push_back({s, h, r, std::min<int64_t>(r + kQueriesPerTask, p.cu_seqlens[s + 1])});

  const int group = p.n_heads / p.n_kv_heads;
  const int d = p.head_dim;
  const int32_t bs = p.table.block_size;

  pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& task = tasks[static_cast<size_t>(ti)];
    const int64_t ctx = p.table.context_len(task.seq);
    const int32_t* blocks = p.table.indices + p.table.indptr[task.seq];
    thread_local std::vector<float> scores;
    thread_local std::vector<float> acc;
    scores.resize(static_cast<size_t>(ctx));
    acc.resize(static_cast<size_t>(d));
    for (int64_t row = task.row_begin; row < task.row_end; ++row) {
      const int64_t n_keys = std::min<int64_t>(p.positions[row] + 1, ctx);  // causal
      for (int g = 0; g < group; ++g) {
        const int head = task.kv_head * group + g;
        if (n_keys <= 0) {  // a shard that holds none of this row's keys
          std::fill_n(p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d, d, 0.0f);
          if (p.lse) p.lse[row * p.n_heads + head] = -INFINITY;
          continue;
        }
        const float* q = p.q + row * p.q_stride + static_cast<int64_t>(head) * d;
        float max_score = -INFINITY;
        for (int64_t j0 = 0; j0 < n_keys; j0 += bs) {
          const float* k = p.cache.k + ((static_cast<int64_t>(blocks[j0 / bs]) * p.n_kv_heads + task.kv_head) * bs) * d;
          const int64_t n = std::min<int64_t>(bs, n_keys - j0);
          for (int64_t j = 0; j < n; ++j) {
            const float sc = dot(q, k + j * d, d) * p.scale;
            scores[static_cast<size_t>(j0 + j)] = sc;
            max_score = std::max(max_score, sc);
          }
        }
        double denom = 0;
        for (int64_t j = 0; j < n_keys; ++j) {
          const float e = std::exp(scores[static_cast<size_t>(j)] - max_score);
          scores[static_cast<size_t>(j)] = e;
          denom += e;
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float* a = acc.data();
        for (int64_t j0 = 0; j0 < n_keys; j0 += bs) {
          const float* v = p.cache.v + ((static_cast<int64_t>(blocks[j0 / bs]) * p.n_kv_heads + task.kv_head) * bs) * d;
          const int64_t n = std::min<int64_t>(bs, n_keys - j0);
          for (int64_t j = 0; j < n; ++j) {
            const float w = scores[static_cast<size_t>(j0 + j)];
            const float* vj = v + j * d;
            for (int i = 0; i < d; ++i) a[i] += w * vj[i];
          }
        }
        float* out = p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d;
        const float inv = static_cast<float>(1.0 / denom);
        for (int i = 0; i < d; ++i) out[i] = a[i] * inv;
        if (p.lse) p.lse[row * p.n_heads + head] = static_cast<float>(max_score + std::log(denom));
      }
    }
  });
}

}  // namespace sy::cpu
