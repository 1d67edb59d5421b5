// CPU kernel micro-benchmarks (Google Benchmark): the GEMM shapes of a Qwen3-0.6B layer
// and paged decode attention over a long context.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/invariant_gemm.h"
#include "kernels/cpu/thread_pool.h"

namespace {

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
