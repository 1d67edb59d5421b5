// The KV host tier on the cpu backend (one rank, its tier allocated at once or in the
// background; a tp 2 group whose ranks each copy their shard; pcp 2 groups whose ranks
// share one tier and each copy the blocks it is home to): an evicted prefix served again
// from host memory with the tokens of computing it whole, also under preemption with the
// tier's own slots evicted; a budget that holds no block refused.
#include <gtest/gtest.h>

#include "host_tier_checks.h"

namespace sy {
namespace {

const char kModel[] = "qwen3-tiny-bf16.gguf";

TEST(KvHostTier, AnEvictedPrefixComesBackFromHostMemory) {
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", {});
}

// Allocated in the background (as `serve` does): not in use until the engine's first
// step after it is ready, then the same as one allocated at once.
// A group takes its ranks' tiers at one step, once all are allocated: each tensor-parallel
// rank's own, the context-parallel ranks' shared one (one allocation for the pcp ranks of
// a tensor-parallel index).
TEST(KvHostTier, ATierAllocatedInTheBackgroundIsTakenBetweenSteps) {
  BackendOptions bo;
  bo.kv_host_in_background = true;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", bo);
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", bo);
  bo.tp = 2;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", bo);
  bo.pcp = 2;
  for (const int32_t tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " × pcp 2");
    bo.tp = tp;
    testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", bo);
    testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", bo);
  }
}

TEST(KvHostTier, EachTensorParallelRankCopiesItsShard) {
  BackendOptions bo;
  bo.tp = 2;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", bo);
}

TEST(KvHostTier, ManyRequestsUnderPreemptionKeepTheirTokens) {
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", {});
}

BackendOptions context_parallel(int32_t tp, int32_t pcp) {
  BackendOptions bo;
  bo.tp = tp;
  bo.pcp = pcp;
  return bo;
}

TEST(KvHostTier, ContextParallelRanksShareOneTier) {
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", context_parallel(1, 2));
}

// Under preemption blocks saved by one rank come back into blocks the other is home to:
// with a tier per rank instead of one shared, tokens differ (checked).
TEST(KvHostTier, ContextParallelRanksUnderPreemptionKeepTheirTokens) {
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", context_parallel(1, 2));
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", context_parallel(2, 2));
}

TEST(KvHostTier, RefusedWhenNoBlockFits) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  const ModelConfig config = ModelConfig::from_source(*src);
  for (const int32_t pcp : {1, 2}) {
    BackendOptions bo = context_parallel(1, pcp);
    bo.num_kv_blocks = 16;
    bo.kv_host_memory_bytes = 1;
    EXPECT_THROW(create_backend("cpu", *src, config, bo), std::invalid_argument) << "pcp " << pcp;
  }
}

}  // namespace
}  // namespace sy
