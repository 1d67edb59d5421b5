// The KV host tier on the cuda backend (one GPU, and two tensor-parallel or two
// context-parallel ranks sharing it): an evicted prefix copied back from pinned host memory by kernels/cuda/kv_copy.cuh
// gives the tokens of computing it whole, also under preemption (batch-invariant
// numerics, so that cached and computed prefixes give the same bits). Skips without a
// CUDA device.
#include <gtest/gtest.h>

#include "host_tier_checks.h"
#include "kernels/cuda_test_util.h"

namespace sy {
namespace {

const char kModel[] = "qwen3-tiny-bf16.gguf";

BackendOptions deterministic(int32_t tp) {
  BackendOptions bo;
  bo.deterministic = true;
  bo.tp = tp;
  return bo;
}

TEST(CudaKvHostTier, AnEvictedPrefixComesBackFromPinnedHostMemory) {
  SY_SKIP_WITHOUT_CUDA();
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda", deterministic(1));
}

// Pinned on a thread of its own (as `serve` does), taken into use between steps.
TEST(CudaKvHostTier, ATierPinnedInTheBackgroundIsTakenBetweenSteps) {
  SY_SKIP_WITHOUT_CUDA();
  BackendOptions bo = deterministic(1);
  bo.kv_host_in_background = true;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda", bo);
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cuda", bo);
  bo.tp = 2;  // two ranks on one GPU, their tiers taken at one step
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda:0,0", bo);
  bo.tp = 1;  // two context-parallel ranks sharing one tier, pinned once for both
  bo.pcp = 2;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda:0,0", bo);
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cuda:0,0", bo);
}

TEST(CudaKvHostTier, EachTensorParallelRankCopiesItsShard) {
  SY_SKIP_WITHOUT_CUDA();
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda:0,0", deterministic(2));
}

TEST(CudaKvHostTier, ManyRequestsUnderPreemptionKeepTheirTokens) {
  SY_SKIP_WITHOUT_CUDA();
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cuda", deterministic(1));
}

// Two context-parallel ranks sharing the GPU and one tier (under preemption, blocks
// saved by one rank come back into blocks the other is home to).
TEST(CudaKvHostTier, ContextParallelRanksShareOneTier) {
  SY_SKIP_WITHOUT_CUDA();
  BackendOptions bo = deterministic(1);
  bo.pcp = 2;
  testing::expect_host_tier_serves_the_evicted_prefix(kModel, "cuda:0,0", bo);
  testing::expect_host_tier_under_pressure_keeps_tokens(kModel, "cuda:0,0", bo);
}

}  // namespace
}  // namespace sy
