// KV cache blocks with a prefix cache. A block is free, in use by one or more sequences
// (reference counted), or cached: unused but still holding the KV of a full block whose
// prefix hash is known, kept until its memory is needed (least recently released is
// evicted first; a sequence's blocks are released last block first, so an eviction
// shortens a cached prefix from its end). Sequences with the same prefix share its
// cached blocks.
//
// With a host tier (num_host_blocks > 0), an evicted block's KV is saved to a host slot
// instead of dropped (unless the host already holds its hash), and a prefix found there
// is loaded back into fresh blocks instead of recomputed: the manager records each copy
// (take_copies) and the backend runs them before the next step. A slot whose hash the
// cache also holds (loaded back, or computed again) is a spare copy: the host evicts
// those first, then the others least recently used first; a slot a pending copy reads
// or writes is kept until the copies are taken; a block evicted while the host holds its
// hash is not copied again but makes that slot the most recently used. So the host adds
// its whole size to the cache's instead of mirroring what the cache holds. A hash counts
// as cached (for events and matching) while the cache or the host holds it.
//
// Owned by one thread (the worker's engine thread; the simulated worker's strand).
// Changes to the set of cached hashes are collected and published to the KvEventHub
// once per step (flush_events).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/kv_cache/kv_events.h"
#include "kernels/paged_kv.h"

namespace sy {

class KvCacheManager {
 public:
  // `hub` may be null (no events).
  KvCacheManager(int32_t num_blocks, bool prefix_caching, KvEventHub* hub, int32_t num_host_blocks = 0);
  // A host tier of `num_host_blocks` slots that became ready after the cache started
  // (allocated in the background); only where there is none yet. Nothing without prefix
  // caching, as at construction.
  void add_host_tier(int32_t num_host_blocks);

  int32_t num_blocks() const { return num_blocks_; }
  // Blocks that allocate() can hand out: free ones plus evictable cached ones.
  int32_t num_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t num_used() const { return num_blocks_ - num_available(); }
  int32_t num_cached() const { return static_cast<int32_t>(by_hash_.size()); }
  int32_t num_host_blocks() const { return static_cast<int32_t>(host_.size()); }
  int32_t num_host_cached() const { return static_cast<int32_t>(host_by_hash_.size()); }
  int64_t host_blocks_saved() const { return host_saved_; }
  int64_t host_blocks_loaded() const { return host_loaded_; }

  // Takes a reference on the cached blocks of the longest prefix of `hashes` and
  // appends them to `blocks`; returns how many. Blocks the host tier holds are loaded
  // into fresh blocks (the prefix ends at the first load no block is available for);
  // the prefix's own blocks are referenced before any is taken, so loads never evict
  // them.
  int32_t match_prefix(const std::vector<uint64_t>& hashes, std::vector<int32_t>& blocks);

  // Appends n fresh blocks (reference count 1), evicting cached blocks as needed; false
  // (and nothing taken) when fewer than n are available.
  bool allocate(int32_t n, std::vector<int32_t>& blocks);

  // Marks a block that is in use as full, holding the prefix with this hash, so that
  // later requests can share it. A hash already held by another block is left there.
  void register_full_block(int32_t block, uint64_t hash);

  // Drops one reference on each block, last first; a block whose count reaches zero
  // becomes cached (if it has a hash) or free.
  void release(const std::vector<int32_t>& blocks);

  // Publishes the hashes stored and removed since the last flush.
  void flush_events();

  // The copies to and from the host tier recorded since the last call, in order; the
  // next step's plan carries them (a load whose block a later load overwrites is left out).
  std::vector<KvCopy> take_copies();

 private:
  struct Block {
    int32_t refs = 0;
    bool hashed = false;
    uint64_t hash = 0;
    std::list<int32_t>::iterator lru_pos;  // valid while cached (refs == 0 && hashed)
  };
  struct HostSlot {
    uint64_t hash = 0;
    bool pinned = false;                    // a pending copy uses it: not evictable
    bool spare = false;                     // in host_spare_ (the cache holds its hash)
    std::list<int32_t>::iterator lru_pos;  // valid while held and not pinned
  };
  void evict(int32_t block);
  int32_t take_block();  // a free block, else the least recently released cached one
  std::optional<int32_t> take_host_slot();
  void pin(int32_t slot);
  // Puts a held, unpinned slot at the newest end of its list: host_spare_ while the
  // cache holds its hash, else host_lru_.
  void host_touch(int32_t slot);

  int32_t num_blocks_;
  bool prefix_caching_;
  KvEventHub* hub_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;        // no reference, no hash
  std::list<int32_t> lru_;           // cached, least recently released first
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::vector<HostSlot> host_;
  std::vector<int32_t> host_free_;
  std::list<int32_t> host_lru_;    // held, unpinned slots only the host holds, least recently used first
  std::list<int32_t> host_spare_;  // held, unpinned slots the cache holds too, oldest first
  std::vector<int32_t> host_pinned_;
  std::unordered_map<uint64_t, int32_t> host_by_hash_;
  std::vector<KvCopy> copies_;
  int64_t host_saved_ = 0;
  int64_t host_loaded_ = 0;
  void note(KvEvent::Type type, uint64_t hash);
  // Changes since the last flush, in order, as runs of one type.
  std::vector<std::pair<KvEvent::Type, std::vector<uint64_t>>> pending_;
};

}  // namespace sy
