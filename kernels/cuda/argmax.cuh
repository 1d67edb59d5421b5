// Greedy choice on the GPU: the index of each row's largest logit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct ArgmaxArgs {
  const float* logits = nullptr;  // [rows, vocab] fp32
  int64_t rows = 0;
  int vocab = 0;
  int32_t* out = nullptr;  // [rows]
};

// The first index of the maximum on ties, as torch.argmax and the CPU sampler choose.
// NaN logits are never chosen (a row of only NaN gives 0).
cudaError_t argmax(const ArgmaxArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
