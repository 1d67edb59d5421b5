#include "policy/prefix_index.h"

#include "common/check.h"

namespace sy::policy {
namespace {
uint64_t bit(int replica) {
  SY_CHECK(replica >= 0 && replica < kMaxReplicas);
  return uint64_t{1} << replica;
}
}  // namespace

void ExactPrefixIndex::reset(int replica, std::span<const uint64_t> hashes) {
  forget(replica);
  stored(replica, hashes);
}

void ExactPrefixIndex::stored(int replica, std::span<const uint64_t> hashes) {
  const uint64_t b = bit(replica);
  for (uint64_t h : hashes) {
    uint64_t& mask = holders_[h];
    if (!(mask & b)) ++counts_[replica];
    mask |= b;
  }
}

void ExactPrefixIndex::removed(int replica, std::span<const uint64_t> hashes) {
  const uint64_t b = bit(replica);
  for (uint64_t h : hashes) {
    auto it = holders_.find(h);
    if (it == holders_.end() || !(it->second & b)) continue;
    --counts_[replica];
    if ((it->second &= ~b) == 0) holders_.erase(it);
  }
}

void ExactPrefixIndex::forget(int replica) {
  const uint64_t b = bit(replica);
  for (auto it = holders_.begin(); it != holders_.end();) {
    if ((it->second &= ~b) == 0)
      it = holders_.erase(it);
    else
      ++it;
  }
  counts_[replica] = 0;
}

int32_t ExactPrefixIndex::matched_blocks(int replica, std::span<const uint64_t> prefix_hashes) const {
  const uint64_t b = bit(replica);
  int32_t n = 0;
  for (uint64_t h : prefix_hashes) {
    auto it = holders_.find(h);
    if (it == holders_.end() || !(it->second & b)) break;
    ++n;
  }
  return n;
}

size_t ExactPrefixIndex::size(int replica) const { return counts_[replica]; }

void ApproxPrefixIndex::record(int replica, std::span<const uint64_t> prefix_hashes) {
  const uint64_t b = bit(replica);
  for (uint64_t h : prefix_hashes) {
    auto it = entries_.find(h);
    if (it != entries_.end()) {
      it->second.replicas |= b;
      lru_.splice(lru_.end(), lru_, it->second.pos);
      continue;
    }
    if (capacity_ == 0) return;
    if (entries_.size() >= capacity_) {
      entries_.erase(lru_.front());
      lru_.pop_front();
    }
    lru_.push_back(h);
    entries_.emplace(h, Entry{b, std::prev(lru_.end())});
  }
}

int32_t ApproxPrefixIndex::matched_blocks(int replica, std::span<const uint64_t> prefix_hashes) const {
  const uint64_t b = bit(replica);
  int32_t n = 0;
  for (uint64_t h : prefix_hashes) {
    auto it = entries_.find(h);
    if (it == entries_.end() || !(it->second.replicas & b)) break;
    ++n;
  }
  return n;
}

void ApproxPrefixIndex::forget(int replica) {
  const uint64_t b = bit(replica);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if ((it->second.replicas &= ~b) == 0) {
      lru_.erase(it->second.pos);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace sy::policy
