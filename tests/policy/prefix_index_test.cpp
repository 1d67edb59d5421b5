#include "policy/prefix_index.h"

#include <gtest/gtest.h>

namespace sy::policy {
namespace {

TEST(ExactPrefixIndex, FollowsEventsAndMatchesPrefixesOnly) {
  ExactPrefixIndex idx;
  const std::vector<uint64_t> prompt = {10, 11, 12, 13};
  idx.reset(0, std::vector<uint64_t>{10, 11, 13});
  idx.stored(1, std::vector<uint64_t>{10, 11, 12, 13});
  EXPECT_EQ(idx.matched_blocks(0, prompt), 2);  // 13 without 12 is not a prefix
  EXPECT_EQ(idx.matched_blocks(1, prompt), 4);
  idx.removed(1, std::vector<uint64_t>{11});
  EXPECT_EQ(idx.matched_blocks(1, prompt), 1);
  EXPECT_EQ(idx.size(1), 3u);
  idx.reset(0, std::vector<uint64_t>{});  // a reconnect's empty snapshot
  EXPECT_EQ(idx.matched_blocks(0, prompt), 0);
  idx.forget(1);
  EXPECT_EQ(idx.matched_blocks(1, prompt), 0);
  EXPECT_EQ(idx.size(1), 0u);
}

TEST(ApproxPrefixIndex, RemembersDecisionsWithinItsBound) {
  ApproxPrefixIndex idx(3);
  idx.record(2, std::vector<uint64_t>{1, 2, 3});
  EXPECT_EQ(idx.matched_blocks(2, std::vector<uint64_t>{1, 2, 3, 4}), 3);
  EXPECT_EQ(idx.matched_blocks(1, std::vector<uint64_t>{1, 2}), 0);
  idx.record(1, std::vector<uint64_t>{9});  // evicts the least recent (1)
  EXPECT_EQ(idx.size(), 3u);
  EXPECT_EQ(idx.matched_blocks(2, std::vector<uint64_t>{1, 2, 3}), 0);
  EXPECT_EQ(idx.matched_blocks(1, std::vector<uint64_t>{9}), 1);
  idx.forget(1);
  EXPECT_EQ(idx.size(), 2u);
}

}  // namespace
}  // namespace sy::policy
