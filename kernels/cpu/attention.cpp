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
// Each row's keys are taken in chunks of this many (the last one shorter): per chunk its
// own maximum, exponentials, sum and weighted values, then the chunks merged in order
// (finish). A row's arithmetic depends only on its key count, so the split of the work
// cannot change it; rows of at most one chunk compute as a single pass would.
constexpr int64_t kKeysPerChunk = 128;

// One task: a run of query rows of one sequence for query heads [head_begin, head_end)
// of one KV head's group (GQA), over key chunks [chunk_begin, chunk_end) of each row (all
// of them: the task also finishes its rows). A whole group reads each key and value once
// per task. A step with few tasks (a decode step) splits them by row and chunk, and
// where that is still too few, by head; the chunks' partial results then wait in a
// scratch buffer for a second pass that finishes each row.
struct Task {
  int32_t seq;
  int32_t kv_head;
  int32_t head_begin;
  int32_t head_end;
  int64_t row_begin;
  int64_t row_end;
  int64_t chunk_begin = 0;
  int64_t chunk_end = -1;  // -1: every chunk, then finish
};

// One chunk's result for one row and head: the maximum score, Σ exp(score − max), and
// (beside it, d floats) Σ exp(score − max) · value.
struct Partial {
  float max;
  double sum;
};

int64_t chunks_of(int64_t n_keys) { return n_keys <= 0 ? 0 : (n_keys + kKeysPerChunk - 1) / kKeysPerChunk; }

// The output row (and log-sum-exp) of one head from its chunks' partials, in chunk order.
void finish(const Partial* parts, const float* accs, int64_t n_chunks, int d, float* out, float* lse) {
  if (n_chunks == 1) {
    const float inv = static_cast<float>(1.0 / parts[0].sum);
    for (int i = 0; i < d; ++i) out[i] = accs[i] * inv;
    if (lse) *lse = static_cast<float>(parts[0].max + std::log(parts[0].sum));
    return;
  }
  float m = -INFINITY;
  for (int64_t c = 0; c < n_chunks; ++c) m = std::max(m, parts[c].max);
  double sum = 0;
  for (int i = 0; i < d; ++i) out[i] = 0.0f;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const double f = std::exp(static_cast<double>(parts[c].max) - m);
    sum += f * parts[c].sum;
    const float ff = static_cast<float>(f);
    for (int i = 0; i < d; ++i) out[i] += ff * accs[c * d + i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = 0; i < d; ++i) out[i] *= inv;
  if (lse) *lse = static_cast<float>(m + std::log(sum));
}

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

namespace {

// The partial result of keys [j_begin, j_end) of a row for one query head q: acc (d
// floats) and the returned maximum and sum. `scores` holds at least j_end − j_begin.
Partial attend_chunk(const AttentionParams& p, const AttentionKernels& kern, const int32_t* blocks, int kv_head, const float* q,
                     int64_t j_begin, int64_t j_end, float* scores, float* acc) {
  const int d = p.head_dim;
  const int64_t bs = p.table.block_size;
  const bool half = p.cache.k16 != nullptr;
  // Calls f(cache offset, first key, count) for each run of the keys within one block.
  auto runs = [&](auto&& f) {
    for (int64_t j = j_begin; j < j_end;) {
      const int64_t slot = j % bs, n = std::min<int64_t>(bs - slot, j_end - j);
      f(((static_cast<int64_t>(blocks[j / bs]) * p.n_kv_heads + kv_head) * bs + slot) * d, j, n);
      j += n;
    }
  };
  float max_score = -INFINITY;
  runs([&](int64_t at, int64_t j, int64_t n) {
    max_score = half ? kern.scores_f16(q, p.cache.k16 + at, n, d, p.scale, scores + (j - j_begin), max_score)
                     : kern.scores(q, p.cache.k + at, n, d, p.scale, scores + (j - j_begin), max_score);
  });
  const double sum = kern.exp_sum(scores, j_end - j_begin, max_score);
  std::fill_n(acc, d, 0.0f);
  runs([&](int64_t at, int64_t j, int64_t n) {
    if (half)
      kern.accumulate_f16(scores + (j - j_begin), p.cache.v16 + at, n, d, acc);
    else
      kern.accumulate(scores + (j - j_begin), p.cache.v + at, n, d, acc);
  });
  return {max_score, sum};
}

}  // namespace

void paged_attention(const AttentionParams& p, ThreadPool& pool) {
  const int group = p.n_heads / p.n_kv_heads;
  const int d = p.head_dim;
  std::vector<Task> tasks;
  for (int32_t s = 0; s < p.table.num_seqs; ++s)
    for (int32_t h = 0; h < p.n_kv_heads; ++h)
      for (int64_t r = p.cu_seqlens[s]; r < p.cu_seqlens[s + 1]; r += kQueriesPerTask)
        tasks.push_back(
            {s, h, h * group, (h + 1) * group, r, std::min<int64_t>(r + kQueriesPerTask, p.cu_seqlens[s + 1])});
  // Few tasks (a decode step): one a row and chunk, then one a head too if still few.
  const int64_t rows = p.cu_seqlens[p.table.num_seqs];
  const bool split = static_cast<int64_t>(tasks.size()) < 2 * pool.size();
  int64_t max_chunks = 0;
  if (split) {
    std::vector<Task> parts;
    for (const Task& t : tasks)
      for (int64_t row = t.row_begin; row < t.row_end; ++row) {
        const int64_t n = chunks_of(std::min<int64_t>(p.positions[row] + 1, p.table.context_len(t.seq)));
        max_chunks = std::max(max_chunks, n);
        for (int64_t c = 0; c < std::max<int64_t>(n, 1); ++c) parts.push_back({t.seq, t.kv_head, t.head_begin, t.head_end, row, row + 1, c, c + 1});
      }
    if (group > 1 && static_cast<int64_t>(parts.size()) < 2 * pool.size()) {
      std::vector<Task> heads;
      for (const Task& t : parts)
        for (int32_t head = t.head_begin; head < t.head_end; ++head) {
          Task one = t;
          one.head_begin = head, one.head_end = head + 1;
          heads.push_back(one);
        }
      parts = std::move(heads);
    }
    tasks = std::move(parts);
  }
  const AttentionKernels& kern = kernels();
  // Split: each row-head's chunk partials, [row][head][chunk] (and d floats each).
  std::vector<Partial> partials(split ? static_cast<size_t>(rows * p.n_heads * max_chunks) : 0);
  std::vector<float> accs(partials.size() * static_cast<size_t>(d));
  auto zero_row = [&](int64_t row, int head) {  // a shard that holds none of this row's keys
    std::fill_n(p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d, d, 0.0f);
    if (p.lse) p.lse[row * p.n_heads + head] = -INFINITY;
  };

  pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& task = tasks[static_cast<size_t>(ti)];
    const int64_t ctx = p.table.context_len(task.seq);
    const int32_t* blocks = p.table.indices + p.table.indptr[task.seq];
    thread_local std::vector<float> scores, acc;
    thread_local std::vector<Partial> part;
    scores.resize(static_cast<size_t>(kKeysPerChunk));
    for (int64_t row = task.row_begin; row < task.row_end; ++row) {
      const int64_t n_keys = std::min<int64_t>(p.positions[row] + 1, ctx);  // causal
      const int64_t n_chunks = chunks_of(n_keys);
      const int64_t c_begin = task.chunk_end < 0 ? 0 : task.chunk_begin, c_end = task.chunk_end < 0 ? n_chunks : std::min(task.chunk_end, n_chunks);
      for (int head = task.head_begin; head < task.head_end; ++head) {
        if (n_keys <= 0) {
          zero_row(row, head);
          continue;
        }
        const float* q = p.q + row * p.q_stride + static_cast<int64_t>(head) * d;
        Partial* pp = nullptr;
        float* pa = nullptr;
        if (split) {
          const size_t at = static_cast<size_t>((row * p.n_heads + head) * max_chunks);
          pp = partials.data() + at;
          pa = accs.data() + at * static_cast<size_t>(d);
        } else {
          part.resize(static_cast<size_t>(n_chunks));
          acc.resize(static_cast<size_t>(n_chunks * d));
          pp = part.data();
          pa = acc.data();
        }
        for (int64_t c = c_begin; c < c_end; ++c)
          pp[c] = attend_chunk(p, kern, blocks, task.kv_head, q, c * kKeysPerChunk, std::min(n_keys, (c + 1) * kKeysPerChunk),
                               scores.data(), pa + c * d);
        if (!split)
          finish(pp, pa, n_chunks, d, p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d,
                 p.lse ? p.lse + row * p.n_heads + head : nullptr);
      }
    }
  });
  if (!split) return;
  // Every row-head's chunks are in: finish them.
  pool.parallel_for(rows * p.n_heads, [&](int64_t i) {
    const int64_t row = i / p.n_heads;
    const int head = static_cast<int>(i % p.n_heads);
    int32_t seq = 0;
    while (p.cu_seqlens[seq + 1] <= row) ++seq;
    const int64_t n_keys = std::min<int64_t>(p.positions[row] + 1, p.table.context_len(seq));
    if (n_keys <= 0) return;  // zeroed by its task
    const size_t at = static_cast<size_t>((row * p.n_heads + head) * max_chunks);
    finish(partials.data() + at, accs.data() + at * static_cast<size_t>(d), chunks_of(n_keys), d,
           p.out + row * static_cast<int64_t>(p.n_heads) * d + static_cast<int64_t>(head) * d, p.lse ? p.lse + i : nullptr);
  });
}

}  // namespace sy::cpu
