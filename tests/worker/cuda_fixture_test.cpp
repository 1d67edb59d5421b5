// The cuda backend on every fixture model (../shared/fixtures): logits within bf16
// tolerance of the goldens, greedy tokens equal to greedy_32 up to the first step whose
// golden margin is below the measured error, and the same tokens alone, batched,
// chunked and without graphs; forward_sample() choosing on the device what the host
// sampler chooses from forward()'s logits. Skips without a CUDA device.
//
// Tolerance: the goldens are float32 on the bf16 weights; this backend rounds every
// activation that enters a GEMM to bf16 (at most 2^-8 relative each) and keeps the
// residual stream and GEMM accumulation in fp32. The fixtures' logits are about
// N(0, 0.6) with |logit| ≤ 3.3, so relative errors of ~1% in the last hidden state give
// absolute errors of a few hundredths at worst: max |Δ| ≤ 0.05 and RMS ≤ 0.01 for the
// bf16 models. Q8_0 adds its own quantization error (0.068 at worst on the CPU, see
// fixture_util.h): 0.15 and 0.03.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "fixture_model_test.h"
#include "kernels/cuda_test_util.h"
#include "offline_engine.h"
#include "worker/backend/backend.h"
#include "worker/backend/cuda_backend.h"
#include "worker/engine/block_allocator.h"
#include "worker/engine/sampler.h"
#include "worker/model/rank_shape.h"

namespace sy {
namespace {

using testing::FixtureModel;

std::unique_ptr<Backend> open_cuda(const ModelSource& src, int32_t max_num_seqs,
                                   BackendOptions opt = {}) {
  opt.num_kv_blocks = 256;
  opt.max_num_seqs = max_num_seqs;
  return create_backend("cuda", src, ModelConfig::from_source(src), opt);
}

struct LogitsError {
  float max_abs = 0;
  double rms = 0;  // of the worst prompt
};

LogitsError logits_error(Engine& engine, const nlohmann::json& golden) {
  LogitsError e;
  for (const auto& p : golden["prompts"]) {
    const std::vector<float> got =
        engine.prompt_logits(p["ids"].get<std::vector<int32_t>>(), p["logits_positions"] == "all");
    const std::vector<float> want =
        testing::read_f32_file(testing::fixture_path(p["logits_file"].get<std::string>()));
    EXPECT_EQ(got.size(), want.size()) << p["text"];
    if (got.size() != want.size()) return {INFINITY, INFINITY};
    double sum_sq = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) {
        ADD_FAILURE() << "logit " << i << " of prompt " << p["text"] << " is not finite";
        return {INFINITY, INFINITY};
      }
      const float d = std::fabs(got[i] - want[i]);
      e.max_abs = std::max(e.max_abs, d);
      sum_sq += static_cast<double>(d) * d;
    }
    e.rms = std::max(e.rms, std::sqrt(sum_sq / static_cast<double>(got.size())));
  }
  return e;
}

// Steps of prompt i's golden greedy run before the first whose top-1/top-2 margin is at
// most 2·err (both logits may move by err in opposite directions there).
size_t decided_steps(const nlohmann::json& prompt, float err) {
  const auto margins = prompt["greedy_top2_margins"].get<std::vector<float>>();
  size_t n = 0;
  while (n < margins.size() && margins[n] > 2 * err) ++n;
  return n;
}

std::vector<int32_t> head(const std::vector<int32_t>& v, size_t n) {
  return {v.begin(), v.begin() + static_cast<ptrdiff_t>(std::min(n, v.size()))};
}

// The golden prompts as greedy requests of 32 tokens.
std::vector<EngineRequest> golden_requests(const nlohmann::json& golden) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : golden["prompts"]) prompts.push_back(p["ids"].get<std::vector<int32_t>>());
  return testing::greedy_requests(prompts, 32);
}

float max_abs_tolerance(const FixtureModel& m) {
  return m.same_weights ? 0.05f : 0.15f;
}
double rms_tolerance(const FixtureModel& m) {
  return m.same_weights ? 0.01 : 0.03;
}

class CudaFixture : public testing::FixtureModelTest {
 protected:
  void SetUp() override {
    SY_SKIP_WITHOUT_CUDA();
    FixtureModelTest::SetUp();
  }
};

TEST_P(CudaFixture, LogitsWithinBf16ToleranceOfGolden) {
  const LogitsError e = logits_error(*testing::offline_engine(open_cuda(*src_, 16), *src_), golden_);
  std::printf("%s: max |logit - golden| %.4g, worst prompt RMS %.4g\n", GetParam().path.c_str(),
              e.max_abs, e.rms);
  RecordProperty("max_abs_diff", std::to_string(e.max_abs));
  RecordProperty("rms_diff", std::to_string(e.rms));
  EXPECT_LE(e.max_abs, max_abs_tolerance(GetParam()));
  EXPECT_LE(e.rms, rms_tolerance(GetParam()));
}

class CudaSameWeightsFixture : public CudaFixture {};

TEST_P(CudaSameWeightsFixture, GreedyMatchesGoldenAloneBatchedChunkedAndEager) {
  std::shared_ptr<Backend> backend = open_cuda(*src_, 16);
  auto gen = testing::offline_engine(backend, *src_);
  const float err = logits_error(*gen, golden_).max_abs;
  const std::vector<EngineRequest> reqs = golden_requests(golden_);
  std::vector<std::vector<int32_t>> alone;
  size_t compared = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    alone.push_back(testing::run_tokens(*gen, {reqs[i]})[0]);
    const size_t n = decided_steps(golden_["prompts"][i], err);
    compared += n;
    EXPECT_EQ(head(alone.back(), n),
              head(golden_["prompts"][i]["greedy_32"].get<std::vector<int32_t>>(), n))
        << "prompt " << i << ", first " << n << " tokens (margin above " << 2 * err << ")";
  }
  std::printf("%s: %zu of %zu greedy tokens decided by a margin above 2 x %.4g\n",
              GetParam().path.c_str(), compared, 32 * reqs.size(), err);
  // Decode steps went through graphs: batch 1 at least.
  EXPECT_GE(dynamic_cast<CudaBackend&>(*backend).graphs_captured(), 1u);

  // In a batch of five (graph of 5), chunked (mixed prefill and decode, eager), and with
  // no graph for five (max_num_seqs 1: eager decode). Rows of a batch are computed by
  // other kernel shapes, so they agree up to the same margin rule.
  const auto batched = testing::run_tokens(*gen, reqs);
  const auto chunked = testing::run_tokens(*testing::offline_engine(backend, *src_, 2), reqs);
  const auto eager = testing::run_tokens(*testing::offline_engine(open_cuda(*src_, 1), *src_), reqs);
  // The argmax taken on the host from the fp32 logits instead of on the device.
  const auto host = testing::run_tokens(*testing::offline_engine(backend, *src_, 0, false), reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const size_t n = decided_steps(golden_["prompts"][i], err);
    EXPECT_EQ(head(batched[i], n), head(alone[i], n))
        << "prompt " << i << " in a batch of 5";
    EXPECT_EQ(head(chunked[i], n), head(alone[i], n)) << "prompt " << i << " chunked";
    // Same kernels and shapes as the graph replay of the batch: identical.
    EXPECT_EQ(eager[i], batched[i]) << "prompt " << i << " eager batch of 5";
    EXPECT_EQ(host[i], batched[i]) << "prompt " << i << " argmax on the host";
  }

  // The default path with the other programmatic-launch setting, alone, in the batch of
  // five and chunked (row counts 1..5 on one argmax workspace): the same tokens as the
  // default path up to the margin rule.
  const BackendTuning defaults;
  for (const bool pdl : {!defaults.programmatic_launch}) {
    BackendOptions opt;
    opt.tuning.programmatic_launch = pdl;
    std::shared_ptr<Backend> other_backend = open_cuda(*src_, 16, opt);
    auto other_gen = testing::offline_engine(other_backend, *src_);
    const auto other_batched = testing::run_tokens(*other_gen, reqs);
    const auto other_chunked = testing::run_tokens(*testing::offline_engine(other_backend, *src_, 2), reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
      const size_t n = decided_steps(golden_["prompts"][i], err);
      const std::string what = "prompt " + std::to_string(i) + (pdl ? ", pdl" : ", no pdl");
      EXPECT_EQ(head(testing::run_tokens(*other_gen, {reqs[i]})[0], n), head(alone[i], n))
          << what << " alone";
      EXPECT_EQ(head(other_batched[i], n), head(alone[i], n)) << what << " in a batch of 5";
      EXPECT_EQ(head(other_chunked[i], n), head(alone[i], n)) << what << " chunked";
    }
  }
}

// Tensor parallelism on one GPU: tp ranks sharing device 0 ("cuda:0,0"), each with its
// slice of the weights, over the local communicator (every step eager; the one-shot
// kernels and NCCL need a GPU per rank). The same tolerance as one rank: slicing changes only which GPU
// computes which heads, columns and vocabulary rows, and the row-parallel sums add two
// fp32 partial products. Every tp the model's shape allows among 2 and 4.
std::vector<int> tensor_parallel_sizes(const ModelSource& src) {
  std::vector<int> sizes;
  for (int tp : {2, 4}) {
    try {
      RankShape::of(ModelConfig::from_source(src), {0, tp});
      sizes.push_back(tp);
    } catch (const std::invalid_argument&) {
    }
  }
  return sizes;
}

std::unique_ptr<Backend> open_cuda_group(const ModelSource& src, int tp, int32_t max_num_seqs) {
  BackendOptions opt;
  opt.tp = tp;
  opt.num_kv_blocks = 256;
  opt.max_num_seqs = max_num_seqs;
  std::string device = "cuda:0";
  for (int r = 1; r < tp; ++r) device += ",0";
  return create_backend(device, src, ModelConfig::from_source(src), opt);
}

TEST_P(CudaFixture, TensorParallelLogitsWithinBf16ToleranceOfGolden) {
  const std::vector<int> sizes = tensor_parallel_sizes(*src_);
  if (sizes.empty()) GTEST_SKIP() << "neither tp 2 nor tp 4 divides this model";
  for (int tp : sizes) {
    const LogitsError e = logits_error(*testing::offline_engine(open_cuda_group(*src_, tp, 16), *src_), golden_);
    std::printf("%s tp %d: max |logit - golden| %.4g, worst prompt RMS %.4g\n", GetParam().path.c_str(), tp,
                e.max_abs, e.rms);
    EXPECT_LE(e.max_abs, max_abs_tolerance(GetParam())) << "tp " << tp;
    EXPECT_LE(e.rms, rms_tolerance(GetParam())) << "tp " << tp;
  }
}

// Greedy decoding under tensor parallelism against the golden run and against one rank,
// up to the margin rule; alone and in a batch of five.
TEST_P(CudaSameWeightsFixture, TensorParallelGreedyMatchesGoldenAndOneRank) {
  const std::vector<int> sizes = tensor_parallel_sizes(*src_);
  if (sizes.empty()) GTEST_SKIP() << "neither tp 2 nor tp 4 divides this model";
  const std::vector<EngineRequest> reqs = golden_requests(golden_);
  auto one = testing::offline_engine(open_cuda(*src_, 16), *src_);
  const float one_err = logits_error(*one, golden_).max_abs;
  const auto one_batched = testing::run_tokens(*one, reqs);
  for (int tp : sizes) {
    auto gen = testing::offline_engine(open_cuda_group(*src_, tp, 16), *src_);
    const float err = std::max(one_err, logits_error(*gen, golden_).max_abs);
    const auto batched = testing::run_tokens(*gen, reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
      const size_t n = decided_steps(golden_["prompts"][i], err);
      const auto alone = testing::run_tokens(*gen, {reqs[i]})[0];
      EXPECT_EQ(head(alone, n), head(golden_["prompts"][i]["greedy_32"].get<std::vector<int32_t>>(), n))
          << "tp " << tp << ", prompt " << i << ", first " << n << " tokens";
      EXPECT_EQ(head(batched[i], n), head(one_batched[i], n)) << "tp " << tp << ", prompt " << i << " in a batch of 5";
    }
  }
}

// forward_sample() against the host sampler on forward()'s logits of the same step, in
// an eager prefill step and in a decode step replayed from its graph whose logits rows
// skip one sequence; rows alternate argmax and draws with each filter.
TEST_P(CudaFixture, ForwardSampleChoosesWhatTheHostSamplerChooses) {
  auto backend = open_cuda(*src_, 16);
  const int32_t bs = backend->block_size();
  const auto vocab = static_cast<size_t>(backend->config().vocab);
  std::vector<std::vector<int32_t>> prompts, blocks;
  int32_t next_block = 0;
  for (const auto& p : golden_["prompts"]) {
    prompts.push_back(p["ids"].get<std::vector<int32_t>>());
    const int32_t n = blocks_for(static_cast<int64_t>(prompts.back().size()) + 1, bs);
    blocks.emplace_back();
    for (int32_t b = 0; b < n; ++b) blocks.back().push_back(next_block++);
  }
  ASSERT_LE(next_block, backend->num_kv_blocks());
  const uint64_t seed = testing::fresh_rng()();
  auto rows_for = [&](size_t n) {
    std::vector<RowSampling> rows(n);
    const RowSampling kinds[] = {{0.0f, 0, 1.0f, 0.0f, 0}, {0.8f, 40, 1.0f, 0.0f, 0},
                                 {1.0f, 0, 1.0f, 0.0f, 0}, {1.1f, 0, 0.9f, 0.05f, 0},
                                 {0.0f, 0, 1.0f, 0.0f, 0}, {0.7f, 0, 0.5f, 0.0f, 0}};
    for (size_t i = 0; i < n; ++i) {
      rows[i] = kinds[i % std::size(kinds)];
      rows[i].uniform = sampling_uniform(seed, static_cast<int64_t>(i));
    }
    return rows;
  };

  BatchPlan prefill;
  for (size_t i = 0; i < prompts.size(); ++i)
    prefill.add_sequence(prompts[i], 0, blocks[i], bs, BatchPlan::Logits::kLast);
  std::vector<float> logits;
  backend->forward(prefill, logits);
  const std::vector<RowSampling> prefill_rows = rows_for(prompts.size());
  std::vector<int32_t> ids;
  backend->forward_sample(prefill, prefill_rows, ids);
  EXPECT_EQ(ids, testing::host_sample_rows(logits, vocab, prefill_rows)) << "prefill, eager";

  // Decode: every sequence's next token, sequence 1 without logits.
  BatchPlan decode;
  for (size_t i = 0; i < prompts.size(); ++i)
    decode.add_sequence({ids[i]}, static_cast<int32_t>(prompts[i].size()), blocks[i], bs,
                        i == 1 ? BatchPlan::Logits::kNone : BatchPlan::Logits::kLast);
  backend->forward(decode, logits);
  const std::vector<RowSampling> decode_rows = rows_for(decode.logits_rows.size());
  backend->forward_sample(decode, decode_rows, ids);
  EXPECT_EQ(ids, testing::host_sample_rows(logits, vocab, decode_rows)) << "decode, graph";
  EXPECT_GE(dynamic_cast<CudaBackend&>(*backend).graphs_captured(), 1u);
}

// Runs with or without a GPU: a bad device name or a missing device is a clear error.
TEST(CudaBackendDevice, BadNamesAndMissingDevicesAreErrors) {
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  const ModelConfig config = ModelConfig::from_source(*src);
  auto message = [&](const std::string& name) -> std::string {
    try {
      create_backend(name, *src, config, BackendOptions{});
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda0", "gpu"})
    EXPECT_NE(message(bad).find("unknown backend"), std::string::npos) << bad;
  const std::string missing = message("cuda:999");
  EXPECT_NE(missing.find(testing::cuda_device_present() ? "does not exist" : "no CUDA device"),
            std::string::npos)
      << missing;
}

// Runs with or without a GPU: options outside their ranges are refused before any device
// work, with the ranges in the message.
TEST(CudaBackendDevice, BadOptionsAreErrors) {
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  const ModelConfig config = ModelConfig::from_source(*src);
  auto refused = [&](auto set) {
    BackendOptions opt;
    set(opt);
    try {
      create_backend("cuda", *src, config, opt);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find("tuning: prefill_warps must be 0, 4 or 8") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused([](BackendOptions& o) { o.tuning.prefill_attention_kernel = 2; }));
  EXPECT_TRUE(refused([](BackendOptions& o) { o.tuning.prefill_warps = 6; }));
  EXPECT_TRUE(refused([](BackendOptions& o) { o.tuning.deterministic_gemm_rows = 0; }));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaFixture, ::testing::ValuesIn(testing::all_fixture_models()),
                         testing::fixture_param_name);
INSTANTIATE_TEST_SUITE_P(Fixtures, CudaSameWeightsFixture,
                         ::testing::ValuesIn(testing::same_weight_fixture_models()),
                         testing::fixture_param_name);

}  // namespace
}  // namespace sy
