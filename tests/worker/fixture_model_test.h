// Shared by the tests that run a backend on every fixture model: the parameterized base
// (the model's source and golden JSON opened in SetUp), gtest's name for a parameter,
// and the host sampler's choice for rows of a forward_sample() call.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/model_source.h"
#include "fixture_util.h"
#include "worker/backend/backend.h"
#include "worker/engine/sampler.h"

namespace sy::testing {

class FixtureModelTest : public ::testing::TestWithParam<FixtureModel> {
 protected:
  void SetUp() override {
    src_ = ModelSource::open(fixture_path(GetParam().path));
    golden_ = load_golden(GetParam().fixture);
  }
  std::unique_ptr<ModelSource> src_;
  nlohmann::json golden_;
};

// "qwen3-tiny-bf16.gguf" → "qwen3_tiny_bf16_gguf".
inline std::string fixture_param_name(const ::testing::TestParamInfo<FixtureModel>& info) {
  std::string n = info.param.path;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

// What the host sampler chooses for each row (logits row i of `vocab` values) with that
// row's parameters and draw: forward_sample()'s contract.
inline std::vector<int32_t> host_sample_rows(std::span<const float> logits, size_t vocab,
                                             std::span<const RowSampling> rows) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    SamplingParams p;
    p.temperature = rows[i].temperature;
    p.top_k = rows[i].top_k;
    p.top_p = rows[i].top_p;
    p.min_p = rows[i].min_p;
    ids.push_back(
        sample_token_with_draw(logits.subspan(i * vocab, vocab), p, rows[i].uniform, {}, {}).id);
  }
  return ids;
}

}  // namespace sy::testing
