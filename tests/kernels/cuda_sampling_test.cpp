// GPU sampling against the CPU sampler (worker/engine/sampler.h): with the same uniform
// draw per row, the same token for every combination of temperature, top-k, top-p and
// min-p, ties in the logits included.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cuda/sampling.cuh"
#include "worker/engine/sampler.h"

namespace sy {
namespace {

using namespace sy::testing;

struct Case {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

TEST(CudaSampling, ChoosesTheCpuSamplersTokenForTheSameDraw) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const std::vector<Case> cases = {
      {0.0f, 0, 1.0f, 0.0f},  {1.0f, 0, 1.0f, 0.0f},   {0.7f, 40, 1.0f, 0.0f},
      {1.0f, 0, 0.9f, 0.0f},  {1.3f, 0, 1.0f, 0.05f},  {0.8f, 50, 0.95f, 0.02f},
      {1.0f, 1, 1.0f, 0.0f},  {1.0f, 0, 0.001f, 0.0f}, {2.0f, 1000, 0.5f, 0.0f},
      {0.5f, 0, 0.99f, 0.1f}, {1.0f, 7, 1.0f, 0.0f},   {1.0f, 0, 1.0f, 0.9f},
  };
  const int vocab = 50000;
  const int reps = 4;  // each case on several rows with different logits and draws
  const auto rows = static_cast<int64_t>(cases.size() * reps);
  std::vector<float> logits = normal_floats(rng, rows * vocab, 2.0f);
  // Ties: in every other row, copy the top logits onto other ids so that the order among
  // equal logits (id ascending) decides top-k and the draw.
  for (int64_t r = 0; r < rows; r += 2) {
    float* row = logits.data() + r * vocab;
    for (int j = 0; j < 30; ++j)
      row[(j * 7919 + 11) % vocab] = row[(j * 104729 + 3) % vocab] =
          9.0f + 0.25f * static_cast<float>(j % 3);
  }
  std::vector<cuda::SamplingRowParams> params(rows);
  std::vector<int32_t> want(rows);
  const uint64_t seed = rng();
  for (int64_t r = 0; r < rows; ++r) {
    const Case& c = cases[static_cast<size_t>(r / reps)];
    SamplingParams sp;
    sp.temperature = c.temperature;
    sp.top_k = c.top_k;
    sp.top_p = c.top_p;
    sp.min_p = c.min_p;
    const int64_t index = r * 17;
    params[r] = {c.temperature, c.top_k, c.top_p, c.min_p, sampling_uniform(seed, index)};
    want[r] = sample_token({logits.data() + r * vocab, static_cast<size_t>(vocab)}, sp, seed, index,
                           {}, {})
                  .id;
  }
  DeviceArray<float> d_logits(logits);
  DeviceArray<cuda::SamplingRowParams> d_params(params);
  DeviceArray<int32_t> d_out(rows);
  DeviceArray<uint8_t> ws(cuda::sampling_workspace_bytes(rows, vocab));
  d_out.poison();
  cuda::SampleArgs a{d_logits.get(),
                     rows,
                     vocab,
                     d_params.get(),
                     d_out.get(),
                     ws.get(),
                     cuda::sampling_workspace_bytes(rows, vocab)};
  SY_CUDA_OK(cuda::sample(a, nullptr));
  const std::vector<int32_t> got = d_out.download();
  for (int64_t r = 0; r < rows; ++r) {
    const Case& c = cases[static_cast<size_t>(r / reps)];
    EXPECT_EQ(got[r], want[r]) << "row " << r << ": temperature " << c.temperature << " top_k "
                               << c.top_k << " top_p " << c.top_p << " min_p " << c.min_p << " u "
                               << params[r].uniform;
  }
}

// Over many draws of one row the GPU sampler reproduces the CPU's choices, so it covers
// the whole distribution, not only its head.
TEST(CudaSampling, ManyDrawsOfOneDistribution) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int vocab = 1000;
  const int64_t rows = 256;
  const std::vector<float> one = normal_floats(rng, vocab, 1.5f);
  std::vector<float> logits;
  for (int64_t r = 0; r < rows; ++r) logits.insert(logits.end(), one.begin(), one.end());
  SamplingParams sp;
  sp.top_p = 0.8f;
  std::vector<cuda::SamplingRowParams> params(rows);
  std::vector<int32_t> want(rows);
  const uint64_t seed = rng();
  for (int64_t r = 0; r < rows; ++r) {
    params[r] = {sp.temperature, sp.top_k, sp.top_p, sp.min_p, sampling_uniform(seed, r)};
    want[r] = sample_token(one, sp, seed, r, {}, {}).id;
  }
  DeviceArray<float> d_logits(logits);
  DeviceArray<cuda::SamplingRowParams> d_params(params);
  DeviceArray<int32_t> d_out(rows);
  DeviceArray<uint8_t> ws(cuda::sampling_workspace_bytes(rows, vocab));
  d_out.poison();
  SY_CUDA_OK(cuda::sample({d_logits.get(), rows, vocab, d_params.get(), d_out.get(), ws.get(),
                           cuda::sampling_workspace_bytes(rows, vocab)},
                          nullptr));
  EXPECT_EQ(d_out.download(), want);
}

TEST(CudaSampling, RefusesAMissingOrShortWorkspace) {
  SY_SKIP_WITHOUT_CUDA();
  DeviceArray<float> logits(10);
  DeviceArray<cuda::SamplingRowParams> params(1);
  DeviceArray<int32_t> out(1);
  DeviceArray<uint8_t> ws(8);
  EXPECT_EQ(cuda::sample({logits.get(), 1, 10, params.get(), out.get(), nullptr, 0}, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::sample({logits.get(), 1, 10, params.get(), out.get(), ws.get(), 8}, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace sy
