// Context parallelism on CPU ranks (worker/plan/context_split.h, GroupBackend over
// "threads" communicators): pcp 2, pcp 4 and tp 2 × pcp 2 against the unsharded model on
// every fixture model and tiny128. Each scenario runs one prompt through both backends in
// lockstep: its prefill (whole, or in chunks that split blocks), a second prompt that
// reuses the first's full blocks (a prefix-cache hit) batched with the first's first
// decode step, then greedy steps of both (64 after the longest prompt, 8 after the
// others): logits within 1e-4 of the largest logit, every greedy token equal. Block ids
// come in a shuffled order, so a sequence's blocks fall unevenly on the ranks. Then the engine on a pcp 2 group: a request cancelled
// mid-prefill frees its blocks, and a prompt larger than one rank's cache runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "engine_test_util.h"
#include "lockstep_run.h"
#include "fixture_model_test.h"
#include "policy/block_hash.h"
#include "tiny128_model.h"
#include "worker/backend/group_backend.h"
#include "worker/engine/engine.h"
#include "worker/plan/context_split.h"

namespace sy {
namespace {

struct Shape {
  int tp, pcp;
};
const Shape kShapes[] = {{1, 2}, {1, 4}, {2, 2}};

using testing::argmax;
using testing::scaled_diff;
using testing::some_ids;
using testing::wanted_rows;
using Run = testing::LockstepRun;

std::unique_ptr<Backend> open_cpu(const ModelSource& src, Shape shape, int32_t block_size, int32_t blocks_per_rank) {
  BackendOptions opt;
  opt.block_size = block_size;
  opt.num_kv_blocks = blocks_per_rank;
  opt.tp = shape.tp;
  opt.pcp = shape.pcp;
  // Q8_0 on the stored-type path multiplies int8-quantized activations: a change in the
  // last bit of an activation (the ranks sum in another order; a column slice off the
  // 32-blocks runs in float32) can move it a whole int8
  // step, so sharded and unsharded logits differ by up to ~2% there, not 1e-4. These
  // tests check the decomposition; they run Q8_0 files on the float32 path
  // (the stored-type kernels are checked in tests/kernels and model_fixture_test).
  opt.cpu_float32_weights = src.path().find("q8_0") != std::string::npos;
  return create_backend("cpu", src, ModelConfig::from_source(src), opt);
}

// The scenario of the file comment for prompt `a` prefilled by the group in chunks of
// `chunk` tokens (0: whole), then `decode_steps` greedy steps.
void expect_same_as_unsharded(Backend& one, Backend& group, const std::vector<int32_t>& a, int32_t chunk, int decode_steps,
                              int32_t supply_size) {
  const int32_t vocab = one.config().vocab, bs = one.block_size(), n = static_cast<int32_t>(a.size());
  std::vector<int32_t> supply(static_cast<size_t>(supply_size));
  for (int32_t i = 0; i < supply_size; ++i) supply[static_cast<size_t>(i)] = i;
  std::shuffle(supply.begin(), supply.end(), std::mt19937(n));
  Run ref(one, supply), grp(group, supply);
  const size_t V = static_cast<size_t>(vocab);

  // Prefill of a: whole on the unsharded model, in chunks on the group.
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
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < rows.size(); ++i)
    ASSERT_LT(scaled_diff(&got[i * V], &want[i * V], V), 1e-4) << "prefill row " << rows[i];

  // b: a's whole blocks, taken as cached (that the unsharded model's prefix-cache hits
  // give the same bits as a whole prefill is checked by invariance_checks.h), and 5
  // tokens of its own, run beside a's first decode step.
  const int32_t cached = n / bs * bs;
  std::vector<int32_t> b(a.begin(), a.begin() + cached);
  for (const int32_t t : some_ids(5, vocab, n + 1)) b.push_back(t);
  int32_t token = argmax(&want[(rows.size() - 1) * V], vocab);
  ref.append(ra, token);
  grp.append(ga, token);
  const int rb = ref.add(b, ra, cached), gb = grp.add(b, ga, cached);
  const auto want_b = ref.step({{ra, 1, {0}}, {rb, 5, {0, 1, 2, 3, 4}}});
  const auto got_b = grp.step({{ga, 1, {0}}, {gb, 5, {0, 1, 2, 3, 4}}});
  ASSERT_EQ(got_b.size(), want_b.size());
  for (size_t i = 0; i < 6; ++i) ASSERT_LT(scaled_diff(&got_b[i * V], &want_b[i * V], V), 1e-4) << "row " << i << " of the prefix-hit step";

  // Greedy steps of both sequences, batched.
  std::vector<float> last = want_b;
  std::vector<int32_t> tokens = {argmax(&last[0], vocab), argmax(&last[5 * V], vocab)};
  for (int i = 0; i < decode_steps; ++i) {
    ref.append(ra, tokens[0]);
    grp.append(ga, tokens[0]);
    ref.append(rb, tokens[1]);
    grp.append(gb, tokens[1]);
    const auto w = ref.step({{ra, 1, {0}}, {rb, 1, {0}}});
    const auto g = grp.step({{ga, 1, {0}}, {gb, 1, {0}}});
    for (size_t s = 0; s < 2; ++s) {
      ASSERT_LT(scaled_diff(&g[s * V], &w[s * V], V), 1e-4) << "decode step " << i << ", sequence " << s;
      tokens[s] = argmax(&w[s * V], vocab);
      ASSERT_EQ(argmax(&g[s * V], vocab), tokens[s]) << "greedy token " << i << " of sequence " << s;
    }
  }
}

// Prompts of (length, chunk) on `src`, at every shape; the last one decodes 64 greedy
// steps, the others 8 (the LM head over a large vocabulary is most of a step's time).
void check_shapes(const ModelSource& src, int32_t block_size, const std::vector<std::pair<int32_t, int32_t>>& prompts) {
  const int32_t vocab = ModelConfig::from_source(src).vocab;
  int32_t blocks = 0;
  for (const auto& [n, chunk] : prompts) blocks = std::max(blocks, 2 * ((n + 70 + block_size - 1) / block_size) + 2);
  blocks = (blocks + 3) / 4 * 4;
  auto one = open_cpu(src, {1, 1}, block_size, blocks);
  for (const Shape shape : kShapes) {
    auto group = open_cpu(src, shape, block_size, blocks / shape.pcp);
    const auto* g = dynamic_cast<const GroupBackend*>(group.get());
    ASSERT_TRUE(g && g->size() == shape.tp * shape.pcp);
    EXPECT_EQ(group->num_kv_blocks(), blocks);  // pcp × each rank's
    for (const auto& [n, chunk] : prompts) {
      SCOPED_TRACE("tp " + std::to_string(shape.tp) + " × pcp " + std::to_string(shape.pcp) + ", prompt of " + std::to_string(n) +
                   (chunk ? " in chunks of " + std::to_string(chunk) : " whole"));
      expect_same_as_unsharded(*one, *group, some_ids(n, vocab, n), chunk, n == prompts.back().first ? 64 : 8, blocks);
    }
  }
}

class CpuContextParallel : public testing::FixtureModelTest {};

// Block size 4: the short prompts span several blocks and reuse whole ones.
TEST_P(CpuContextParallel, MatchesUnshardedModel) { check_shapes(*src_, 4, {{1, 0}, {7, 0}, {23, 5}, {70, 0}}); }

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuContextParallel, ::testing::ValuesIn(testing::all_fixture_models()),
                         testing::fixture_param_name);

// head_dim 128, two KV heads; up to 3,000 tokens, chunks that cut blocks.
TEST(CpuContextParallelLong, Tiny128UpTo3000Tokens) {
  auto src = ModelSource::open(testing::make_tiny128_model("sy_cp_tiny128.gguf"));
  check_shapes(*src, 16, {{1, 0}, {7, 3}, {300, 0}, {3000, 1100}});
}

TEST(ContextSplit, ChunksAreLoadBalancedAndBlocksHaveOneHome) {
  BatchPlan plan;
  plan.add_sequence(std::vector<int32_t>(10, 1), 0, {0, 1, 2}, 4, BatchPlan::Logits::kLast);  // 10 rows: chunks of 3,2,3,2 at pcp 2
  plan.add_sequence({5}, 3, {3}, 4, BatchPlan::Logits::kLast);                               // a decode row
  plan.add_sequence({6}, 3, {4}, 4, BatchPlan::Logits::kLast);
  const ContextSplit split = split_context(plan, 2);
  EXPECT_EQ(split.rows[0], (std::vector<int32_t>{0, 1, 2, 8, 9, 11}));  // chunks 0 and 3, sequence 2's decode row
  EXPECT_EQ(split.rows[1], (std::vector<int32_t>{3, 4, 5, 6, 7, 10}));  // chunks 1 and 2, sequence 1's
  EXPECT_EQ(split.max_rows(), 6);
  EXPECT_EQ(home_slots(plan, 1, 2), (std::vector<int32_t>{-1, 0, -1, 1, -1}));
  // Context before each sequence's step: none for sequence 0, 3 tokens of block 3 (rank 1,
  // slot 1) for sequence 1, 3 tokens of block 4 (rank 0, slot 2) for sequence 2.
  const KvTableStorage on1 = context_shard(plan, 4, 1, 2);
  EXPECT_EQ(on1.indptr, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(on1.indices, (std::vector<int32_t>{1}));
  EXPECT_EQ(on1.last_block_len, (std::vector<int32_t>{0, 3, 0}));
  const KvTableStorage on0 = context_shard(plan, 4, 0, 2);
  EXPECT_EQ(on0.indices, (std::vector<int32_t>{2}));
  EXPECT_EQ(on0.table().context_len(2), 3);
}

// The host tier's copies on context-parallel ranks sharing one tier: each rank runs the
// copies of the blocks it is home to, at their slots there, every save before `between`
// (the group's barrier) and every load after it, so a slot rank 1 saves into reaches
// rank 0's load of it in the same plan. Here rank 0's barrier runs rank 1's copies.
TEST(ContextSplit, HostTierCopiesRunOnEachBlocksHomeSavesFirst) {
  const KvBlockLayout l{4, 8, 1};  // 4-byte chunks, 2 blocks a rank, one layer: [K K][V V]
  std::string cache0(16, '.'), host(16, '-');
  std::string cache1 = std::string("kk......") + "vv......";  // rank 1's slot 0: logical block 1
  const std::vector<KvCopy> copies = {{1, 1, true}, {2, 1, false}};  // save block 1, load it into block 2
  int barriers = 0;
  copy_kv_blocks_of_rank(l, copies, cache0.data(), host.data(), 0, 2, [&] {
    ++barriers;
    copy_kv_blocks_of_rank(l, copies, cache1.data(), host.data(), 1, 2, [&] { ++barriers; });
  });
  EXPECT_EQ(barriers, 2);
  EXPECT_EQ(host, std::string("--------") + "kk..vv..");
  EXPECT_EQ(cache0, std::string("....kk..") + "....vv..") << "block 2 is rank 0's slot 1";
  EXPECT_EQ(cache1, std::string("kk......") + "vv......") << "rank 1 loads nothing";
  copy_kv_blocks_of_rank(l, std::span(copies).first(1), cache1.data(), host.data(), 1, 2, [&] { ++barriers; });
  EXPECT_EQ(barriers, 2) << "no barrier without loads";
}

// The engine on a pcp 2 group of 24 blocks a rank: a 700-token request cancelled
// mid-prefill frees every block, then a 650-token prompt (41 blocks, more than one rank
// holds) gives the unsharded engine's greedy tokens.
TEST(CpuContextParallelEngine, CancelledPrefillFreesBlocksAndCapacityGrows) {
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  auto make = [&](Shape shape, int32_t blocks_per_rank) {
    EngineOptions eo;
    eo.prefill_chunk = 8;
    eo.model_fingerprint = policy::model_fingerprint("cp-test qwen3-tiny");
    auto e = std::make_unique<Engine>(open_cpu(*src, shape, 16, blocks_per_rank), tok, eo);
    e->start();
    return e;
  };
  auto group = make({1, 2}, 24);
  EXPECT_EQ(group->num_kv_blocks(), 48);
  const int32_t vocab = group->config().vocab;
  auto cancelled = std::make_shared<testing::CollectingSink>();
  EngineRequest r;
  r.id = "long";
  r.prompt_ids = some_ids(700, vocab, 1);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 4;
  r.sink = cancelled;
  group->submit(r);
  while (group->stats().kv_blocks_used.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  group->cancel("long");
  EXPECT_EQ(cancelled->wait().reason, FinishReason::kAbort);
  EXPECT_TRUE(cancelled->ids().empty()) << "the cancel came after the prefill";
  for (int i = 0; i < 2000 && group->stats().kv_blocks_used.load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(group->stats().kv_blocks_used.load(), 0);

  auto run = [&](Engine& e) {
    auto sink = std::make_shared<testing::CollectingSink>();
    EngineRequest q;
    q.id = "big";
    q.prompt_ids = some_ids(650, vocab, 2);
    q.sampling.temperature = 0;
    q.sampling.max_tokens = 8;
    q.sampling.ignore_eos = true;
    q.sink = sink;
    e.submit(std::move(q));
    EXPECT_EQ(sink->wait().reason, FinishReason::kLength);
    return sink->ids();
  };
  auto one = make({1, 1}, 48);
  const auto want = run(*one);
  EXPECT_EQ(want.size(), 8u);
  EXPECT_EQ(run(*group), want);
}

}  // namespace
}  // namespace sy
