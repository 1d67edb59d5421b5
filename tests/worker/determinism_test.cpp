// Batch-invariant numerics on the CPU backend (the default, BackendOptions::deterministic)
// and the failover promise they carry (issue 13): a sequence's logits are the same bits
// every way a server computes them, on every fixture model; on the engine, a request
// continued from any of its first k tokens equals the uninterrupted one for every sampler
// knob, stop strings that straddle the resume point included; a seeded request gives the
// same tokens alone and in a full batch. The CUDA backend runs the same checks
// (cuda_determinism_test.cpp).
#include <gtest/gtest.h>

#include "fixture_model_test.h"
#include "invariance_checks.h"
#include "resume_checks.h"

namespace sy {
namespace {

using testing::FixtureModel;

class CpuInvariance : public testing::FixtureModelTest {};

TEST_P(CpuInvariance, LastLogitsAreTheSameBitsEveryWayTheyAreComputed) {
  BackendOptions opt;
  opt.num_kv_blocks = 256;
  ASSERT_FALSE(opt.deterministic.has_value());  // the cpu backend's default: on
  auto backend = create_backend("cpu", *src_, ModelConfig::from_source(*src_), opt);
  testing::InvarianceProbe probe(*backend, 42);
  for (const size_t len : {1u, 16u, 45u, 70u}) {
    SCOPED_TRACE("prompt of " + std::to_string(len) + " tokens");
    testing::expect_bit_identical(probe.every_way(probe.random_ids(len)));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuInvariance, ::testing::ValuesIn(testing::all_fixture_models()),
                         testing::fixture_param_name);

std::unique_ptr<Engine> make_engine(int32_t max_num_seqs, int32_t prefill_chunk) {
  return testing::make_fixture_engine("cpu", BackendOptions{}, max_num_seqs, prefill_chunk);
}

TEST(CpuFailover, ResumeFromAnyTokenIsExactForEverySamplerKnob) {
  auto engine = make_engine(16, 16);  // resumed prompts prefill in several chunks
  testing::expect_resume_exact_for_every_knob(*engine);
}

// The first replica held back the text that may begin a stop string; the continuation
// must send it (or end before it) exactly as the first replica would have.
TEST(CpuFailover, ResumeOwesTheTextHeldBackForAStopString) {
  auto engine = make_engine(16, 16);
  EngineRequest free_run = testing::random_request("stop-probe", 20, 9, 40);
  free_run.sampling.temperature = 0.8f;
  free_run.sampling.seed = 11;
  const auto probe = testing::run_request(*engine, free_run);
  const std::vector<TokenEvent> events = probe->events();
  const std::string text = probe->text();
  ASSERT_EQ(events.size(), 40u);
  int checked = 0;
  for (const size_t k : {5u, 12u, 20u}) {
    // A stop string that begins with the last byte streamed up to token k and continues
    // into token k's text: at the failover point its first byte is held back.
    size_t before = 0;
    for (size_t i = 0; i < k; ++i) before += events[i].text.size();
    if (before == 0 || before >= text.size()) continue;
    for (size_t len = 2; len <= 8 && before - 1 + len <= text.size(); ++len) {
      const std::string stop = text.substr(before - 1, len);
      if (text.find(stop) != before - 1) continue;  // it must first match right there
      EngineRequest with_stop = free_run;
      with_stop.id = "stop-" + std::to_string(k);
      with_stop.sampling.stop = {stop, "never-in-this-text-\x01"};
      SCOPED_TRACE("stop string of " + std::to_string(len) + " bytes straddling token " + std::to_string(k));
      testing::expect_resume_exact(*engine, with_stop, {k - 1, k}, "stop at " + std::to_string(k));
      ++checked;
      break;
    }
  }
  EXPECT_GE(checked, 1) << "no stop string could be placed across a resume point in this text";
}

TEST(CpuFailover, SeededRequestIsTheSameAloneAndInAFullBatch) {
  auto engine = make_engine(16, 32);
  testing::expect_batch_invariant_for_some_knobs(*engine);
}

}  // namespace
}  // namespace sy
