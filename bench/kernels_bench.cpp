// CPU kernel micro-benchmarks (Google Benchmark): the GEMM shapes of a Qwen3-0.6B layer,
// products with weights in their stored type (kernels/cpu/linear.h) in the decode and
// prefill shapes of Qwen3-0.6B and Llama-3-8B (in cache and, for decode, from memory),
// bare memory reads and parallel_for calls (the pool's share), and paged decode attention
// over a long context.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/invariant_gemm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/thread_pool.h"

namespace {

// More than the last-level cache of any machine we bench on (the H200 host's Xeon: 105 MB).
constexpr double kFromMemoryBytes = 512e6;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// y[m, n] = x[m, k] · w[n, k]ᵀ through OpenBLAS or the batch-invariant kernel
// (kernels/cpu/invariant_gemm.h, the CPU backend's default); reports FLOP/s.
void BM_MatmulNt(benchmark::State& state, bool invariant) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const auto x = random_floats(static_cast<size_t>(m * k), 1);
  const auto w = random_floats(static_cast<size_t>(n * k), 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  for (auto _ : state) {
    if (invariant)
      sy::cpu::matmul_nt_invariant(x.data(), w.data(), y.data(), m, n, k, false, sy::cpu::ThreadPool::global());
    else
      sy::cpu::matmul_nt(x.data(), w.data(), y.data(), m, n, k);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
// Qwen3-0.6B: QKV (1024 → 4096), gate+up (1024 → 6144), down (3072 → 1024); decode and prefill rows.
#define SY_GEMM_SHAPES                                                                                     \
  Args({1, 4096, 1024})->Args({4, 4096, 1024})->Args({16, 4096, 1024})->Args({1, 6144, 1024})->Args({1, 1024, 3072}) \
      ->Args({256, 4096, 1024})->Args({256, 6144, 1024})->Args({256, 1024, 3072})->UseRealTime()
BENCHMARK_CAPTURE(BM_MatmulNt, openblas, false)->SY_GEMM_SHAPES;
BENCHMARK_CAPTURE(BM_MatmulNt, invariant, true)->SY_GEMM_SHAPES;

// Random weights [n, k] stored as `type`. The 4- to 6-bit block types get random bytes
// with a small f16 scale in every block (the values do not change the time).
std::vector<uint8_t> random_weights(sy::DType type, int64_t n, int64_t k) {
  std::vector<uint8_t> out;
  auto random_blocks = [&](size_t block_bytes, int values, size_t scale_offset) {
    out.resize(static_cast<size_t>(n * k / values) * block_bytes);
    std::mt19937 rng(9);
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    const uint16_t d = sy::f32_to_f16(1e-3f);
    for (size_t b = 0; b < out.size(); b += block_bytes) std::memcpy(&out[b + scale_offset], &d, 2);
  };
  switch (type) {
    case sy::DType::kQ4_0: random_blocks(sizeof(sy::BlockQ4_0), sy::kQ4_0BlockSize, offsetof(sy::BlockQ4_0, d)); return out;
    case sy::DType::kQ4_K: random_blocks(sizeof(sy::BlockQ4_K), sy::kQKBlockSize, offsetof(sy::BlockQ4_K, d)); return out;
    case sy::DType::kQ5_K: random_blocks(sizeof(sy::BlockQ5_K), sy::kQKBlockSize, offsetof(sy::BlockQ5_K, d)); return out;
    case sy::DType::kQ6_K: random_blocks(sizeof(sy::BlockQ6_K), sy::kQKBlockSize, offsetof(sy::BlockQ6_K, d)); return out;
    default: break;
  }
  const auto f = random_floats(static_cast<size_t>(n * k), 7);
  if (type == sy::DType::kQ8_0) {
    out.resize(static_cast<size_t>(n * k / sy::kQ8_0BlockSize) * sizeof(sy::BlockQ8_0));
    std::mt19937 rng(8);
    for (size_t b = 0; b < out.size() / sizeof(sy::BlockQ8_0); ++b) {
      sy::BlockQ8_0 blk;
      blk.d = sy::f32_to_f16(1e-3f);
      for (auto& q : blk.qs) q = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      std::memcpy(&out[b * sizeof(blk)], &blk, sizeof(blk));
    }
    return out;
  }
  if (type == sy::DType::kF32) {
    out.resize(f.size() * 4);
    std::memcpy(out.data(), f.data(), out.size());
    return out;
  }
  out.resize(f.size() * 2);
  for (size_t i = 0; i < f.size(); ++i) {
    const uint16_t h = type == sy::DType::kBF16 ? sy::f32_to_bf16(f[i]) : sy::f32_to_f16(f[i]);
    std::memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

// y[m, n] = x[m, k] · W[n, k]ᵀ with W in its stored type (kernels/cpu/linear.h) at the
// SIMD level chosen (SWITCHYARD_CPU_SIMD lowers it); `fast`: LinearOptions::fast_prefill
// (rows >= kFastPrefillRows take dequantized tiles through sgemm). bytes/s counts the weight
// bytes once per call: decode streams them once whatever m is.
void BM_Linear(benchmark::State& state, sy::DType type, bool fast) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const auto x = random_floats(static_cast<size_t>(m * k), 1);
  const auto w = random_weights(type, n, k);
  std::vector<float> y(static_cast<size_t>(m * n));
  const sy::cpu::WeightSlice slice{type, n, w.data(), w.size() / static_cast<size_t>(n), 0};
  sy::cpu::LinearOptions opt;
  opt.fast_prefill = fast;
  for (auto _ : state) {
    sy::cpu::linear(x.data(), m, k, {&slice, 1}, y.data(), n, sy::cpu::ThreadPool::global(), opt);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(w.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(sy::cpu::simd_level_name(sy::cpu::simd_level()));
}
// Qwen3-0.6B: QKV (1024 → 4096), O (2048 → 1024), gate+up (1024 → 6144), down (3072 →
// 1024), LM head (1024 → 151936). Llama-3-8B: QKV (4096 → 6144), O (4096 → 4096),
// gate+up (4096 → 28672), down (14336 → 4096), LM head (4096 → 128256).
#define SY_LINEAR_SHAPES(M)                                                                                   \
  Args({M, 4096, 1024})->Args({M, 1024, 2048})->Args({M, 6144, 1024})->Args({M, 1024, 3072})                   \
      ->Args({M, 151936, 1024})->Args({M, 6144, 4096})->Args({M, 4096, 4096})->Args({M, 28672, 4096})          \
      ->Args({M, 4096, 14336})->Args({M, 128256, 4096})->UseRealTime()
BENCHMARK_CAPTURE(BM_Linear, bf16_decode, sy::DType::kBF16, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, q8_0_decode, sy::DType::kQ8_0, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, f16_decode, sy::DType::kF16, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, f32_decode, sy::DType::kF32, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, q4_0_decode, sy::DType::kQ4_0, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, q4_k_decode, sy::DType::kQ4_K, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, q5_k_decode, sy::DType::kQ5_K, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, q6_k_decode, sy::DType::kQ6_K, false)->SY_LINEAR_SHAPES(1);
BENCHMARK_CAPTURE(BM_Linear, bf16_batch8, sy::DType::kBF16, false)->SY_LINEAR_SHAPES(8);
BENCHMARK_CAPTURE(BM_Linear, q8_0_batch8, sy::DType::kQ8_0, false)->SY_LINEAR_SHAPES(8);
// Prefill: the batch-invariant kernels (--numerics deterministic) and the sgemm tiles.
BENCHMARK_CAPTURE(BM_Linear, bf16_prefill_invariant, sy::DType::kBF16, false)->SY_LINEAR_SHAPES(512);
BENCHMARK_CAPTURE(BM_Linear, bf16_prefill_sgemm, sy::DType::kBF16, true)->SY_LINEAR_SHAPES(512);
BENCHMARK_CAPTURE(BM_Linear, q8_0_prefill_invariant, sy::DType::kQ8_0, false)->SY_LINEAR_SHAPES(512);
BENCHMARK_CAPTURE(BM_Linear, q8_0_prefill_sgemm, sy::DType::kQ8_0, true)->SY_LINEAR_SHAPES(512);
BENCHMARK_CAPTURE(BM_Linear, q4_k_prefill_invariant, sy::DType::kQ4_K, false)->SY_LINEAR_SHAPES(512);
BENCHMARK_CAPTURE(BM_Linear, q4_k_prefill_sgemm, sy::DType::kQ4_K, true)->SY_LINEAR_SHAPES(512);

// The decode products as a model runs them: weights from memory, not from cache. Copies
// of one weight adding up to more than any last-level cache (like a model's layers) are
// multiplied in turn, one row of x each. Beside BM_Read of the same bytes per call, the
// gap is the kernel's own cost; beside the LM head's rate, the per-call cost.
void BM_LinearFromMemory(benchmark::State& state, sy::DType type, bool prefetch) {
  const int64_t n = state.range(0), k = state.range(1);
  const auto x = random_floats(static_cast<size_t>(k), 1);
  const auto w = random_weights(type, n, k);
  const size_t copies = std::max<size_t>(2, static_cast<size_t>(kFromMemoryBytes / static_cast<double>(w.size())));
  std::vector<uint8_t> all(copies * w.size());
  for (size_t c = 0; c < copies; ++c) std::memcpy(all.data() + c * w.size(), w.data(), w.size());
  std::vector<float> y(static_cast<size_t>(n));
  sy::cpu::LinearOptions opt;
  opt.prefetch = prefetch;
  size_t c = 0;
  for (auto _ : state) {
    const sy::cpu::WeightSlice slice{type, n, all.data() + c * w.size(), w.size() / static_cast<size_t>(n), 0};
    sy::cpu::linear(x.data(), 1, k, {&slice, 1}, y.data(), n, sy::cpu::ThreadPool::global(), opt);
    benchmark::DoNotOptimize(y.data());
    c = (c + 1) % copies;
  }
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(w.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(sy::cpu::simd_level_name(sy::cpu::simd_level()));
}
#define SY_DECODE_SHAPES                                                                                          \
  Args({4096, 1024})->Args({1024, 2048})->Args({6144, 1024})->Args({1024, 3072})->Args({151936, 1024})->UseRealTime()
BENCHMARK_CAPTURE(BM_LinearFromMemory, q8_0, sy::DType::kQ8_0, true)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, q8_0_nopf, sy::DType::kQ8_0, false)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, q4_k, sy::DType::kQ4_K, true)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, q4_k_nopf, sy::DType::kQ4_K, false)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, q6_k, sy::DType::kQ6_K, true)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, q6_k_nopf, sy::DType::kQ6_K, false)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, bf16, sy::DType::kBF16, true)->SY_DECODE_SHAPES;
BENCHMARK_CAPTURE(BM_LinearFromMemory, bf16_nopf, sy::DType::kBF16, false)->SY_DECODE_SHAPES;

// Reading `bytes` per call from memory on the pool (64-bit loads summed, in the chunks
// linear() would cut: four a thread), rotating over more than any cache: the pool's and
// the memory's share of a decode product, without a kernel.
void BM_Read(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) / 64 * 64;
  const size_t copies = std::max<size_t>(2, static_cast<size_t>(kFromMemoryBytes / static_cast<double>(bytes)));
  std::vector<uint64_t> all(copies * bytes / 8, 1);
  auto& pool = sy::cpu::ThreadPool::global();
  const int64_t parts = pool.size() * 4;
  std::vector<uint64_t> sums(static_cast<size_t>(parts));
  size_t c = 0;
  for (auto _ : state) {
    const uint64_t* base = all.data() + c * bytes / 8;
    pool.parallel_for(parts, [&](int64_t p) {
      const size_t words = bytes / 8, b = words * p / parts, e = words * (p + 1) / parts;
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      size_t i = b;
      for (; i + 4 <= e; i += 4) s0 += base[i], s1 += base[i + 1], s2 += base[i + 2], s3 += base[i + 3];
      for (; i < e; ++i) s0 += base[i];
      sums[static_cast<size_t>(p)] = s0 + s1 + s2 + s3;
    });
    benchmark::DoNotOptimize(sums.data());
    c = (c + 1) % copies;
  }
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}
// The q8_0 bytes of the decode shapes above: QKV, O, gate+up, down, LM head.
BENCHMARK(BM_Read)->Arg(4456448)->Arg(2228224)->Arg(6684672)->Arg(3342336)->Arg(165306368)->UseRealTime();

// One parallel_for of `n` chunks that do nothing: the pool's fixed cost per call.
void BM_ParallelFor(benchmark::State& state) {
  auto& pool = sy::cpu::ThreadPool::global();
  std::vector<int64_t> hits(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    pool.parallel_for(state.range(0), [&](int64_t i) { hits[static_cast<size_t>(i)] = i; });
    benchmark::DoNotOptimize(hits.data());
  }
}
BENCHMARK(BM_ParallelFor)->Arg(16)->Arg(64)->Arg(256)->UseRealTime();

// One decode query per head over `ctx` cached tokens (16 query heads, 8 KV heads, d=128).
void BM_PagedDecodeAttention(benchmark::State& state) {
  const int ctx = static_cast<int>(state.range(0));
  const int n_heads = 16, n_kv = 8, d = 128, bs = 16;
  const int blocks = (ctx + bs - 1) / bs;
  const auto k = random_floats(static_cast<size_t>(blocks) * bs * n_kv * d, 3);
  const auto v = random_floats(k.size(), 4);
  const auto q = random_floats(static_cast<size_t>(n_heads + 2 * n_kv) * d, 5);
  std::vector<float> out(static_cast<size_t>(n_heads) * d);
  std::vector<int32_t> indptr = {0, blocks}, indices(static_cast<size_t>(blocks)), last = {ctx - (blocks - 1) * bs};
  for (int i = 0; i < blocks; ++i) indices[static_cast<size_t>(i)] = blocks - 1 - i;  // reversed: not contiguous
  std::vector<int32_t> cu = {0, 1}, pos = {ctx - 1};
  sy::cpu::AttentionParams p;
  p.n_heads = n_heads;
  p.n_kv_heads = n_kv;
  p.head_dim = d;
  p.scale = 0.088f;
  p.q = q.data();
  p.q_stride = static_cast<int64_t>(n_heads + 2 * n_kv) * d;
  p.out = out.data();
  p.cache = {const_cast<float*>(k.data()), const_cast<float*>(v.data())};
  p.table = {indptr.data(), indices.data(), last.data(), 1, bs};
  p.cu_seqlens = cu.data();
  p.positions = pos.data();
  for (auto _ : state) {
    sy::cpu::paged_attention(p, sy::cpu::ThreadPool::global());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["KV bytes/s"] = benchmark::Counter(2.0 * ctx * n_kv * d * 4, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PagedDecodeAttention)->Arg(1024)->Arg(8192)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
