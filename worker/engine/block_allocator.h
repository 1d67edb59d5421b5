// Hands out KV cache block ids. The prefix cache (shared, ref-counted, LRU-evicted
// blocks) builds on this in the scheduler; here a block has one owner.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace sy {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t num_blocks);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }

  std::optional<int32_t> allocate();
  // Allocates n blocks or none.
  bool allocate(int32_t n, std::vector<int32_t>& out);
  void release(int32_t block);
  void release(const std::vector<int32_t>& blocks);

 private:
  int32_t num_blocks_;
  std::vector<int32_t> free_;   // stack: the most recently freed block is reused first
  std::vector<uint8_t> in_use_;
};

// Blocks needed to hold `tokens` tokens.
inline int32_t blocks_for(int64_t tokens, int32_t block_size) {
  return static_cast<int32_t>((tokens + block_size - 1) / block_size);
}

}  // namespace sy
