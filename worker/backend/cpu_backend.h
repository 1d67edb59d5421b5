// The CPU backend: float32 compute, GEMMs through the batch-invariant kernel
// (BackendOptions::deterministic, on by default) or OpenBLAS, attention over the paged KV
// cache on the process thread pool. It is the reference every other backend is
// compared with.
#pragma once

#include <memory>

#include "worker/backend/backend.h"
#include "worker/model/weights.h"

namespace sy {

class CpuBackend : public Backend {
 public:
  CpuBackend(const ModelSource& src, const ModelConfig& config, const BackendOptions& options);

  std::string name() const override { return "cpu"; }
  const ModelConfig& config() const override { return weights_.config; }
  int32_t block_size() const override { return block_size_; }
  int32_t num_kv_blocks() const override { return num_blocks_; }
  void forward(const BatchPlan& plan, std::vector<float>& logits) override;

 private:
  // y[m, n] = x[m, k] · w[n, k]ᵀ with the GEMM the options chose.
  void matmul(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k) const;

  ModelWeights weights_;
  cpu::RopeParams rope_;
  int32_t block_size_;
  int32_t num_blocks_;
  bool deterministic_;
  // Per layer: [num_blocks, n_kv_heads, block_size, head_dim] keys, then values.
  std::unique_ptr<float[]> kv_;
  size_t layer_kv_floats_ = 0;
  // Activations, grown to the largest step seen.
  std::vector<float> x_, h_, qkv_, attn_, proj_, gate_up_, act_;
};

}  // namespace sy
