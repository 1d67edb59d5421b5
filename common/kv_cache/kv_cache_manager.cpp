#include "common/kv_cache/kv_cache_manager.h"

#include <algorithm>
#include <unordered_set>

#include "common/check.h"

namespace sy {

KvCacheManager::KvCacheManager(int32_t num_blocks, bool prefix_caching, KvEventHub* hub, int32_t num_host_blocks)
    : num_blocks_(num_blocks), prefix_caching_(prefix_caching), hub_(hub), blocks_(static_cast<size_t>(num_blocks)),
      host_(static_cast<size_t>(prefix_caching ? num_host_blocks : 0)) {
  SY_CHECK(num_blocks > 0 && num_host_blocks >= 0);
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
  for (int32_t s = num_host_blocks - 1; s >= 0 && !host_.empty(); --s) host_free_.push_back(s);
}

void KvCacheManager::add_host_tier(int32_t num_host_blocks) {
  SY_CHECK(host_.empty() && num_host_blocks >= 0);
  if (!prefix_caching_) return;
  host_.resize(static_cast<size_t>(num_host_blocks));
  for (int32_t s = num_host_blocks - 1; s >= 0; --s) host_free_.push_back(s);
}

int32_t KvCacheManager::match_prefix(const std::vector<uint64_t>& hashes, std::vector<int32_t>& blocks) {
  if (!prefix_caching_) return 0;
  // The whole prefix first: a reference on each block the cache holds, so that loading
  // its host-held blocks (which takes fresh blocks and may evict) cannot evict its own
  // later blocks. A host-held block's place is -1 until it is loaded.
  const size_t start = blocks.size();
  struct Load {
    size_t at;
    uint64_t hash;
    int32_t slot;
  };
  std::vector<Load> loads;
  for (uint64_t h : hashes) {
    if (auto it = by_hash_.find(h); it != by_hash_.end()) {
      Block& b = blocks_[static_cast<size_t>(it->second)];
      if (b.refs == 0) lru_.erase(b.lru_pos);
      ++b.refs;
      blocks.push_back(it->second);
    } else if (auto on_host = host_by_hash_.find(h); on_host != host_by_hash_.end()) {
      loads.push_back({blocks.size(), h, on_host->second});
      blocks.push_back(-1);
    } else {
      break;
    }
  }
  // Loads beyond the blocks available end the prefix at the first that does not fit.
  const size_t fit = std::min(loads.size(), static_cast<size_t>(num_available()));
  if (fit < loads.size()) {
    std::vector<int32_t> beyond;
    for (size_t i = loads[fit].at; i < blocks.size(); ++i)
      if (blocks[i] >= 0) beyond.push_back(blocks[i]);
    blocks.resize(loads[fit].at);
    loads.resize(fit);
    release(beyond);
  }
  for (const Load& l : loads) pin(l.slot);  // before take_block, whose eviction may want a host slot
  for (const Load& l : loads) {
    const int32_t id = take_block();
    Block& b = blocks_[static_cast<size_t>(id)];
    b.refs = 1;
    b.hashed = true;
    b.hash = l.hash;
    by_hash_[l.hash] = id;
    copies_.push_back({id, l.slot, false});
    ++host_loaded_;
    blocks[l.at] = id;
  }
  return static_cast<int32_t>(blocks.size() - start);
}

void KvCacheManager::pin(int32_t slot) {
  HostSlot& s = host_[static_cast<size_t>(slot)];
  if (s.pinned) return;
  (s.spare ? host_spare_ : host_lru_).erase(s.lru_pos);
  s.pinned = true;
  host_pinned_.push_back(slot);
}

void KvCacheManager::host_touch(int32_t slot) {
  HostSlot& s = host_[static_cast<size_t>(slot)];
  const bool spare = by_hash_.count(s.hash) > 0;
  std::list<int32_t>& to = spare ? host_spare_ : host_lru_;
  if (s.pinned) {
    s.pinned = false;
    to.push_back(slot);
    s.lru_pos = std::prev(to.end());
  } else {
    to.splice(to.end(), s.spare ? host_spare_ : host_lru_, s.lru_pos);
  }
  s.spare = spare;
}

std::optional<int32_t> KvCacheManager::take_host_slot() {
  if (!host_free_.empty()) {
    const int32_t slot = host_free_.back();
    host_free_.pop_back();
    return slot;
  }
  // A spare copy first: dropping it loses nothing the cache does not hold.
  std::list<int32_t>& from = host_spare_.empty() ? host_lru_ : host_spare_;
  if (from.empty()) return std::nullopt;
  const int32_t slot = from.front();
  from.pop_front();
  const uint64_t old = host_[static_cast<size_t>(slot)].hash;
  host_by_hash_.erase(old);
  if (!by_hash_.count(old)) note(KvEvent::Type::kRemoved, old);
  return slot;
}

void KvCacheManager::evict(int32_t id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  by_hash_.erase(b.hash);
  b.hashed = false;
  if (auto held = host_by_hash_.find(b.hash); held != host_by_hash_.end()) {
    // The host still holds it: no copy, but it is now the host's most recently used
    // (a block loaded once and used for many turns since must not be its oldest), and no
    // longer a spare.
    if (!host_[static_cast<size_t>(held->second)].pinned) host_touch(held->second);
    return;
  }
  if (const std::optional<int32_t> slot = take_host_slot()) {
    HostSlot& s = host_[static_cast<size_t>(*slot)];
    s.hash = b.hash;
    s.pinned = true;  // until the save has been taken
    host_pinned_.push_back(*slot);
    host_by_hash_[b.hash] = *slot;
    copies_.push_back({id, *slot, true});
    ++host_saved_;
    return;
  }
  note(KvEvent::Type::kRemoved, b.hash);
}

int32_t KvCacheManager::take_block() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = lru_.front();
    lru_.pop_front();
    evict(id);
  }
  return id;
}

bool KvCacheManager::allocate(int32_t n, std::vector<int32_t>& blocks) {
  if (n > num_available()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = take_block();
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
  if (auto held = host_by_hash_.find(hash); held == host_by_hash_.end()) {
    note(KvEvent::Type::kStored, hash);
  } else if (!host_[static_cast<size_t>(held->second)].pinned) {
    host_touch(held->second);  // computed again: the host's copy is now a spare
  }
}

void KvCacheManager::release(const std::vector<int32_t>& ids) {
  // Last block first: a sequence's tail becomes evictable before its head, so that an
  // eviction shortens a cached prefix instead of cutting it off at its start.
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    const int32_t id = *it;
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

std::vector<KvCopy> KvCacheManager::take_copies() {
  if (copies_.empty()) return {};  // nothing pinned either: only a pending copy pins
  for (int32_t slot : host_pinned_) host_touch(slot);  // a load's slot becomes a spare
  host_pinned_.clear();
  // A block loaded twice was evicted after its first load without a save (its hash is
  // on the host): only the last load into it matters, and loads of one run are distinct.
  std::vector<KvCopy> out;
  out.reserve(copies_.size());
  std::unordered_set<int32_t> loaded_later;
  for (auto it = copies_.rbegin(); it != copies_.rend(); ++it) {
    if (it->to_host) {
      loaded_later.erase(it->block);
    } else if (!loaded_later.insert(it->block).second) {
      continue;
    }
    out.push_back(*it);
  }
  copies_.clear();
  return {out.rbegin(), out.rend()};
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
