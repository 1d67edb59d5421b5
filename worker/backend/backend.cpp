#include "worker/backend/backend.h"

#include <stdexcept>

#include "worker/backend/cpu_backend.h"
#include "worker/backend/group_backend.h"
#ifdef SY_HAVE_CUDA
#include "worker/backend/cuda_backend.h"
#endif

namespace sy {
namespace {

// "cuda" → 0, "cuda:N" → N; -1 when `name` is not a cuda device name.
int cuda_device_index(const std::string& name) {
  if (name == "cuda") return 0;
  if (name.rfind("cuda:", 0) != 0 || name.size() == 5 || name.size() > 8) return -1;
  int n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

}  // namespace

void Backend::forward_sample(const BatchPlan&, std::span<const RowSampling>,
                             std::vector<int32_t>&) {
  throw std::logic_error("backend '" + name() + "' does not sample on the device");
}

size_t kv_bytes_per_block(const ModelConfig& c, int32_t block_size) {
  return static_cast<size_t>(c.n_layers) * static_cast<size_t>(block_size) *
         static_cast<size_t>(c.kv_dim()) * 2 * sizeof(float);
}

std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src,
                                        const ModelConfig& config, const BackendOptions& options) {
  if (options.tp < 1 || options.tp > 64) throw std::invalid_argument("tp must be in 1..64");
  if (name == "cpu") return options.tp > 1 ? create_cpu_group(src, config, options) : std::make_unique<CpuBackend>(src, config, options);
  const int device = cuda_device_index(name);
#ifdef SY_HAVE_CUDA
  if (device >= 0 && options.tp > 1)
    throw std::invalid_argument("tensor parallelism on cuda devices is not built yet (cpu ranks only: --device cpu --tp N)");
  if (device >= 0) return std::make_unique<CudaBackend>(src, config, options, device);
  throw std::runtime_error("unknown backend '" + name + "' (built: cpu, cuda, cuda:N)");
#else
  if (device >= 0)
    throw std::runtime_error(
        "backend '" + name +
        "': this build has no CUDA support (configure with SWITCHYARD_CUDA=ON)");
  throw std::runtime_error("unknown backend '" + name + "' (built: cpu)");
#endif
}

}  // namespace sy
