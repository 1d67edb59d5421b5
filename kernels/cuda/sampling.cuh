// Temperature, top-k, top-p and min-p sampling on the GPU, one row of logits per
// request. The random number is passed in per row, so a draw stays a pure function of
// (seed, token index) exactly as on the CPU (worker/engine/sampler.h): the kernel
// reproduces sample_token's candidate order (logit descending, id ascending), its
// filters and its draw, with sums in float64 in another order (the chosen id can differ
// only where a cumulative sum meets a threshold within rounding).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sy::cuda {

struct SamplingRowParams {
  float temperature = 1.0f;  // 0: greedy (argmax, first index on ties)
  int32_t top_k = 0;         // ≤ 0 or ≥ vocab: off
  float top_p = 1.0f;        // ≥ 1: off
  float min_p = 0.0f;        // ≤ 0: off
  double uniform = 0;        // the draw in [0, 1): sampling_uniform(seed, token index)
};

struct SampleArgs {
  const float* logits = nullptr;  // [rows, vocab] fp32, penalties already applied; finite or -inf
  int64_t rows = 0;
  int vocab = 0;
  const SamplingRowParams* params = nullptr;  // [rows] device
  int32_t* out = nullptr;                     // [rows] chosen ids
  void* workspace = nullptr;                  // sampling_workspace_bytes(rows, vocab)
  size_t workspace_bytes = 0;
};

size_t sampling_workspace_bytes(int64_t rows, int vocab);

cudaError_t sample(const SampleArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
