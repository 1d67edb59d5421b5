// The paged-attention kernels (kernels/cuda/attention.cuh) against the CPU reference
// (sy::cpu::write_kv / paged_attention) on fresh random bf16-rounded inputs: K/V written
// through shuffled block tables, outputs poisoned with NaN before every launch, relative
// error and NaN checks. Unwritten cache slots hold NaN too, so a kernel that reads past a
// sequence's keys fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/attention_merge.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_merge.cuh"
#include "kernels/cuda/rope_kv.cuh"

namespace sy {
namespace {

using namespace sy::testing;
using bf16 = __nv_bfloat16;

constexpr double kTolerance = 8e-3;  // bf16 output and (prefill) bf16 probabilities

struct Shape {
  int n_heads, n_kv_heads, head_dim, block_size = 16;
};

// One step of a batch: sequence s has contexts[s] tokens after this step, of which the
// last q_lens[s] are this step's rows; the earlier ones are already in the cache.
struct Problem {
  Shape shape;
  std::vector<int> q_lens, contexts;
  std::vector<int32_t> indptr{0}, indices, last_len, cu{0}, positions;
  int num_blocks = 0, tokens = 0;
  int64_t stride = 0;     // fused QKV row: q heads, k heads, v heads
  std::vector<float> qkv;  // bf16-rounded
  std::vector<float> k_cache, v_cache;  // CPU layout, NaN where nothing was written
  float scale = 0;

  int64_t cache_elems() const { return int64_t{num_blocks} * shape.n_kv_heads * shape.block_size * shape.head_dim; }
};

Problem make_problem(std::mt19937_64& rng, Shape shape, std::vector<int> q_lens, std::vector<int> contexts,
                     float q_amplitude) {
  Problem p;
  p.shape = shape;
  p.q_lens = std::move(q_lens);
  p.contexts = std::move(contexts);
  const int bs = shape.block_size, d = shape.head_dim;
  for (size_t s = 0; s < p.contexts.size(); ++s) {
    const int nb = (p.contexts[s] + bs - 1) / bs;
    p.num_blocks += nb;
    p.indptr.push_back(p.indptr.back() + nb);
    p.last_len.push_back(p.contexts[s] - (nb - 1) * bs);
    p.cu.push_back(p.cu.back() + p.q_lens[s]);
    for (int i = 0; i < p.q_lens[s]; ++i) p.positions.push_back(p.contexts[s] - p.q_lens[s] + i);
  }
  p.num_blocks += 3;  // blocks no sequence owns
  p.indices.resize(static_cast<size_t>(p.num_blocks));
  std::iota(p.indices.begin(), p.indices.end(), 0);
  std::shuffle(p.indices.begin(), p.indices.end(), rng);
  p.indices.resize(static_cast<size_t>(p.indptr.back()));
  p.tokens = p.cu.back();
  p.stride = int64_t{shape.n_heads + 2 * shape.n_kv_heads} * d;
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  p.qkv.resize(static_cast<size_t>(p.tokens * p.stride));
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int64_t i = 0; i < p.stride; ++i)
      p.qkv[t * p.stride + i] = round_bf16(uni(rng) * (i < int64_t{shape.n_heads} * d ? q_amplitude : 1.0f));
  // Keys and values of earlier steps go straight into the cache.
  p.k_cache.assign(static_cast<size_t>(p.cache_elems()), NAN);
  p.v_cache.assign(static_cast<size_t>(p.cache_elems()), NAN);
  for (size_t s = 0; s < p.contexts.size(); ++s)
    for (int pos = 0; pos < p.contexts[s] - p.q_lens[s]; ++pos)
      for (int h = 0; h < shape.n_kv_heads; ++h) {
        const int64_t block = p.indices[static_cast<size_t>(p.indptr[s] + pos / bs)];
        const int64_t row = ((block * shape.n_kv_heads + h) * bs + pos % bs) * d;
        for (int e = 0; e < d; ++e) {
          p.k_cache[static_cast<size_t>(row + e)] = round_bf16(uni(rng));
          p.v_cache[static_cast<size_t>(row + e)] = round_bf16(uni(rng));
        }
      }
  p.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return p;
}

// The CPU reference: write this step's K/V, then attend (with `lse`, each row's
// log-sum-exp too). Leaves p's caches updated.
std::vector<float> reference(Problem& p, std::vector<float>* lse = nullptr) {
  cpu::AttentionParams a;
  a.n_heads = p.shape.n_heads;
  a.n_kv_heads = p.shape.n_kv_heads;
  a.head_dim = p.shape.head_dim;
  a.scale = p.scale;
  a.q = p.qkv.data();
  a.q_stride = p.stride;
  a.k_new = p.qkv.data() + int64_t{p.shape.n_heads} * p.shape.head_dim;
  a.v_new = a.k_new + int64_t{p.shape.n_kv_heads} * p.shape.head_dim;
  a.kv_stride = p.stride;
  std::vector<float> out(static_cast<size_t>(int64_t{p.tokens} * p.shape.n_heads * p.shape.head_dim));
  a.out = out.data();
  if (lse) {
    lse->assign(static_cast<size_t>(int64_t{p.tokens} * p.shape.n_heads), NAN);
    a.lse = lse->data();
  }
  a.cache = {p.k_cache.data(), p.v_cache.data()};
  a.table = {p.indptr.data(), p.indices.data(), p.last_len.data(), static_cast<int32_t>(p.contexts.size()),
             p.shape.block_size};
  a.cu_seqlens = p.cu.data();
  a.positions = p.positions.data();
  cpu::write_kv(a);
  cpu::paged_attention(a, cpu::ThreadPool::global());
  return out;
}

// The same step on the GPU. Construct before reference() changes p's caches.
struct GpuProblem {
  explicit GpuProblem(const Problem& p)
      : qkv(to_bf16(p.qkv)),
        k_cache(to_bf16(p.k_cache)),
        v_cache(to_bf16(p.v_cache)),
        indptr(p.indptr),
        indices(std::max<size_t>(p.indices.size(), 1)),
        last_len(p.last_len),
        cu(p.cu),
        positions(p.positions),
        out(static_cast<size_t>(int64_t{p.tokens} * p.shape.n_heads * p.shape.head_dim)),
        workspace(cuda::attention_workspace_bytes(p.tokens, p.shape.n_heads, p.shape.head_dim, 64)) {
    if (!p.indices.empty()) indices.upload(p.indices);
    const int hd = p.shape.head_dim;
    a.n_heads = p.shape.n_heads;
    a.n_kv_heads = p.shape.n_kv_heads;
    a.head_dim = hd;
    a.scale = p.scale;
    a.q = qkv.as<bf16>();
    a.q_stride = p.stride;
    a.k_new = a.q + int64_t{p.shape.n_heads} * hd;
    a.v_new = a.k_new + int64_t{p.shape.n_kv_heads} * hd;
    a.kv_stride = p.stride;
    a.out = out.as<bf16>();
    a.k_cache = k_cache.as<bf16>();
    a.v_cache = v_cache.as<bf16>();
    a.block_size = p.shape.block_size;
    a.kv_indptr = indptr.get();
    a.kv_indices = indices.get();
    a.kv_last_block_len = last_len.get();
    a.cu_seqlens = cu.get();
    a.positions = positions.get();
    a.num_seqs = static_cast<int>(p.contexts.size());
    a.num_tokens = p.tokens;
    a.workspace = workspace.get();
    a.workspace_bytes = cuda::attention_workspace_bytes(p.tokens, p.shape.n_heads, hd, 64);
  }
  DeviceArray<uint16_t> qkv, k_cache, v_cache;
  DeviceArray<int32_t> indptr, indices, last_len, cu, positions;
  DeviceArray<uint16_t> out;
  DeviceArray<uint8_t> workspace;
  cuda::PagedAttentionArgs a;
};

// Equal as bf16 values, NaN where the CPU cache is NaN (slots nobody wrote).
void expect_same_cache(const std::vector<float>& cpu, const std::vector<uint16_t>& gpu) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const float g = bf16_to_f32(gpu[i]);
    if (std::isnan(cpu[i]) ? !std::isnan(g) : g != cpu[i]) FAIL() << "cache element " << i << ": " << g << " vs " << cpu[i];
  }
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(std::isfinite(got[i])) << what << ": element " << i << " = " << got[i];
  EXPECT_LT(relative_error(got, want), kTolerance) << what;
}

int num_sms() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

// The wgmma prefill kernel (PagedAttentionArgs::prefill_kernel 1) needs sm_90a code in the
// build and a device of compute capability 9.0.
#define SY_SKIP_WITHOUT_HOPPER()            \
  SY_SKIP_WITHOUT_CUDA();                   \
  if (!cuda::prefill_wgmma_available())     \
  GTEST_SKIP() << "the wgmma prefill kernel needs sm_90a code and compute capability 9.0"

enum class Kernel { kDecode, kPrefill, kPrefillWgmma };
using Heads = std::vector<std::pair<int, int>>;  // (query heads, kv heads)

// Writes K/V and runs `kernel` on GPU and CPU; for decode, once per split count.
void check(Problem p, Kernel kernel, std::vector<int> splits = {}) {
  GpuProblem g(p);
  SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
  const std::vector<float> want = reference(p);
  expect_same_cache(p.k_cache, g.k_cache.download());
  expect_same_cache(p.v_cache, g.v_cache.download());
  std::string what = "heads " + std::to_string(p.shape.n_heads) + "/" + std::to_string(p.shape.n_kv_heads) + " d " +
                     std::to_string(p.shape.head_dim) + " seqs " + std::to_string(p.contexts.size());
  if (kernel != Kernel::kDecode) {
    g.a.prefill_kernel = kernel == Kernel::kPrefillWgmma ? 1 : 0;
    if (kernel == Kernel::kPrefillWgmma) what += " wgmma";
    g.out.poison();
    const int max_q = *std::max_element(p.q_lens.begin(), p.q_lens.end());
    const int max_ctx = *std::max_element(p.contexts.begin(), p.contexts.end());
    SY_CUDA_OK(cuda::paged_prefill_attention(g.a, max_q, max_ctx, nullptr));
    expect_close(from_bf16(g.out.download()), want, "prefill " + what);
    return;
  }
  if (splits.empty()) splits = {1, cuda::decode_num_splits(g.a.num_seqs, g.a.n_kv_heads, num_sms())};
  // Every decode kernel where the tensor-core ones apply (GQA groups >= 2, head_dim >= 16).
  const bool mma_fits = p.shape.n_heads / p.shape.n_kv_heads >= 2 && p.shape.head_dim >= 16;
  for (int variant : mma_fits ? std::vector<int>{1, 2} : std::vector<int>{1}) {
    g.a.decode_variant = variant;
    for (int ns : splits) {
      g.out.poison();
      SY_CUDA_OK(cuda::paged_decode_attention(g.a, ns, nullptr));
      expect_close(from_bf16(g.out.download()), want,
                   "decode variant " + std::to_string(variant) + " splits " + std::to_string(ns) + " " + what);
    }
  }
}

std::vector<int> random_contexts(std::mt19937_64& rng, int n, int lo, int hi) {
  std::vector<int> v(static_cast<size_t>(n));
  for (auto& c : v) c = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  return v;
}

TEST(CudaAttention, DecodeAllHeadDimsAndGroupings) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int d : {8, 16, 64, 128})
    for (auto [nh, nkv] : Heads{{4, 4}, {8, 2}, {16, 2}, {6, 1}, {32, 1}}) {
      const auto ctx = random_contexts(rng, 5, 1, 300);
      check(make_problem(rng, {nh, nkv, d}, std::vector<int>(5, 1), ctx, 4.0f), Kernel::kDecode, {1, 3, 17});
    }
}

TEST(CudaAttention, DecodeBatchesAndLongContexts) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  check(make_problem(rng, {32, 8, 128}, {1}, {33001}, 6.0f), Kernel::kDecode, {1, 7, 64});
  check(make_problem(rng, {32, 8, 128}, {1, 1, 1}, {1, 16, 4099}, 2.0f), Kernel::kDecode);
  check(make_problem(rng, {16, 4, 64}, std::vector<int>(16, 1), random_contexts(rng, 16, 1, 2500), 4.0f),
        Kernel::kDecode);
  check(make_problem(rng, {8, 1, 128}, std::vector<int>(64, 1), random_contexts(rng, 64, 1, 700), 4.0f),
        Kernel::kDecode);
  check(make_problem(rng, {8, 8, 16, 32}, std::vector<int>(40, 1), random_contexts(rng, 40, 1, 900), 4.0f),
        Kernel::kDecode, {1, 2, 5, 64});
}

TEST(CudaAttention, DecodeSplitCountsAgree) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  Problem p = make_problem(rng, {32, 8, 128}, {1, 1}, {5000, 12345}, 6.0f);
  GpuProblem g(p);
  SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
  g.out.poison();
  SY_CUDA_OK(cuda::paged_decode_attention(g.a, 1, nullptr));
  const std::vector<float> one = from_bf16(g.out.download());
  for (int ns : {2, 8, 33, 64}) {
    g.out.poison();
    SY_CUDA_OK(cuda::paged_decode_attention(g.a, ns, nullptr));
    EXPECT_LT(relative_error(from_bf16(g.out.download()), one), 4 * kBf16Rounding) << "splits " << ns;
  }
}

TEST(CudaAttention, PrefillWithAndWithoutCachedPrefix) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int d : {8, 16, 64, 128})
    for (auto [nh, nkv] : Heads{{4, 4}, {8, 2}, {8, 1}}) {
      check(make_problem(rng, {nh, nkv, d}, {300}, {300}, 4.0f), Kernel::kPrefill);
      check(make_problem(rng, {nh, nkv, d}, {203}, {1001}, 4.0f), Kernel::kPrefill);
    }
}

TEST(CudaAttention, PrefillMixedSequencesAndDecodeRows) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int d : {16, 128}) {
    // Prefill chunks of several lengths, with and without prefix, beside decode rows.
    check(make_problem(rng, {16, 4, d}, {1, 130, 64, 1, 7, 257}, {1, 130, 500, 77, 40, 2000}, 4.0f),
          Kernel::kPrefill);
    // Decode rows only, through the prefill kernel.
    check(make_problem(rng, {32, 8, d}, std::vector<int>(9, 1), random_contexts(rng, 9, 1, 3000), 4.0f),
          Kernel::kPrefill);
  }
  check(make_problem(rng, {16, 4, 128}, {1024}, {3000}, 6.0f), Kernel::kPrefill);
  check(make_problem(rng, {4, 2, 64, 32}, {100, 33}, {1000, 33}, 4.0f), Kernel::kPrefill);
}

TEST(CudaAttention, PrefillTileShapesAgree) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int d : {64, 128}) {
    Problem p = make_problem(rng, {8, 2, d}, {700, 50}, {900, 50}, 4.0f);
    GpuProblem g(p);
    SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
    const std::vector<float> want = reference(p);
    for (int warps : {4, 8})
      for (int rows : {16, 32}) {
        g.a.prefill_warps = warps;
        g.a.prefill_rows_per_warp = rows;
        g.out.poison();
        SY_CUDA_OK(cuda::paged_prefill_attention(g.a, 700, 900, nullptr));
        expect_close(from_bf16(g.out.download()), want,
                     "warps " + std::to_string(warps) + " rows per warp " + std::to_string(rows));
      }
  }
}

// The wgmma kernel (head_dim 128) on everything the mma.sync one is tested with: GQA
// groups 1, 4 and 8, prompts with and without cached prefix, lengths that are no
// multiple of its 128-row and 128-key tiles, decode rows mixed in, block size 32, and
// prompts of many tiles, so that whole, diagonal and fully masked key tiles all run.
TEST(CudaAttention, PrefillWgmmaMatchesReference) {
  SY_SKIP_WITHOUT_HOPPER();
  auto rng = fresh_rng();
  for (auto [nh, nkv] : Heads{{4, 4}, {16, 4}, {8, 1}}) {
    check(make_problem(rng, {nh, nkv, 128}, {300}, {300}, 4.0f), Kernel::kPrefillWgmma);
    check(make_problem(rng, {nh, nkv, 128}, {203}, {1001}, 4.0f), Kernel::kPrefillWgmma);
    check(make_problem(rng, {nh, nkv, 128}, {128, 129, 127}, {128, 385, 127}, 4.0f), Kernel::kPrefillWgmma);
  }
  check(make_problem(rng, {16, 4, 128}, {1, 130, 64, 1, 7, 257}, {1, 130, 500, 77, 40, 2000}, 4.0f),
        Kernel::kPrefillWgmma);
  check(make_problem(rng, {32, 8, 128}, std::vector<int>(9, 1), random_contexts(rng, 9, 1, 3000), 4.0f),
        Kernel::kPrefillWgmma);
  check(make_problem(rng, {16, 4, 128}, {1024}, {3000}, 6.0f), Kernel::kPrefillWgmma);
  check(make_problem(rng, {8, 2, 128, 32}, {100, 33, 700}, {1000, 33, 700}, 4.0f), Kernel::kPrefillWgmma);
  check(make_problem(rng, {32, 8, 128}, {2000, 5}, {2000, 2100}, 4.0f), Kernel::kPrefillWgmma);
  // Two and three key tiles, ending on and off a tile edge: the first, middle and last
  // tiles of the two-stage K/V ring.
  check(make_problem(rng, {8, 2, 128}, {256, 200, 129, 300}, {256, 200, 257, 384}, 4.0f), Kernel::kPrefillWgmma);
}

// Both prefill kernels on one batch: each close to the reference and to the other.
TEST(CudaAttention, PrefillWgmmaAgreesWithMmaKernel) {
  SY_SKIP_WITHOUT_HOPPER();
  auto rng = fresh_rng();
  Problem p = make_problem(rng, {32, 8, 128}, {1500, 1, 260}, {1500, 900, 777}, 6.0f);
  GpuProblem g(p);
  SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
  const std::vector<float> want = reference(p);
  std::vector<float> got[2];
  for (int kernel : {0, 1}) {
    g.a.prefill_kernel = kernel;
    g.out.poison();
    SY_CUDA_OK(cuda::paged_prefill_attention(g.a, 1500, 1500, nullptr));
    got[kernel] = from_bf16(g.out.download());
    expect_close(got[kernel], want, "prefill kernel " + std::to_string(kernel));
  }
  EXPECT_LT(relative_error(got[1], got[0]), 2 * kBf16Rounding);
  // Other head dims run the mma.sync kernel whatever prefill_kernel says.
  Problem q = make_problem(rng, {8, 2, 64}, {300}, {400}, 4.0f);
  GpuProblem h(q);
  SY_CUDA_OK(cuda::write_kv_cache(h.a, nullptr));
  const std::vector<float> want64 = reference(q);
  h.a.prefill_kernel = 1;
  h.out.poison();
  SY_CUDA_OK(cuda::paged_prefill_attention(h.a, 300, 400, nullptr));
  expect_close(from_bf16(h.out.download()), want64, "prefill_kernel 1, head_dim 64");
}

// A captured decode replays with other context lengths: the launch reads them on the
// device, and its shape depends on the batch shape only.
TEST(CudaAttention, DecodeGraphReplaysWithOtherContexts) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const Shape shape{32, 8, 128};
  Problem first = make_problem(rng, shape, {1, 1, 1, 1}, {40, 900, 5000, 17}, 4.0f);
  GpuProblem g(first);
  const int splits = cuda::decode_num_splits(4, shape.n_kv_heads, num_sms());
  cudaStream_t stream;
  SY_CUDA_OK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  SY_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  ASSERT_EQ(cuda::write_kv_cache(g.a, stream), cudaSuccess);
  ASSERT_EQ(cuda::paged_decode_attention(g.a, splits, stream), cudaSuccess);
  SY_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  SY_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  // Same buffers, new contents: other contexts (fewer blocks than the first need).
  Problem next = make_problem(rng, shape, {1, 1, 1, 1}, {3000, 1, 64, 900}, 4.0f);
  ASSERT_LE(next.cache_elems(), first.cache_elems());
  next.k_cache.resize(static_cast<size_t>(first.cache_elems()), NAN);
  next.v_cache.resize(static_cast<size_t>(first.cache_elems()), NAN);
  g.qkv.upload(to_bf16(next.qkv));
  g.k_cache.upload(to_bf16(next.k_cache));
  g.v_cache.upload(to_bf16(next.v_cache));
  g.indptr.upload(next.indptr);
  g.indices.upload(next.indices);
  g.last_len.upload(next.last_len);
  g.positions.upload(next.positions);
  next.num_blocks = first.num_blocks;
  const std::vector<float> want = reference(next);
  g.out.poison();
  SY_CUDA_OK(cudaGraphLaunch(exec, stream));
  SY_CUDA_OK(cudaStreamSynchronize(stream));
  expect_close(from_bf16(g.out.download()), want, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// rope_write_kv (RoPE of the query and key heads fused with the cache write) against
// cpu::rope then cpu::write_kv on the same rows: the rotated queries in place, the cache
// (NaN exactly where the CPU's is: nothing written out of place) and, end to end, the
// attention over that cache.
TEST(CudaAttention, RopeFusedWithKvWriteMatchesCpu) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  struct Case {
    Shape shape;
    std::vector<int> q_lens, contexts;
    int rot_dim;
    cpu::RopeLayout layout;
  };
  const std::vector<Case> cases = {
      {{32, 8, 128}, {1, 1, 1}, {1, 700, 1090}, 128, cpu::RopeLayout::kInterleaved},
      {{32, 8, 128}, {1, 1}, {33, 4000}, 128, cpu::RopeLayout::kRotateHalf},
      {{16, 4, 64}, {1, 130, 64, 7}, {1, 130, 500, 2000}, 32, cpu::RopeLayout::kRotateHalf},
      {{8, 2, 64, 32}, {100, 1}, {1000, 33}, 64, cpu::RopeLayout::kInterleaved},
      {{4, 4, 16}, {5, 1}, {5, 40}, 8, cpu::RopeLayout::kInterleaved}};
  for (const Case& c : cases) {
    Problem p = make_problem(rng, c.shape, c.q_lens, c.contexts, 4.0f);
    GpuProblem g(p);
    const int d = c.shape.head_dim, qk_heads = c.shape.n_heads + c.shape.n_kv_heads;
    cpu::RopeParams rp;
    rp.head_dim = d;
    rp.rot_dim = c.rot_dim;
    rp.layout = c.layout;
    rp.inv_freq = cpu::rope_inv_freq(c.rot_dim, 500000.0f);
    Problem r = p;
    cpu::rope(r.qkv.data(), r.tokens, r.stride, qk_heads, r.positions.data(), rp);
    for (auto& v : r.qkv) v = round_bf16(v);
    const std::vector<float> want = reference(r);

    DeviceArray<float> inv_freq(rp.inv_freq);
    cuda::RopeKvArgs a;
    a.kv = g.a;
    a.q = g.qkv.as<bf16>();
    a.rot_dim = c.rot_dim;
    a.layout = c.layout;
    a.inv_freq = inv_freq.get();
    SY_CUDA_OK(cuda::rope_write_kv(a, nullptr));
    const std::string what = "heads " + std::to_string(c.shape.n_heads) + "/" + std::to_string(c.shape.n_kv_heads) +
                             " d " + std::to_string(d) + " rot " + std::to_string(c.rot_dim);

    // Queries rotated in place; the key and value columns of the rows untouched.
    const std::vector<float> qkv = from_bf16(g.qkv.download());
    std::vector<float> got_q, want_q;
    for (int64_t t = 0; t < p.tokens; ++t)
      for (int64_t i = 0; i < p.stride; ++i) {
        const size_t k = static_cast<size_t>(t * p.stride + i);
        ASSERT_TRUE(std::isfinite(qkv[k])) << what << ": qkv element " << k;
        if (i < int64_t{c.shape.n_heads} * d) {
          got_q.push_back(qkv[k]);
          want_q.push_back(r.qkv[k]);
        } else {
          ASSERT_EQ(qkv[k], p.qkv[k]) << what << ": k/v column changed, element " << k;
        }
      }
    EXPECT_LT(relative_error(got_q, want_q), 2 * kBf16Rounding) << what << ": queries";
    for (const auto& [cache_cpu, cache_gpu] :
         {std::pair{&r.k_cache, g.k_cache.download()}, std::pair{&r.v_cache, g.v_cache.download()}}) {
      std::vector<float> got, exp;
      ASSERT_EQ(cache_cpu->size(), cache_gpu.size());
      for (size_t i = 0; i < cache_gpu.size(); ++i) {
        const float gv = bf16_to_f32(cache_gpu[i]), cv = (*cache_cpu)[i];
        if (std::isnan(cv)) {
          ASSERT_TRUE(std::isnan(gv)) << what << ": cache element " << i << " written out of place";
          continue;
        }
        ASSERT_TRUE(std::isfinite(gv)) << what << ": cache element " << i << " not written";
        got.push_back(gv);
        exp.push_back(cv);
      }
      EXPECT_LT(relative_error(got, exp), 2 * kBf16Rounding) << what << ": cache";
    }
    // Attention over the cache the fused kernel wrote.
    g.out.poison();
    const bool decode = std::all_of(c.q_lens.begin(), c.q_lens.end(), [](int q) { return q == 1; });
    if (decode && c.shape.n_heads / c.shape.n_kv_heads >= 2 && d >= 16) {
      g.a.decode_variant = 2;
      SY_CUDA_OK(cuda::paged_decode_attention(
          g.a, cuda::decode_num_splits(g.a.num_seqs, g.a.n_kv_heads, num_sms()), nullptr));
    } else {
      SY_CUDA_OK(cuda::paged_prefill_attention(g.a, *std::max_element(c.q_lens.begin(), c.q_lens.end()),
                                               *std::max_element(c.contexts.begin(), c.contexts.end()), nullptr));
    }
    expect_close(from_bf16(g.out.download()), want, "attention after rope_write_kv, " + what);
  }
  cuda::RopeKvArgs bad;
  EXPECT_EQ(cuda::rope_write_kv(bad, nullptr), cudaErrorInvalidValue);
}

// Each kernel's log-sum-exp (PagedAttentionArgs::lse) against the CPU reference's: the
// prefill kernels, and decode in one split and in several (the merge kernel writes it).
TEST(CudaAttention, LogSumExpMatchesReference) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  auto lse_close = [](const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 2e-3 * std::max(1.0f, std::fabs(want[i]))) << what << ": row-head " << i;
  };
  struct Case {
    Kernel kernel;
    Shape shape;
    std::vector<int> q_lens, contexts;
  };
  std::vector<Case> cases = {{Kernel::kPrefill, {8, 2, 64}, {37, 1, 200}, {37, 90, 700}},
                             {Kernel::kDecode, {8, 2, 64}, {1, 1, 1}, {1, 300, 5000}},
                             {Kernel::kDecode, {4, 4, 128}, {1, 1}, {77, 3000}}};
  if (cuda::prefill_wgmma_available()) cases.push_back({Kernel::kPrefillWgmma, {16, 4, 128}, {130, 1}, {500, 2000}});
  for (Case& c : cases) {
    Problem p = make_problem(rng, c.shape, c.q_lens, c.contexts, 4.0f);
    GpuProblem g(p);
    SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
    std::vector<float> want_lse;
    reference(p, &want_lse);
    DeviceArray<float> lse(want_lse.size());
    g.a.lse = lse.get();
    const std::string what = c.kernel == Kernel::kDecode ? "decode" : c.kernel == Kernel::kPrefill ? "prefill" : "prefill wgmma";
    if (c.kernel == Kernel::kDecode) {
      for (int ns : {1, 5}) {
        lse.poison();
        SY_CUDA_OK(cuda::paged_decode_attention(g.a, ns, nullptr));
        lse_close(lse.download(), want_lse, what + " splits " + std::to_string(ns));
      }
      continue;
    }
    g.a.prefill_kernel = c.kernel == Kernel::kPrefillWgmma ? 1 : 0;
    lse.poison();
    SY_CUDA_OK(cuda::paged_prefill_attention(g.a, *std::max_element(c.q_lens.begin(), c.q_lens.end()),
                                             *std::max_element(c.contexts.begin(), c.contexts.end()), nullptr));
    lse_close(lse.download(), want_lse, what);
  }
}

// Decode rows attending to disjoint key sets (each sequence's blocks cut into parts, as
// decode context parallelism shards them), merged on the GPU: the unsharded reference's
// output and log-sum-exp, and the CPU merge of the same partial states.
TEST(CudaAttentionMerge, PartsOverDisjointKeysMergeToTheWhole) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int parts : {2, 3}) {
    Problem p = make_problem(rng, {8, 2, 64}, std::vector<int>(4, 1), {40, 300, 1000, 4097}, 4.0f);
    GpuProblem g(p);
    SY_CUDA_OK(cuda::write_kv_cache(g.a, nullptr));
    std::vector<float> want_lse;
    const std::vector<float> want = reference(p, &want_lse);
    const int64_t row_heads = int64_t{p.tokens} * p.shape.n_heads, elems = row_heads * p.shape.head_dim;
    std::vector<DeviceArray<uint16_t>> outs;
    std::vector<DeviceArray<float>> lses;
    std::vector<DeviceArray<int32_t>> tables;
    cuda::MergeStatesArgs m;
    std::vector<std::vector<float>> host_outs, host_lses;
    for (int part = 0; part < parts; ++part) {
      // Part `part` of each sequence: blocks [nb·part/parts, nb·(part+1)/parts); the
      // query's position is past all of them, so every key of the part is visible.
      std::vector<int32_t> indptr{0}, indices, last_len;
      for (size_t s = 0; s < p.contexts.size(); ++s) {
        const int nb = p.indptr[s + 1] - p.indptr[s];
        const int b0 = nb * part / parts, b1 = nb * (part + 1) / parts;
        for (int b = b0; b < b1; ++b) indices.push_back(p.indices[static_cast<size_t>(p.indptr[s] + b)]);
        indptr.push_back(static_cast<int32_t>(indices.size()));
        last_len.push_back(b1 == nb ? p.last_len[s] : p.shape.block_size);
      }
      tables.emplace_back(indptr);
      tables.emplace_back(indices.empty() ? std::vector<int32_t>{0} : indices);
      tables.emplace_back(last_len);
      outs.emplace_back(static_cast<size_t>(elems));
      lses.emplace_back(static_cast<size_t>(row_heads));
      outs.back().poison();
      lses.back().poison();
      cuda::PagedAttentionArgs a = g.a;
      a.kv_indptr = tables[tables.size() - 3].get();
      a.kv_indices = tables[tables.size() - 2].get();
      a.kv_last_block_len = tables.back().get();
      a.out = outs.back().as<bf16>();
      a.lse = lses.back().get();
      SY_CUDA_OK(cuda::paged_decode_attention(a, 2, nullptr));
      m.outs[part] = outs.back().as<bf16>();
      m.lses[part] = lses.back().get();
      host_outs.push_back(from_bf16(outs.back().download()));
      host_lses.push_back(lses.back().download());
    }
    DeviceArray<uint16_t> merged(static_cast<size_t>(elems));
    DeviceArray<float> merged_lse(static_cast<size_t>(row_heads));
    merged.poison();
    merged_lse.poison();
    m.num_parts = parts;
    m.out = merged.as<bf16>();
    m.lse = merged_lse.get();
    m.rows = p.tokens;
    m.heads = p.shape.n_heads;
    m.head_dim = p.shape.head_dim;
    SY_CUDA_OK(cuda::merge_attention_states(m, nullptr));
    const std::vector<float> got = from_bf16(merged.download()), got_lse = merged_lse.download();
    expect_close(got, want, std::to_string(parts) + " parts against the unsharded reference");
    for (int64_t i = 0; i < row_heads; ++i)
      ASSERT_NEAR(got_lse[static_cast<size_t>(i)], want_lse[static_cast<size_t>(i)], 2e-3 * std::max(1.0f, std::fabs(want_lse[static_cast<size_t>(i)])))
          << parts << " parts, row-head " << i;
    // The CPU merge of the same partial states.
    std::vector<const float*> po, pl;
    for (int part = 0; part < parts; ++part) po.push_back(host_outs[static_cast<size_t>(part)].data()), pl.push_back(host_lses[static_cast<size_t>(part)].data());
    std::vector<float> cpu_out(static_cast<size_t>(elems)), cpu_lse(static_cast<size_t>(row_heads));
    cpu::merge_attention_states(po.data(), pl.data(), parts, cpu_out.data(), cpu_lse.data(), p.tokens, p.shape.n_heads,
                                p.shape.head_dim);
    EXPECT_LT(relative_error(got, cpu_out), kBf16Rounding) << parts << " parts against the CPU merge";
    for (int64_t i = 0; i < row_heads; ++i)
      ASSERT_NEAR(got_lse[static_cast<size_t>(i)], cpu_lse[static_cast<size_t>(i)], 1e-5 * std::max(1.0f, std::fabs(cpu_lse[static_cast<size_t>(i)])));
  }
  // A part that saw no key weighs nothing; all parts empty gives zeros and −inf.
  const std::vector<float> o1{1.0f, 2.0f}, l1{0.5f}, l_empty{-INFINITY};
  DeviceArray<uint16_t> d_o1(to_bf16(o1)), d_o2(to_bf16(std::vector<float>{7.0f, 7.0f})), d_out(2);
  DeviceArray<float> d_l1(l1), d_le(l_empty), d_lse(1);
  cuda::MergeStatesArgs m;
  m.outs[0] = d_o1.as<bf16>(), m.outs[1] = d_o2.as<bf16>();
  m.lses[0] = d_l1.get(), m.lses[1] = d_le.get();
  m.num_parts = 2, m.out = d_out.as<bf16>(), m.lse = d_lse.get(), m.rows = 1, m.heads = 1, m.head_dim = 2;
  SY_CUDA_OK(cuda::merge_attention_states(m, nullptr));
  EXPECT_EQ(from_bf16(d_out.download()), o1);
  EXPECT_FLOAT_EQ(d_lse.download()[0], 0.5f);
  m.lses[0] = d_le.get();
  SY_CUDA_OK(cuda::merge_attention_states(m, nullptr));
  EXPECT_EQ(from_bf16(d_out.download()), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(d_lse.download()[0], -INFINITY);
  m.num_parts = 0;
  EXPECT_EQ(cuda::merge_attention_states(m, nullptr), cudaErrorInvalidValue);
}

TEST(CudaAttention, BadArgumentsAreRejected) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  Problem p = make_problem(rng, {8, 2, 64}, {1, 1}, {10, 20}, 1.0f);
  GpuProblem g(p);
  cuda::PagedAttentionArgs a = g.a;
  a.head_dim = 32;
  EXPECT_EQ(cuda::paged_decode_attention(a, 1, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.n_kv_heads = 3;
  EXPECT_EQ(cuda::paged_prefill_attention(a, 1, 20, nullptr), cudaErrorInvalidValue);
  a = g.a;
  EXPECT_EQ(cuda::paged_decode_attention(a, 0, nullptr), cudaErrorInvalidValue);
  a.workspace_bytes = 16;
  EXPECT_EQ(cuda::paged_decode_attention(a, 4, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.num_tokens = 3;  // decode needs one row per sequence
  EXPECT_EQ(cuda::paged_decode_attention(a, 1, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.kv_stride = 100;  // not a whole number of 16-byte vectors
  EXPECT_EQ(cuda::write_kv_cache(a, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.decode_variant = 3;  // the one-launch form is gone
  EXPECT_EQ(cuda::paged_decode_attention(a, 1, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.prefill_rows_per_warp = 24;
  EXPECT_EQ(cuda::paged_prefill_attention(a, 1, 20, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.prefill_warps = 6;
  EXPECT_EQ(cuda::paged_prefill_attention(a, 1, 20, nullptr), cudaErrorInvalidValue);
  a = g.a;
  a.prefill_kernel = 2;
  EXPECT_EQ(cuda::paged_prefill_attention(a, 1, 20, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace sy
