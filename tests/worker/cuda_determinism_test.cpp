// Batch-invariant numerics on the cuda backend (BackendOptions::deterministic, which the
// gateway asks for; off by default on cuda): the checks of determinism_test.cpp on the GPU. Every fixture model's logits
// are the same bits every way a server computes them (alone, chunked, batched, decode
// alone and in a batch replayed from a graph, a decode row in a mixed step, on cached
// prefix blocks); on the engine, resuming from any token is exact for every sampler knob
// (with the device sampler where the engine uses it) and a seeded request is the same
// alone and in a full batch. Skips without a CUDA device.
#include <gtest/gtest.h>

#include "fixture_model_test.h"
#include "invariance_checks.h"
#include "kernels/cuda_test_util.h"
#include "resume_checks.h"

namespace sy {
namespace {

class CudaInvariance : public testing::FixtureModelTest {
 protected:
  void SetUp() override {
    SY_SKIP_WITHOUT_CUDA();
    FixtureModelTest::SetUp();
  }
};

TEST_P(CudaInvariance, LastLogitsAreTheSameBitsEveryWayTheyAreComputed) {
  BackendOptions opt;
  opt.num_kv_blocks = 256;
  opt.max_num_seqs = 16;
  opt.deterministic = true;  // off by default on cuda
  auto backend = create_backend("cuda", *src_, ModelConfig::from_source(*src_), opt);
  testing::InvarianceProbe probe(*backend, 43);
  for (const size_t len : {1u, 16u, 45u, 70u, 300u}) {
    SCOPED_TRACE("prompt of " + std::to_string(len) + " tokens");
    testing::expect_bit_identical(probe.every_way(probe.random_ids(len)));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaInvariance, ::testing::ValuesIn(testing::all_fixture_models()),
                         testing::fixture_param_name);

std::unique_ptr<Engine> make_cuda_engine(int32_t max_num_seqs, int32_t prefill_chunk) {
  BackendOptions bo;
  bo.deterministic = true;  // off by default on cuda
  return testing::make_fixture_engine("cuda", bo, max_num_seqs, prefill_chunk);
}

TEST(CudaFailover, ResumeFromAnyTokenIsExactForEverySamplerKnob) {
  SY_SKIP_WITHOUT_CUDA();
  auto engine = make_cuda_engine(16, 16);
  testing::expect_resume_exact_for_every_knob(*engine);
}

TEST(CudaFailover, SeededRequestIsTheSameAloneAndInAFullBatch) {
  SY_SKIP_WITHOUT_CUDA();
  auto engine = make_cuda_engine(16, 32);
  testing::expect_batch_invariant_for_some_knobs(*engine);
}

}  // namespace
}  // namespace sy
