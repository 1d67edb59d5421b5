// A backend executes batch plans on one device (or device group). It owns the weights
// and the KV cache memory; block ids in the plan index its cache. Backends are chosen by
// name, as ggml and lmdeploy choose theirs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/model_source.h"
#include "worker/engine/batch_plan.h"
#include "worker/model/model_config.h"

namespace sy {

struct BackendOptions {
  int32_t block_size = 16;
  int32_t num_kv_blocks = 0;  // 0: derive from kv_memory_bytes
  size_t kv_memory_bytes = size_t{2} << 30;
  // cuda: with num_kv_blocks 0 and this > 0, the KV cache takes this fraction of the
  // device memory still free after weights and buffers, instead of kv_memory_bytes.
  double kv_free_memory_fraction = 0;
  // cuda: decode steps of 1..max_num_seqs sequences replay a CUDA graph per batch size.
  int32_t max_num_seqs = 16;
  // cuda: tokens per step the activation buffers hold from the start (0: a default);
  // larger steps grow them.
  int32_t max_step_tokens = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual int32_t block_size() const = 0;
  virtual int32_t num_kv_blocks() const = 0;

  // Runs one step: writes this step's keys and values into the cache and returns the
  // logits of plan.logits_rows, row-major [logits_rows.size(), vocab], in `logits`.
  virtual void forward(const BatchPlan& plan, std::vector<float>& logits) = 0;
};

// KV bytes per block for a model: layers × block_size × kv_dim × (K and V) × float32.
size_t kv_bytes_per_block(const ModelConfig& c, int32_t block_size);

// Creates the backend `name`: "cpu", or where built "cuda" / "cuda:N" (device N, default
// 0). Throws std::runtime_error for an unknown name or an unusable device,
// ModelFileError for a bad model.
std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src, const ModelConfig& config,
                                        const BackendOptions& options);

}  // namespace sy
