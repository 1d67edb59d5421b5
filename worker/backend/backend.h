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

// Creates the backend `name` ("cpu"; "cuda" where built). Throws std::runtime_error for
// an unknown name, ModelFileError for a bad model.
std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src, const ModelConfig& config,
                                        const BackendOptions& options);

}  // namespace sy
