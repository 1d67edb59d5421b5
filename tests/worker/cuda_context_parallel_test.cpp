// Context parallelism on cuda ranks sharing one GPU (pcp 2 on "cuda:0,0"; tp 2 × pcp 2 on
// "cuda:0,0,0,0" where tp 2 divides the model), over "local" communicators, against the
// unsharded cuda backend on every fixture model and tiny128 (head_dim 128: the wgmma
// prefill kernel). The scenario of tests/worker/context_parallel_test.cpp in lockstep:
// a prompt's prefill (whole, or in chunks that cut blocks), a second prompt reusing the
// first's full blocks (a prefix-cache hit) beside the first's first decode step, then
// batched greedy steps, block ids shuffled so a sequence's blocks fall unevenly on the
// ranks. Then the engine on each group against the goldens, as the tensor-parallel
// fixture tests do. Skips without a CUDA device.
//
// Tolerance: both sides round every activation to bf16 and differ where the group splits
// the softmax: each part's output is rounded to bf16 before the log-sum-exp merge (2^-8
// relative). Logits within 2% of the row's largest |logit| (0.066 on the fixtures'
// |logit| ≤ 3.3, the order of the fixture tests' 0.05), and greedy tokens equal wherever
// the unsharded top-two margin exceeds twice that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>

#include "fixture_model_test.h"
#include "kernels/cuda_test_util.h"
#include "lockstep_run.h"
#include "offline_engine.h"
#include "tiny128_model.h"
#include "worker/backend/group_backend.h"
#include "worker/model/rank_shape.h"

namespace sy {
namespace {

constexpr double kTolerance = 0.02;  // of the row's largest |logit|

using testing::argmax;
using testing::scaled_diff;
using testing::some_ids;
using testing::wanted_rows;
using Run = testing::LockstepRun;

struct Shape {
  int tp, pcp;
};

// The shapes `src` allows: pcp 2, and tp 2 × pcp 2 where tp 2 divides the model.
std::vector<Shape> shapes_of(const ModelSource& src) {
  std::vector<Shape> shapes{{1, 2}};
  try {
    RankShape::of(ModelConfig::from_source(src), {0, 2});
    shapes.push_back({2, 2});
  } catch (const std::invalid_argument&) {
  }
  return shapes;
}

std::unique_ptr<Backend> open_cuda(const ModelSource& src, Shape shape, int32_t block_size, int32_t blocks_per_rank) {
  BackendOptions opt;
  opt.block_size = block_size;
  opt.num_kv_blocks = blocks_per_rank;
  opt.tp = shape.tp;
  opt.pcp = shape.pcp;
  std::string device = "cuda:0";
  for (int r = 1; r < shape.tp * shape.pcp; ++r) device += ",0";
  return create_backend(device, src, ModelConfig::from_source(src), opt);
}

// Whether the row's top-two margin exceeds twice the tolerance (greedy must then agree).
bool decided(const float* logits, int32_t n) {
  std::vector<float> v(logits, logits + n);
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  const float scale = std::max(std::fabs(v[0]), std::fabs(*std::min_element(logits, logits + n)));
  return v[0] - v[1] > 2 * kTolerance * scale;
}

// The largest scaled_diff of the rows `check` compared, for the log.
double worst_diff = 0;

// Expects a group row within the tolerance of the unsharded one.
::testing::AssertionResult within_tolerance(const float* got, const float* want, size_t n) {
  const double d = scaled_diff(got, want, n);
  worst_diff = std::max(worst_diff, d);
  if (d <= kTolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "scaled difference " << d << " > " << kTolerance;
}

// The scenario of the file comment for prompt `a`, prefilled by the group in chunks of
// `chunk` tokens (0: whole); returns how many greedy tokens were decided and equal.
int expect_same_as_unsharded(Backend& one, Backend& group, const std::vector<int32_t>& a, int32_t chunk, int decode_steps,
                             int32_t supply_size) {
  const int32_t vocab = one.config().vocab, bs = one.block_size(), n = static_cast<int32_t>(a.size());
  std::vector<int32_t> supply(static_cast<size_t>(supply_size));
  for (int32_t i = 0; i < supply_size; ++i) supply[static_cast<size_t>(i)] = i;
  std::shuffle(supply.begin(), supply.end(), std::mt19937(n));
  Run ref(one, supply), grp(group, supply);
  const size_t V = static_cast<size_t>(vocab);
  int decided_equal = 0;

  const std::vector<int32_t> rows = wanted_rows(n);
  const int ra = ref.add(a), ga = grp.add(a);
  const std::vector<float> want = ref.step({{ra, n, rows}});
  std::vector<float> got;
  for (int32_t c0 = 0; c0 < n; c0 += chunk > 0 ? chunk : n) {
    const int32_t c1 = std::min(n, c0 + (chunk > 0 ? chunk : n));
    std::vector<int32_t> mine;
    for (const int32_t r : rows)
      if (r >= c0 && r < c1) mine.push_back(r - c0);
    const auto part = grp.step({{ga, c1 - c0, mine}});
    got.insert(got.end(), part.begin(), part.end());
  }
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_TRUE(within_tolerance(&got[i * V], &want[i * V], V)) << "prefill row " << rows[i];

  // b: a's whole blocks from the cache and 5 tokens of its own, beside a's first decode step.
  const int32_t cached = n / bs * bs;
  std::vector<int32_t> b(a.begin(), a.begin() + cached);
  for (const int32_t t : some_ids(5, vocab, n + 1)) b.push_back(t);
  const int32_t token = argmax(&want[(rows.size() - 1) * V], vocab);
  ref.append(ra, token);
  grp.append(ga, token);
  const int rb = ref.add(b, ra, cached), gb = grp.add(b, ga, cached);
  const auto want_b = ref.step({{ra, 1, {0}}, {rb, 5, {0, 1, 2, 3, 4}}});
  const auto got_b = grp.step({{ga, 1, {0}}, {gb, 5, {0, 1, 2, 3, 4}}});
  EXPECT_EQ(got_b.size(), want_b.size());
  if (got_b.size() != want_b.size()) return 0;
  for (size_t i = 0; i < 6; ++i)
    EXPECT_TRUE(within_tolerance(&got_b[i * V], &want_b[i * V], V)) << "row " << i << " of the prefix-hit step";

  // Greedy steps of both sequences, batched; both sides take the unsharded model's tokens.
  std::vector<int32_t> tokens = {argmax(&want_b[0], vocab), argmax(&want_b[5 * V], vocab)};
  for (int i = 0; i < decode_steps; ++i) {
    for (int s = 0; s < 2; ++s) {
      ref.append(s == 0 ? ra : rb, tokens[static_cast<size_t>(s)]);
      grp.append(s == 0 ? ga : gb, tokens[static_cast<size_t>(s)]);
    }
    const auto w = ref.step({{ra, 1, {0}}, {rb, 1, {0}}});
    const auto g = grp.step({{ga, 1, {0}}, {gb, 1, {0}}});
    for (size_t s = 0; s < 2; ++s) {
      EXPECT_TRUE(within_tolerance(&g[s * V], &w[s * V], V)) << "decode step " << i << ", sequence " << s;
      tokens[s] = argmax(&w[s * V], vocab);
      if (!decided(&w[s * V], vocab)) continue;
      EXPECT_EQ(argmax(&g[s * V], vocab), tokens[s]) << "greedy token " << i << " of sequence " << s;
      ++decided_equal;
    }
  }
  return decided_equal;
}

void check_shapes(const ModelSource& src, int32_t block_size, const std::vector<std::pair<int32_t, int32_t>>& prompts) {
  const int32_t vocab = ModelConfig::from_source(src).vocab;
  int32_t blocks = 0;
  for (const auto& [n, chunk] : prompts) blocks = std::max(blocks, 2 * ((n + 70 + block_size - 1) / block_size) + 2);
  blocks = (blocks + 3) / 4 * 4;
  BackendOptions opt;
  opt.block_size = block_size;
  opt.num_kv_blocks = blocks;
  auto one = create_backend("cuda:0", src, ModelConfig::from_source(src), opt);
  for (const Shape shape : shapes_of(src)) {
    auto group = open_cuda(src, shape, block_size, blocks / shape.pcp);
    const auto* g = dynamic_cast<const GroupBackend*>(group.get());
    ASSERT_TRUE(g && g->size() == shape.tp * shape.pcp);
    EXPECT_EQ(group->num_kv_blocks(), blocks);  // pcp × each rank's
    for (const auto& [n, chunk] : prompts) {
      const std::string what = "tp " + std::to_string(shape.tp) + " × pcp " + std::to_string(shape.pcp) + ", prompt of " +
                               std::to_string(n) + (chunk ? " in chunks of " + std::to_string(chunk) : " whole");
      SCOPED_TRACE(what);
      const int steps = n == prompts.back().first ? 64 : 8;
      worst_diff = 0;
      const int equal = expect_same_as_unsharded(*one, *group, some_ids(n, vocab, n), chunk, steps, blocks);
      std::printf("%s: worst scaled difference %.3g, %d of %d greedy tokens decided and equal\n", what.c_str(), worst_diff,
                  equal, 2 * steps);
    }
  }
}

class CudaContextParallel : public testing::FixtureModelTest {
 protected:
  void SetUp() override {
    SY_SKIP_WITHOUT_CUDA();
    FixtureModelTest::SetUp();
  }
};

// Block size 4: the short prompts span several blocks and reuse whole ones; 7 and 23 are
// not multiples of 2·pcp.
TEST_P(CudaContextParallel, MatchesUnshardedCuda) { check_shapes(*src_, 4, {{1, 0}, {7, 0}, {23, 5}, {70, 0}}); }

// The engine (every prompt in one step, then chunks of 5) against the goldens, with the
// fixture tests' tolerances for one rank.
TEST_P(CudaContextParallel, EngineLogitsWithinBf16ToleranceOfGolden) {
  const float max_abs = GetParam().same_weights ? 0.05f : 0.15f;
  for (const Shape shape : shapes_of(*src_)) {
    for (const int32_t chunk : {0, 5}) {
      auto engine = testing::offline_engine(open_cuda(*src_, shape, 16, 128), *src_, chunk);
      float worst = 0;
      for (const auto& p : golden_["prompts"]) {
        const std::vector<float> got = engine->prompt_logits(p["ids"].get<std::vector<int32_t>>(), p["logits_positions"] == "all");
        const std::vector<float> want = testing::read_f32_file(testing::fixture_path(p["logits_file"].get<std::string>()));
        ASSERT_EQ(got.size(), want.size()) << p["text"];
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(std::isfinite(got[i])) << "logit " << i << " of " << p["text"];
          worst = std::max(worst, std::fabs(got[i] - want[i]));
        }
      }
      std::printf("%s tp %d × pcp %d, chunk %d: max |logit - golden| %.4g\n", GetParam().path.c_str(), shape.tp, shape.pcp,
                  chunk, worst);
      EXPECT_LE(worst, max_abs) << "tp " << shape.tp << " × pcp " << shape.pcp << ", chunk " << chunk;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaContextParallel, ::testing::ValuesIn(testing::all_fixture_models()),
                         testing::fixture_param_name);

// head_dim 128 (the wgmma prefill kernel), two KV heads; up to 3,000 tokens in chunks
// that cut blocks.
TEST(CudaContextParallelLong, Tiny128UpTo3000Tokens) {
  SY_SKIP_WITHOUT_CUDA();
  auto src = ModelSource::open(testing::make_tiny128_model("sy_cuda_cp_tiny128.gguf"));
  check_shapes(*src, 16, {{1, 0}, {7, 3}, {300, 0}, {3000, 1100}});
}

// Shapes the cuda group does not build are refused before anything loads.
TEST(CudaContextParallelShapes, UnsupportedShapesAreRefused) {
  SY_SKIP_WITHOUT_CUDA();
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  const ModelConfig c = ModelConfig::from_source(*src);
  BackendOptions opt;
  opt.num_kv_blocks = 16;
  opt.pcp = 16;  // the merge takes at most 16 parts: pcp + 1
  std::string device = "cuda:0";
  for (int r = 1; r < 16; ++r) device += ",0";
  EXPECT_THROW(create_backend(device, *src, c, opt), std::invalid_argument);
  opt.pcp = 2;
  EXPECT_THROW(create_backend("cuda:0,0,0", *src, c, opt), std::invalid_argument);  // 3 devices for 2 ranks
}

}  // namespace
}  // namespace sy
