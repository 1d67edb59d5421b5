#include "worker/backend/backend.h"

#include <stdexcept>

#include "worker/backend/cpu_backend.h"

namespace sy {

size_t kv_bytes_per_block(const ModelConfig& c, int32_t block_size) {
  return static_cast<size_t>(c.n_layers) * static_cast<size_t>(block_size) * static_cast<size_t>(c.kv_dim()) * 2 * sizeof(float);
}

std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src, const ModelConfig& config,
                                        const BackendOptions& options) {
  if (name == "cpu") return std::make_unique<CpuBackend>(src, config, options);
  throw std::runtime_error("unknown backend '" + name + "' (built: cpu)");
}

}  // namespace sy
