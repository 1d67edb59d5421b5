#include "worker/backend/backend.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "worker/backend/cpu_backend.h"
#include "worker/backend/group_backend.h"
#include "worker/plan/context_split.h"
#ifdef SY_HAVE_CUDA
#include "worker/backend/cuda_backend.h"
#endif

namespace sy {

std::vector<int> cuda_devices(const std::string& name, int ranks) {
  std::vector<int> out;
  if (name == "cuda") {
    for (int r = 0; r < ranks; ++r) out.push_back(r);
    return out;
  }
  if (name.rfind("cuda:", 0) != 0) return out;
  const std::string list = name.substr(5);
  for (size_t i = 0; i <= list.size();) {
    const size_t end = std::min(list.find(',', i), list.size());
    const std::string item = list.substr(i, end - i);
    if (item.empty() || item.size() > 3 || item.find_first_not_of("0123456789") != std::string::npos) return {};
    out.push_back(std::stoi(item));
    i = end + 1;
  }
  if (out.size() == 1)
    for (int r = 1; r < ranks; ++r) out.push_back(out[0] + r);
  if (static_cast<int>(out.size()) != ranks)
    throw std::invalid_argument("device '" + name + "' lists " + std::to_string(out.size()) + " GPUs for " +
                                std::to_string(ranks) + " ranks (tp × pcp, one per rank)");
  return out;
}

void Backend::forward_sample(const BatchPlan&, std::span<const RowSampling>,
                             std::vector<int32_t>&) {
  throw std::logic_error("backend '" + name() + "' does not sample on the device");
}

size_t kv_bytes_per_block(const ModelConfig& c, int32_t block_size, size_t bytes_per_value) {
  return static_cast<size_t>(c.n_layers) * static_cast<size_t>(block_size) *
         static_cast<size_t>(c.kv_dim()) * 2 * bytes_per_value;
}

namespace {

// One copy, `c.block` being the cache's own slot of the block.
void copy_kv_block(const KvBlockLayout& l, const KvCopy& c, char* cache, char* host) {
  for (int32_t layer = 0; layer < l.layers; ++layer)
    for (size_t half = 0; half < 2; ++half) {
      char* dev = cache + (2 * static_cast<size_t>(layer) + half) * l.half_bytes + static_cast<size_t>(c.block) * l.chunk_bytes;
      char* hst = host + static_cast<size_t>(c.host_slot) * l.slot_bytes() + (2 * static_cast<size_t>(layer) + half) * l.chunk_bytes;
      if (c.to_host)
        std::memcpy(hst, dev, l.chunk_bytes);
      else
        std::memcpy(dev, hst, l.chunk_bytes);
    }
}

}  // namespace

void copy_kv_blocks(const KvBlockLayout& l, std::span<const KvCopy> copies, char* cache, char* host) {
  for (const KvCopy& c : copies) copy_kv_block(l, c, cache, host);
}

bool rank_kv_copies(std::span<const KvCopy> copies, int32_t rank, int32_t ranks, std::vector<KvCopy>& own) {
  own.clear();
  bool saves = false, loads = false;
  for (const KvCopy& c : copies) (c.to_host ? saves : loads) = true;
  for (const bool to_host : {true, false})
    for (const KvCopy& c : copies)
      if (c.to_host == to_host && block_home(c.block, ranks) == rank)
        own.push_back({block_slot(c.block, ranks), c.host_slot, to_host});
  return saves && loads;
}

void copy_kv_blocks_of_rank(const KvBlockLayout& l, std::span<const KvCopy> copies, char* cache, char* host,
                            int32_t rank, int32_t ranks, const std::function<void()>& between) {
  std::vector<KvCopy> own;
  const bool barrier = rank_kv_copies(copies, rank, ranks, own);
  const auto loads = std::find_if(own.begin(), own.end(), [](const KvCopy& c) { return !c.to_host; });
  copy_kv_blocks(l, {own.begin(), loads}, cache, host);
  if (barrier) between();
  copy_kv_blocks(l, {loads, own.end()}, cache, host);
}

namespace {

std::unique_ptr<Backend> create_device_backend(const std::string& name, const ModelSource& src,
                                               const ModelConfig& config, const BackendOptions& options) {
  if (options.tp < 1 || options.tp > 64) throw std::invalid_argument("tp must be in 1..64");
  if (options.pcp < 1 || options.pcp > 64) throw std::invalid_argument("pcp must be in 1..64");
  if (name != "cpu" && options.cpu_kv_f16)
    throw std::invalid_argument("a float16 KV cache is a cpu backend option (cuda keeps its cache in bf16)");
  if (name == "cpu")
    return options.tp > 1 || options.pcp > 1 ? create_cpu_group(src, config, options) : std::make_unique<CpuBackend>(src, config, options);
  const std::vector<int> devices = cuda_devices(name, options.tp * options.pcp);
#ifdef SY_HAVE_CUDA
  if (devices.size() > 1) return create_cuda_group(src, config, options, devices);
  if (devices.size() == 1) return std::make_unique<CudaBackend>(src, config, options, devices[0]);
  throw std::runtime_error("unknown backend '" + name + "' (built: cpu, cuda, cuda:N, cuda:N,M,...)");
#else
  if (!devices.empty())
    throw std::runtime_error(
        "backend '" + name +
        "': this build has no CUDA support (configure with SWITCHYARD_CUDA=ON)");
  throw std::runtime_error("unknown backend '" + name + "' (built: cpu)");
#endif
}

}  // namespace

std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src,
                                        const ModelConfig& config, const BackendOptions& options) {
  auto backend = create_device_backend(name, src, config, options);
  // Every backend allocates its host tier on a thread of its own; wanted at once, it is
  // waited for and taken here (an allocation's error thrown).
  if (options.kv_host_memory_bytes > 0 && !options.kv_host_in_background) {
    backend->wait_host_tier();
    backend->take_host_tier();
  }
  return backend;
}

}  // namespace sy
