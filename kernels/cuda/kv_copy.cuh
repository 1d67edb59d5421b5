// Whole KV blocks copied between the paged cache in device memory and the host tier's
// slots in mapped pinned host memory, which the kernel reads or writes over the bus
// (the host tier: common/kv_cache/kv_cache_manager.h). The cache is laid out per layer
// as keys [num_blocks, chunk], then values; a slot holds one block as [layer][keys,
// values][chunk] (kernels/paged_kv.h, KvBlockLayout).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/paged_kv.h"

namespace sy::cuda {

struct KvCopyArgs {
  char* cache = nullptr;         // device memory
  char* host = nullptr;          // the device's pointer to mapped pinned host memory
  const int2* pairs = nullptr;   // [n] (block, slot), readable by the device (mapped host memory)
  int32_t n = 0;                 // copies of one direction, no two writing the same place
  bool to_host = false;          // cache block → slot; else slot → cache block
  KvBlockLayout layout;
};

// One CTA per (copy, layer, keys or values), 16-byte accesses where the chunk allows.
cudaError_t copy_kv_blocks(const KvCopyArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
