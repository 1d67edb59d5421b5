// The paged KV cache's block table, a plain CSR struct shared by the scheduler (which
// fills it) and every backend's attention kernels (which read it). Sequence s owns the
// blocks indices[indptr[s] .. indptr[s+1]); its last block holds last_block_len[s]
// tokens, every other block block_size tokens.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sy {

struct PagedKvTable {
  const int32_t* indptr = nullptr;          // [num_seqs + 1]
  const int32_t* indices = nullptr;         // [indptr[num_seqs]] block ids
  const int32_t* last_block_len = nullptr;  // [num_seqs], 1..block_size
  int32_t num_seqs = 0;
  int32_t block_size = 16;

  // Tokens held for sequence s (its context length).
  int64_t context_len(int32_t s) const {
    const int32_t nblocks = indptr[s + 1] - indptr[s];
    return nblocks == 0 ? 0 : static_cast<int64_t>(nblocks - 1) * block_size + last_block_len[s];
  }
  // Block id and slot of token `pos` of sequence s.
  int32_t block_of(int32_t s, int64_t pos) const { return indices[indptr[s] + pos / block_size]; }
  int32_t slot_of(int64_t pos) const { return static_cast<int32_t>(pos % block_size); }
};

// Where one block's keys and values sit, for the host tier's copies. Both backends lay
// the cache out per layer as keys [num_blocks, kv heads, block_size, head_dim], then
// values; a host slot holds one block as [layer][keys, values][kv heads, block_size,
// head_dim], chunk_bytes each.
struct KvBlockLayout {
  size_t chunk_bytes = 0;  // one block of one layer's keys (or values)
  size_t half_bytes = 0;   // one layer's keys: num_blocks × chunk_bytes
  int32_t layers = 0;
  size_t slot_bytes() const { return chunk_bytes * 2 * static_cast<size_t>(layers); }
};

// One block's copy between the KV cache and the backend's host tier (host memory that
// keeps prefix blocks evicted from the cache): to_host saves cache block `block` into
// host slot `host_slot`, otherwise the slot is loaded back into the block. A plan's
// copies run in order before its tokens; no two loads of one plan write the same block,
// and no save follows a load of its block or slot (common/kv_cache/kv_cache_manager.h:
// a loaded block's hash stays on the host, a loaded slot stays pinned), so running
// every save before every load gives the same result.
struct KvCopy {
  int32_t block = 0;
  int32_t host_slot = 0;
  bool to_host = false;
  bool operator==(const KvCopy& o) const {  // spelled out: nvcc builds this header as C++17
    return block == o.block && host_slot == o.host_slot && to_host == o.to_host;
  }
};

}  // namespace sy
