// KV cache manager: sharing by hash, reference counts, LRU eviction of cached blocks,
// and the events it publishes, as table rows of operations and expected states.
#include "common/kv_cache/kv_cache_manager.h"

#include <gtest/gtest.h>

namespace sy {
namespace {

TEST(KvCacheManager, SharesEvictsLruAndPublishesInOrder) {
  KvEventHub hub;
  auto sub = hub.subscribe(nullptr);
  KvCacheManager kv(4, true, &hub);
  std::vector<int32_t> a, b, c;
  ASSERT_TRUE(kv.allocate(2, a));
  kv.register_full_block(a[0], 100);
  kv.register_full_block(a[1], 101);
  kv.flush_events();
  EXPECT_EQ(kv.num_used(), 2);
  EXPECT_EQ(kv.num_cached(), 2);

  // A second sequence with the same prefix shares both blocks.
  EXPECT_EQ(kv.match_prefix({100, 101, 102}, b), 2);
  EXPECT_EQ(b, a);
  kv.release(a);
  EXPECT_EQ(kv.num_used(), 2);  // still referenced by b
  kv.release(b);
  EXPECT_EQ(kv.num_used(), 0);
  EXPECT_EQ(kv.num_available(), 4);  // cached blocks count as available
  EXPECT_EQ(kv.num_cached(), 2);

  // Allocation takes free blocks first, then evicts the least recently released; a
  // sequence is released last block first, so its prefix is shortened, not cut.
  ASSERT_TRUE(kv.allocate(3, c));
  EXPECT_EQ(kv.num_cached(), 1);
  EXPECT_EQ(kv.match_prefix({100, 101}, c), 1) << "101 (the tail) was evicted, 100 is still cached";
  kv.release({c.back()});
  std::vector<int32_t> d;
  EXPECT_FALSE(kv.allocate(2, d)) << "only one block is left";
  EXPECT_TRUE(d.empty());
  kv.flush_events();

  const auto events = sub->drain();
  ASSERT_EQ(events.size(), 3u);  // snapshot, stored {100, 101}, removed {101}
  EXPECT_EQ(events[1].type, KvEvent::Type::kStored);
  EXPECT_EQ(events[1].hashes, (std::vector<uint64_t>{100, 101}));
  EXPECT_EQ(events[2].type, KvEvent::Type::kRemoved);
  EXPECT_EQ(events[2].hashes, (std::vector<uint64_t>{101}));
  EXPECT_EQ(hub.cached_count(), 1u);
}

TEST(KvCacheManager, DuplicateHashKeepsTheFirstBlockAndCachingCanBeOff) {
  KvCacheManager kv(4, true, nullptr);
  std::vector<int32_t> a, b;
  kv.allocate(1, a);
  kv.allocate(1, b);
  kv.register_full_block(a[0], 7);
  kv.register_full_block(b[0], 7);  // same content computed twice: one stays cached
  kv.release(a);
  kv.release(b);
  EXPECT_EQ(kv.num_cached(), 1);
  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({7}, m), 1);
  EXPECT_EQ(m[0], a[0]);

  KvCacheManager off(2, false, nullptr);
  std::vector<int32_t> x;
  off.allocate(1, x);
  off.register_full_block(x[0], 9);
  off.release(x);
  EXPECT_EQ(off.num_cached(), 0);
  EXPECT_EQ(off.match_prefix({9}, x), 0);
}

// Registers `hashes` on fresh blocks, one each, and releases them (they become cached).
void cache(KvCacheManager& kv, const std::vector<uint64_t>& hashes) {
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(static_cast<int32_t>(hashes.size()), b));
  for (size_t i = 0; i < hashes.size(); ++i) kv.register_full_block(b[i], hashes[i]);
  kv.release(b);
}

TEST(KvCacheManagerHostTier, EvictedBlocksAreSavedAndAMatchLoadsThemBack) {
  KvEventHub hub;
  auto sub = hub.subscribe(nullptr);
  KvCacheManager kv(2, true, &hub, 4);
  cache(kv, {100, 101});
  EXPECT_TRUE(kv.take_copies().empty());
  std::vector<int32_t> fresh;
  ASSERT_TRUE(kv.allocate(2, fresh));  // evicts both: saved, not dropped
  const std::vector<KvCopy> saves = kv.take_copies();
  ASSERT_EQ(saves.size(), 2u);
  EXPECT_TRUE(saves[0].to_host && saves[1].to_host);
  EXPECT_EQ(kv.num_cached(), 0);
  EXPECT_EQ(kv.num_host_cached(), 2);
  kv.release(fresh);

  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({100, 101, 102}, m), 2) << "the host tier still holds the prefix";
  const std::vector<KvCopy> loads = kv.take_copies();
  ASSERT_EQ(loads.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(loads[i].to_host);
    EXPECT_EQ(loads[i].block, m[i]);
    EXPECT_EQ(loads[i].host_slot, saves[1 - i].host_slot) << "101 (the tail) went out first; each comes back from its slot";
  }
  EXPECT_EQ(kv.host_blocks_saved(), 2);
  EXPECT_EQ(kv.host_blocks_loaded(), 2);
  EXPECT_EQ(kv.num_cached(), 2);
  kv.release(m);
  // Evicted again: the host still has them, so nothing is copied.
  ASSERT_TRUE(kv.allocate(2, fresh = {}));
  EXPECT_TRUE(kv.take_copies().empty());
  kv.flush_events();
  const auto events = sub->drain();
  ASSERT_EQ(events.size(), 2u) << "snapshot, stored {100, 101}; never removed while the host holds them";
  EXPECT_EQ(events[1].hashes, (std::vector<uint64_t>{100, 101}));
}

// A tier added after the cache started (allocated in the background): what was evicted
// before it is gone, what is evicted after it is kept; nothing without prefix caching.
TEST(KvCacheManagerHostTier, ATierAddedLaterKeepsWhatIsEvictedFromThen) {
  KvCacheManager kv(2, true, nullptr);
  cache(kv, {100});
  std::vector<int32_t> fresh;
  ASSERT_TRUE(kv.allocate(2, fresh));  // evicts 100: dropped, no tier yet
  EXPECT_TRUE(kv.take_copies().empty());
  kv.release(fresh);
  kv.add_host_tier(4);
  EXPECT_EQ(kv.num_host_blocks(), 4);
  cache(kv, {200, 201});
  ASSERT_TRUE(kv.allocate(2, fresh = {}));  // evicts both: saved now
  EXPECT_EQ(kv.take_copies().size(), 2u);
  kv.release(fresh);
  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({100}, m), 0);
  EXPECT_EQ(kv.match_prefix({200, 201}, m), 2);
  KvCacheManager off(2, false, nullptr);
  off.add_host_tier(4);
  EXPECT_EQ(off.num_host_blocks(), 0);
}

TEST(KvCacheManagerHostTier, SlotsAreEvictedLruButNotWhileACopyUsesThem) {
  KvEventHub hub;
  auto sub = hub.subscribe(nullptr);
  KvCacheManager kv(2, true, &hub, 1);
  cache(kv, {1, 2});
  std::vector<int32_t> fresh;
  ASSERT_TRUE(kv.allocate(2, fresh));
  // One slot: the first eviction's save (2, the tail) pins it, so 1 is dropped.
  ASSERT_EQ(kv.take_copies().size(), 1u);
  EXPECT_EQ(kv.num_host_cached(), 1);
  kv.register_full_block(fresh[0], 3);
  kv.release(fresh);
  ASSERT_TRUE(kv.allocate(2, fresh = {}));  // evicts 3: the slot's old hash (2) goes
  ASSERT_EQ(kv.take_copies().size(), 1u);
  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({2}, m), 0);
  kv.flush_events();
  const auto events = sub->drain();
  ASSERT_EQ(events.size(), 5u);  // snapshot, stored {1, 2}, removed {1}, stored {3}, removed {2}
  EXPECT_EQ(events[1].hashes, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(events[2].type, KvEvent::Type::kRemoved);
  EXPECT_EQ(events[2].hashes, (std::vector<uint64_t>{1}));
  EXPECT_EQ(events[4].type, KvEvent::Type::kRemoved);
  EXPECT_EQ(events[4].hashes, (std::vector<uint64_t>{2}));
  EXPECT_EQ(hub.cached_count(), 1u);  // 3, on the host
}

// On a cache of one block: 10 cached, then saved to the host by the block's next use,
// which leaves 20 cached there.
void ten_on_host_twenty_cached(KvCacheManager& kv) {
  cache(kv, {10});
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(1, b));
  kv.register_full_block(b[0], 20);
  kv.release(b);
}

TEST(KvCacheManagerHostTier, OnlyTheLastLoadIntoABlockIsCopied) {
  KvCacheManager kv(1, true, nullptr, 2);
  ten_on_host_twenty_cached(kv);
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(1, b));  // 20 to the host
  kv.release(b);
  ASSERT_EQ(kv.take_copies().size(), 2u);
  std::vector<int32_t> m1, m2;
  ASSERT_EQ(kv.match_prefix({10}, m1), 1);
  kv.release(m1);  // e.g. admitted, then no room to run: it waits
  ASSERT_EQ(kv.match_prefix({20}, m2), 1);  // the one block is evicted (10 is on the host) and reloaded
  EXPECT_EQ(kv.take_copies(), (std::vector<KvCopy>{{m2[0], 1, false}}));
}

// Seed 1's lost turns (docs/PERFORMANCE.md, 2026-12-04 16:32): a block loaded once and
// used for many turns kept its host slot's old place, so soon after its next eviction the
// host dropped it as its oldest.
TEST(KvCacheManagerHostTier, AnEvictionTheHostAlreadyHoldsMakesItsSlotTheNewest) {
  KvCacheManager kv(1, true, nullptr, 2);
  ten_on_host_twenty_cached(kv);
  kv.take_copies();
  std::vector<int32_t> m, b;
  ASSERT_EQ(kv.match_prefix({10}, m), 1);  // 20 saved, 10 loaded: 10's slot is older than 20's
  kv.take_copies();
  kv.release(m);
  ASSERT_TRUE(kv.allocate(1, b = {}));  // 10 evicted: the host holds it, nothing copied
  EXPECT_TRUE(kv.take_copies().empty());
  kv.register_full_block(b[0], 30);
  kv.release(b);
  ASSERT_TRUE(kv.allocate(1, b = {}));  // 30 saved: the host's oldest goes
  kv.release(b);
  kv.take_copies();
  EXPECT_EQ(kv.match_prefix({20}, m = {}), 0) << "20 was the oldest";
  EXPECT_EQ(kv.match_prefix({10}, m), 1) << "10 was used after 20 was saved";
}

// Seed 1's lost turns after e0f0ef3 (docs/PERFORMANCE.md, 2026-12-04 19:23): a prefix
// loaded back kept its host copy as the host's newest, so the host mirrored what the GPU
// held and evicted the only copies of other sessions' prefixes first.
TEST(KvCacheManagerHostTier, TheHostDropsACopyTheCacheHoldsBeforeItsOnlyCopies) {
  KvCacheManager kv(2, true, nullptr, 2);
  cache(kv, {1, 2});
  std::vector<int32_t> fresh;
  ASSERT_TRUE(kv.allocate(2, fresh));  // 2, then 1, to the host
  kv.release(fresh);
  kv.take_copies();
  std::vector<int32_t> m;
  ASSERT_EQ(kv.match_prefix({1}, m), 1);  // 1 loaded back: the host's copy is a spare
  kv.take_copies();
  cache(kv, {3});
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(1, b));  // 3 saved: the host drops a slot
  ASSERT_EQ(kv.take_copies().size(), 1u);
  kv.release(b);
  EXPECT_EQ(kv.num_host_cached(), 2);
  std::vector<int32_t> again;
  EXPECT_EQ(kv.match_prefix({2}, again), 1) << "2's only copy is kept; 1's spare went";
  kv.release(again);
  kv.take_copies();
  kv.release(m);
  ASSERT_TRUE(kv.allocate(2, b = {}));  // 2 evicted (held: no copy), then 1 (saved again)
  const std::vector<KvCopy> saves = kv.take_copies();
  ASSERT_EQ(saves.size(), 1u);
  EXPECT_TRUE(saves[0].to_host);
  EXPECT_EQ(saves[0].block, m[0]);
}

TEST(KvCacheManagerHostTier, LoadingAPrefixNeverEvictsItsOwnLaterBlocks) {
  KvCacheManager kv(2, true, nullptr, 1);
  cache(kv, {1});
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(2, b));  // 1 to the host's one slot
  kv.take_copies();
  kv.register_full_block(b[0], 2);  // the prefix's second block, on the GPU
  kv.register_full_block(b[1], 99);
  kv.release({b[0]});
  kv.release({b[1]});  // 2 is the least recently released
  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({1, 2}, m), 2) << "loading 1 must evict 99, not 2";
  EXPECT_EQ(m[1], b[0]);
  EXPECT_EQ(kv.take_copies(), (std::vector<KvCopy>{{b[1], 0, false}}));
}

TEST(KvCacheManagerHostTier, APrefixEndsAtTheFirstLoadWithoutABlock) {
  KvCacheManager kv(2, true, nullptr, 2);
  cache(kv, {1, 2});
  std::vector<int32_t> b;
  ASSERT_TRUE(kv.allocate(2, b));  // 1 and 2 to the host
  kv.take_copies();
  kv.register_full_block(b[0], 3);
  kv.register_full_block(b[1], 99);
  kv.release(b);
  std::vector<int32_t> m;
  EXPECT_EQ(kv.match_prefix({1, 2, 3}, m), 1) << "one block (99's) is available: 1 is loaded, 2 is not";
  EXPECT_EQ(kv.num_used(), 1) << "3's reference is dropped again";
  EXPECT_EQ(kv.take_copies().size(), 2u);  // 99 saved (evicting 2, beyond the prefix's end), 1 loaded
  std::vector<int32_t> again;
  EXPECT_EQ(kv.match_prefix({3}, again), 1) << "3 is still cached";
}

TEST(KvEventHub, SlowSubscriberIsCutOffInsteadOfGrowingWithoutBound) {
  KvEventHub hub(3);
  auto sub = hub.subscribe(nullptr);
  for (uint64_t h = 0; h < 5; ++h) hub.publish(KvEvent::Type::kStored, {h});
  EXPECT_TRUE(sub->overflowed());
  EXPECT_TRUE(sub->drain().empty());
  auto fresh = hub.subscribe(nullptr);  // a reconnect starts from a snapshot
  const auto snap = fresh->drain();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].hashes.size(), 5u);
  EXPECT_EQ(snap[0].seq, 5u);
}

}  // namespace
}  // namespace sy
