// CpuBackend::profile_step (switchyard-engine-bench --profile on the cpu): every decoder
// op of every layer in the decoder's order, then the LM head, each with the weight bytes
// it reads, and forward() whole; and profiling leaves the backend as it was (it repeats
// the step's KV writes with the same values), so the same step gives the same logits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_util.h"
#include "worker/backend/backend.h"
#include "worker/backend/step_profile.h"
#include "worker/model/model_config.h"
#include "worker/plan/batch_plan.h"

namespace sy {
namespace {

TEST(CpuProfile, EveryOpOfEveryLayerThenTheLmHead) {
  const testing::FixtureModel m = testing::all_fixture_models().front();
  auto src = ModelSource::open(testing::fixture_path(m.path));
  const ModelConfig config = ModelConfig::from_source(*src);
  BackendOptions opt;
  opt.num_kv_blocks = 8;
  auto backend = create_backend("cpu", *src, config, opt);
  const std::vector<int32_t> prompt = {11, 7, 300, 42, 5, 9, 1000, 3, 77, 12};
  BatchPlan plan;
  std::vector<int32_t> blocks;
  for (int32_t b = 0; b * backend->block_size() < static_cast<int32_t>(prompt.size()); ++b) blocks.push_back(b);
  plan.add_sequence(prompt, 0, blocks, backend->block_size(), BatchPlan::Logits::kLast);
  std::vector<float> before, after;
  backend->forward(plan, before);

  const StepProfile p = profile_step(*backend, plan, 3);
  const std::vector<std::string> want = {"embedding", "attention norm", "QKV projection", "RoPE and KV write",
                                         "attention", "output projection", "MLP norm", "gate/up projection",
                                         "down projection", "final norm", "LM head"};
  ASSERT_EQ(p.ops.size(), want.size());
  double sum = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const StepProfile::Op& op = p.ops[i];
    EXPECT_EQ(op.name, want[i]);
    const bool per_layer = i > 0 && i + 2 < want.size();
    EXPECT_EQ(op.calls, per_layer ? config.n_layers : 1) << op.name;
    EXPECT_GE(op.ms, 0.0) << op.name;
    const bool reads_weights = op.name.find("projection") != std::string::npos || op.name == "LM head";
    EXPECT_EQ(op.bytes > 0, reads_weights) << op.name;
    sum += op.ms;
  }
  EXPECT_DOUBLE_EQ(p.ops_ms, sum);
  EXPECT_GT(p.forward_ms, 0.0);

  backend->forward(plan, after);
  EXPECT_EQ(before, after);
}

}  // namespace
}  // namespace sy
