#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/half.h"
#include "kernels/cpu/attention_kernels.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace detail {

namespace {

// Eight independent partial sums let the compiler vectorize the reduction without
// -ffast-math (which would reorder every other float sum too).
template <class T>
float dot(const float* a, const T* b, int n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += a[i + j] * widen(b[i + j]);
  float s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (; i < n; ++i) s += a[i] * widen(b[i]);
  return s;
}

template <class T>
float scores_scalar(const float* q, const T* k, int64_t n, int d, float scale, float* s, float running_max) {
  for (int64_t j = 0; j < n; ++j) {
    s[j] = dot(q, k + j * d, d) * scale;
    running_max = std::max(running_max, s[j]);
  }
  return running_max;
}

template <class T>
void accumulate_scalar(const float* w, const T* v, int64_t n, int d, float* acc) {
  for (int64_t j = 0; j < n; ++j)
    for (int i = 0; i < d; ++i) acc[i] += w[j] * widen(v[j * d + i]);
}

void to_f16_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

double exp_sum_scalar(float* s, int64_t n, float max) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - max));
  return sum;
}

const AttentionKernels kScalar = {scores_scalar<float>,    accumulate_scalar<float>,    exp_sum_scalar,
                                  scores_scalar<uint16_t>, accumulate_scalar<uint16_t>, to_f16_scalar};

}  // namespace

const AttentionKernels* attention_kernels_scalar() { return &kScalar; }

#if !defined(SY_LINEAR_X86)
const AttentionKernels* attention_kernels_avx2() { return nullptr; }
const AttentionKernels* attention_kernels_avx512() { return nullptr; }
#endif

}  // namespace detail

namespace {

using detail::AttentionKernels;

constexpr int64_t kQueriesPerTask = 16;

// One task: a run of query rows of one sequence for query heads [head_begin, head_end)
// of one KV head's group (GQA). A whole group reads each key and value once per task;
// a decode step with fewer groups than threads splits them into single heads. Every
// head's arithmetic is the same either way, so a row's output does not depend on the
// split, nor on what else is in the batch.
struct Task {
  int32_t seq;
  int32_t kv_head;
  int32_t head_begin;
  int32_t head_end;
  int64_t row_begin;
  int64_t row_end;
};

const AttentionKernels& kernels() {
  const AttentionKernels* k = nullptr;
  const SimdLevel level = simd_level();
  if (level >= SimdLevel::kAvx512) k = detail::attention_kernels_avx512();
  if (!k && level >= SimdLevel::kAvx2) k = detail::attention_kernels_avx2();
  return k ? *k : *detail::attention_kernels_scalar();
}

}  // namespace

void write_kv(const AttentionParams& p) { write_kv(p, 0, p.cu_seqlens[p.table.num_seqs]); }

void write_kv(const AttentionParams& p, int64_t row_begin, int64_t row_end) {
  const auto to_f16 = kernels().to_f16;
  const int64_t d = p.head_dim;
  const int64_t bs = p.table.block_size;
  for (int32_t s = 0; s < p.table.num_seqs; ++s) {
    const int64_t end = std::min<int64_t>(p.cu_seqlens[s + 1], row_end);
    for (int64_t t = std::max<int64_t>(p.cu_seqlens[s], row_begin); t < end; ++t) {
      const int64_t pos = p.positions[t];
      const int64_t block = p.table.block_of(s, pos);
      if (block < 0) continue;  // a block another context-parallel rank holds
      const int64_t slot = p.table.slot_of(pos);
      for (int64_t h = 0; h < p.n_kv_heads; ++h) {
        const int64_t dst = ((block * p.n_kv_heads + h) * bs + slot) * d;
        const float* k = p.k_new + t * p.kv_stride + h * d;
        const float* v = p.v_new + t * p.kv_stride + h * d;
        if (p.cache.k16) {
          to_f16(k, p.cache.k16 + dst, d);
          to_f16(v, p.cache.v16 + dst, d);
        } else {
          std::memcpy(p.cache.k + dst, k, static_cast<size_t>(d) * 4);
          std::memcpy(p.cache.v + dst, v, static_cast<size_t>(d) * 4);
        }
      }
    }
  }
}

void paged_attention(const AttentionParams& p, ThreadPool& pool) {
  const int group = p.n_heads / p.n_kv_heads;
  std::vector<Task> tasks;
  for (int32_t s = 0; s < p.table.num_seqs; ++s)
    for (int32_t h = 0; h < p.n_kv_heads; ++h)
      for (int64_t r = p.cu_seqlens[s]; r < p.cu_seqlens[s + 1]; r += kQueriesPerTask)
        tasks.push_back(
            {s, h, h * group, (h + 1) * group, r, std::min<int64_t>(r + kQueriesPerTask, p.cu_seqlens[s + 1])});
  if (group > 1 && static_cast<int64_t>(tasks.size()) < 2 * pool.size()) {
    std::vector<Task> heads;
    for (const Task& t : tasks)
      for (int32_t head = t.head_begin; head < t.head_end; ++head)
        heads.push_back({t.seq, t.kv_head, head, head + 1, t.row_begin, t.row_end});
    tasks = std::move(heads);
  }
  const AttentionKernels& kern = kernels();
  const bool half = p.cache.k16 != nullptr;
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
      for (int head = task.head_begin; head < task.head_end; ++head) {
        if (n_keys <= 0) {  // a shard that holds none of this row's keys
          std::fill_n(p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d, d, 0.0f);
          if (p.lse) p.lse[row * p.n_heads + head] = -INFINITY;
          continue;
        }
        const float* q = p.q + row * p.q_stride + static_cast<int64_t>(head) * d;
        float max_score = -INFINITY;
        for (int64_t j0 = 0; j0 < n_keys; j0 += bs) {
          const int64_t at = ((static_cast<int64_t>(blocks[j0 / bs]) * p.n_kv_heads + task.kv_head) * bs) * d;
          const int64_t n = std::min<int64_t>(bs, n_keys - j0);
          max_score = half ? kern.scores_f16(q, p.cache.k16 + at, n, d, p.scale, scores.data() + j0, max_score)
                           : kern.scores(q, p.cache.k + at, n, d, p.scale, scores.data() + j0, max_score);
        }
        const double denom = kern.exp_sum(scores.data(), n_keys, max_score);
        std::fill(acc.begin(), acc.end(), 0.0f);
        float* a = acc.data();
        for (int64_t j0 = 0; j0 < n_keys; j0 += bs) {
          const int64_t at = ((static_cast<int64_t>(blocks[j0 / bs]) * p.n_kv_heads + task.kv_head) * bs) * d;
          const int64_t n = std::min<int64_t>(bs, n_keys - j0);
          if (half)
            kern.accumulate_f16(scores.data() + j0, p.cache.v16 + at, n, d, a);
          else
            kern.accumulate(scores.data() + j0, p.cache.v + at, n, d, a);
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
