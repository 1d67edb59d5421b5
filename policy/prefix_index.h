// What each replica holds of a prompt, for routing. The exact index mirrors each
// worker's /internal/kv-events stream (a snapshot, then stored/removed hashes); the
// approximate index remembers the gateway's own recent routing decisions, bounded LRU,
// for replicas whose event stream is not (yet) connected.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sy::policy {

// Replicas are identified by a small dense index (0..63).
inline constexpr int kMaxReplicas = 64;

class ExactPrefixIndex {
 public:
  // A snapshot replaces everything known about the replica.
  void reset(int replica, std::span<const uint64_t> hashes);
  void stored(int replica, std::span<const uint64_t> hashes);
  void removed(int replica, std::span<const uint64_t> hashes);
  void forget(int replica);  // replica lost or restarted

  // Leading blocks of `prefix_hashes` (chained, so a prefix) the replica holds.
  int32_t matched_blocks(int replica, std::span<const uint64_t> prefix_hashes) const;
  size_t size(int replica) const;

 private:
  std::unordered_map<uint64_t, uint64_t> holders_;  // hash → bitmask of replicas
  size_t counts_[kMaxReplicas] = {};
};

class ApproxPrefixIndex {
 public:
  explicit ApproxPrefixIndex(size_t capacity) : capacity_(capacity) {}

  // The gateway sent a prompt with these block hashes to `replica`.
  void record(int replica, std::span<const uint64_t> prefix_hashes);
  int32_t matched_blocks(int replica, std::span<const uint64_t> prefix_hashes) const;
  void forget(int replica);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t replicas;
    std::list<uint64_t>::iterator pos;
  };
  size_t capacity_;
  std::list<uint64_t> lru_;  // most recent last
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace sy::policy
