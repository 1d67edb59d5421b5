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

  // Allocation takes free blocks first, then evicts the least recently released.
  ASSERT_TRUE(kv.allocate(3, c));
  EXPECT_EQ(kv.num_cached(), 1);
  EXPECT_EQ(kv.match_prefix({100}, c), 0) << "block 100 was released first, so evicted first";
  std::vector<int32_t> d;
  EXPECT_FALSE(kv.allocate(2, d)) << "only one block is left";
  EXPECT_TRUE(d.empty());
  kv.flush_events();

  const auto events = sub->drain();
  ASSERT_EQ(events.size(), 3u);  // snapshot, stored {100, 101}, removed {100}
  EXPECT_EQ(events[1].type, KvEvent::Type::kStored);
  EXPECT_EQ(events[1].hashes, (std::vector<uint64_t>{100, 101}));
  EXPECT_EQ(events[2].type, KvEvent::Type::kRemoved);
  EXPECT_EQ(events[2].hashes, (std::vector<uint64_t>{100}));
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
