// The KV host tier on the cpu backend (one rank and a tp 2 group, whose ranks each copy
// their shard): an evicted prefix served again from host memory with the tokens of
// computing it whole, also under preemption with the tier's own slots evicted; options
// the tier does not support refused.
#include <gtest/gtest.h>

#include "host_tier_checks.h"

namespace sy {
namespace {

const char kModel[] = "qwen3-tiny-bf16.gguf";

TEST(KvHostTier, AnEvictedPrefixComesBackFromHostMemory) {
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", {});
}

TEST(KvHostTier, EachTensorParallelRankCopiesItsShard) {
  BackendOptions bo;
  bo.tp = 2;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cpu", bo);
}

TEST(KvHostTier, ManyRequestsUnderPreemptionKeepTheirTokens) {
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cpu", {});
}

TEST(KvHostTier, RefusedWithContextParallelismAndWhenNoBlockFits) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  const ModelConfig config = ModelConfig::from_source(*src);
  BackendOptions bo;
  bo.num_kv_blocks = 16;
  bo.pcp = 2;
  bo.kv_host_memory_bytes = size_t{1} << 24;
  EXPECT_THROW(create_backend("cpu", *src, config, bo), std::invalid_argument);
  bo.pcp = 1;
  bo.kv_host_memory_bytes = 1;
  EXPECT_THROW(create_backend("cpu", *src, config, bo), std::invalid_argument);
}

}  // namespace
}  // namespace sy
