#include "common/kv_cache/kv_cache_manager.h"

#include "common/check.h"

namespace sy {

KvCacheManager::KvCacheManager(int32_t num_blocks, bool prefix_caching, KvEventHub* hub)
    : num_blocks_(num_blocks), prefix_caching_(prefix_caching), hub_(hub), blocks_(static_cast<size_t>(num_blocks)) {
  SY_CHECK(num_blocks > 0);
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t KvCacheManager::match_prefix(const std::vector<uint64_t>& hashes, std::vector<int32_t>& blocks) {
  if (!prefix_caching_) return 0;
  int32_t n = 0;
  for (uint64_t h : hashes) {
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    Block& b = blocks_[static_cast<size_t>(it->second)];
    if (b.refs == 0) lru_.erase(b.lru_pos);
    ++b.refs;
    blocks.push_back(it->second);
    ++n;
  }
  return n;
}

void KvCacheManager::evict(int32_t id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  by_hash_.erase(b.hash);
  note(KvEvent::Type::kRemoved, b.hash);
  b.hashed = false;
}

bool KvCacheManager::allocate(int32_t n, std::vector<int32_t>& blocks) {
  if (n > num_available()) return false;
  for (int32_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = lru_.front();
      lru_.pop_front();
      evict(id);
    }
    blocks_[static_cast<size_t>(id)].refs = 1;
    blocks.push_back(id);
  }
  return true;
}

void KvCacheManager::register_full_block(int32_t id, uint64_t hash) {
  if (!prefix_caching_) return;
  Block& b = blocks_[static_cast<size_t>(id)];
  SY_CHECK(b.refs > 0);
  if (b.hashed || by_hash_.count(hash)) return;
  b.hashed = true;
  b.hash = hash;
  by_hash_[hash] = id;
  note(KvEvent::Type::kStored, hash);
}

void KvCacheManager::release(const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    Block& b = blocks_[static_cast<size_t>(id)];
    SY_CHECK_MSG(b.refs > 0, "releasing free block %d", id);
    if (--b.refs > 0) continue;
    if (b.hashed) {
      lru_.push_back(id);
      b.lru_pos = std::prev(lru_.end());
    } else {
      free_.push_back(id);
    }
  }
}

void KvCacheManager::note(KvEvent::Type type, uint64_t hash) {
  if (!hub_) return;
  if (pending_.empty() || pending_.back().first != type) pending_.emplace_back(type, std::vector<uint64_t>{});
  pending_.back().second.push_back(hash);
}

void KvCacheManager::flush_events() {
  for (auto& [type, hashes] : pending_) hub_->publish(type, std::move(hashes));
  pending_.clear();
}

}  // namespace sy
