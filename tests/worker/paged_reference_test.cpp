// Long prompts spanning many KV blocks, run paged (scattered block ids), chunked and
// batched with another sequence, against the unpaged reference forward pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "fixture_util.h"
#include "reference_model.h"
#include "worker/backend/backend.h"
#include "worker/engine/block_allocator.h"

namespace sy {
namespace {

class PagedReference : public ::testing::TestWithParam<std::string> {};

TEST_P(PagedReference, ChunkedBatchedPagedMatchesUnpagedReference) {
  auto src = ModelSource::open(testing::fixture_path(GetParam()));
  const ModelConfig config = ModelConfig::from_source(*src);
  const ModelWeights weights = ModelWeights::load(*src, config, {}, true);  // float32, for the reference
  constexpr int32_t kBlockSize = 16;
  constexpr int32_t kBlocks = 64;
  BackendOptions opt;
  opt.block_size = kBlockSize;
  opt.num_kv_blocks = kBlocks;
  auto backend = create_backend("cpu", *src, config, opt);

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(0, config.vocab - 1);
  std::vector<int32_t> a(340), b(200);
  for (auto& t : a) t = token(rng);
  for (auto& t : b) t = token(rng);
  // Scatter both sequences' blocks over the pool, interleaved and out of order.
  std::vector<int32_t> ids(kBlocks);
  for (int32_t i = 0; i < kBlocks; ++i) ids[static_cast<size_t>(i)] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  const std::vector<int32_t> blocks_a(ids.begin(), ids.begin() + blocks_for(340, kBlockSize));
  const std::vector<int32_t> blocks_b(ids.begin() + 32, ids.begin() + 32 + blocks_for(200, kBlockSize));

  const std::vector<int32_t> chunks_a = {37, 100, 1, 150, 52};
  const std::vector<int32_t> chunks_b = {64, 64, 72};
  std::vector<float> got_a, got_b, logits;
  int32_t done_a = 0, done_b = 0;
  for (size_t step = 0; step < chunks_a.size(); ++step) {
    BatchPlan plan;
    auto add = [&](const std::vector<int32_t>& seq, const std::vector<int32_t>& blocks, int32_t& done, int32_t n) {
      const std::vector<int32_t> chunk(seq.begin() + done, seq.begin() + done + n);
      const std::vector<int32_t> used(blocks.begin(), blocks.begin() + blocks_for(done + n, kBlockSize));
      plan.add_sequence(chunk, done, used, kBlockSize, BatchPlan::Logits::kAll);
      done += n;
    };
    const bool with_b = step < chunks_b.size();
    if (with_b) add(b, blocks_b, done_b, chunks_b[step]);  // b first: row order differs from block order
    add(a, blocks_a, done_a, chunks_a[step]);
    backend->forward(plan, logits);
    const size_t vb = with_b ? static_cast<size_t>(chunks_b[step]) * config.vocab : 0;
    got_b.insert(got_b.end(), logits.begin(), logits.begin() + static_cast<ptrdiff_t>(vb));
    got_a.insert(got_a.end(), logits.begin() + static_cast<ptrdiff_t>(vb), logits.end());
  }
  ASSERT_EQ(done_a, 340);
  ASSERT_EQ(done_b, 200);

  for (const auto& [seq, got] : {std::pair{&a, &got_a}, std::pair{&b, &got_b}}) {
    const std::vector<float> want = testing::reference_logits(weights, *seq);
    ASSERT_EQ(got->size(), want.size());
    float max_diff = 0, max_mag = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(std::isfinite((*got)[i]));
      max_diff = std::max(max_diff, std::fabs((*got)[i] - want[i]));
      max_mag = std::max(max_mag, std::fabs(want[i]));
    }
    EXPECT_LE(max_diff, 2e-4f * std::max(1.0f, max_mag)) << "sequence of " << seq->size() << " tokens";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PagedReference,
                         ::testing::Values("qwen3-tiny-bf16.gguf", "llama3-tiny-bf16.gguf", "qwen2-tiny-bf16.gguf"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('-')); });

}  // namespace
}  // namespace sy
