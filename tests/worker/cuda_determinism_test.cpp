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
#include "policy/block_hash.h"
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
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  BackendOptions bo;
  bo.num_kv_blocks = 1024;
  bo.max_num_seqs = max_num_seqs;
  bo.max_step_tokens = prefill_chunk + max_num_seqs;
  bo.deterministic = true;
  EngineOptions eo;
  eo.max_num_seqs = max_num_seqs;
  eo.prefill_chunk = prefill_chunk;
  eo.model_fingerprint = policy::model_fingerprint("cuda-determinism-test qwen3-tiny");
  auto e = std::make_unique<Engine>(create_backend("cuda", *src, ModelConfig::from_source(*src), bo), tok, eo);
  e->start();
  return e;
}

EngineRequest request(const std::string& id, size_t prompt_len, uint32_t seed, int32_t max_tokens) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, 151000);
  EngineRequest r;
  r.id = id;
  r.prompt_ids.resize(prompt_len);
  for (auto& t : r.prompt_ids) t = d(rng);
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

TEST(CudaFailover, ResumeFromAnyTokenIsExactForEverySamplerKnob) {
  SY_SKIP_WITHOUT_CUDA();
  auto engine = make_cuda_engine(16, 16);
  for (const auto& knob : testing::sampler_knobs()) {
    EngineRequest r = request("knob-" + knob.name, 30, 5, 40);
    knob.set(r.sampling);
    testing::expect_resume_exact(*engine, r, {1, 7, 23, 39}, knob.name);
  }
}

TEST(CudaFailover, SeededRequestIsTheSameAloneAndInAFullBatch) {
  SY_SKIP_WITHOUT_CUDA();
  auto engine = make_cuda_engine(16, 32);
  for (const std::string name : {"temperature", "all_filters", "greedy"}) {
    EngineRequest r = request("batch-" + name, 90, 21, 48);
    for (const auto& knob : testing::sampler_knobs())
      if (knob.name == name) knob.set(r.sampling);
    testing::expect_batch_invariant(*engine, r, 15, 99, name);
  }
}

}  // namespace
}  // namespace sy
