#include "worker/engine/block_allocator.h"

#include "common/check.h"

namespace sy {

BlockAllocator::BlockAllocator(int32_t num_blocks) : num_blocks_(num_blocks), in_use_(static_cast<size_t>(num_blocks), 0) {
  SY_CHECK(num_blocks > 0);
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockAllocator::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(b)] = 1;
  return b;
}

bool BlockAllocator::allocate(int32_t n, std::vector<int32_t>& out) {
  if (n > num_free()) return false;
  for (int32_t i = 0; i < n; ++i) out.push_back(*allocate());
  return true;
}

void BlockAllocator::release(int32_t block) {
  SY_CHECK_MSG(block >= 0 && block < num_blocks_ && in_use_[static_cast<size_t>(block)], "releasing block %d that is not in use", block);
  in_use_[static_cast<size_t>(block)] = 0;
  free_.push_back(block);
}

void BlockAllocator::release(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) release(b);
}

}  // namespace sy
