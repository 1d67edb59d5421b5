#include "policy/block_hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>

namespace sy::policy {
namespace {

TEST(BlockHash, ChainsOverFullBlocksOnly) {
  std::vector<int32_t> tokens(40);
  for (int i = 0; i < 40; ++i) tokens[static_cast<size_t>(i)] = i * 7919;
  const uint64_t fp = model_fingerprint("qwen3 test model");
  const auto h = prefix_block_hashes(fp, tokens, 16);
  ASSERT_EQ(h.size(), 2u);  // 40 tokens: two full blocks, the partial one is not hashed

  // The definition, spelled out: little-endian predecessor, then little-endian ids.
  uint8_t buf[8 + 64];
  auto expect = [&](uint64_t prev, size_t first) {
    std::memcpy(buf, &prev, 8);
    std::memcpy(buf + 8, &tokens[first], 64);
    return XXH3_64bits(buf, sizeof buf);
  };
  EXPECT_EQ(h[0], expect(fp, 0));
  EXPECT_EQ(h[1], expect(h[0], 16));
}

TEST(BlockHash, EqualPrefixesShareHashesAndDivergeAfter) {
  std::vector<int32_t> a(64, 5), b(64, 5);
  b[40] = 6;  // differs in block 2
  const auto ha = prefix_block_hashes(1, a, 16);
  const auto hb = prefix_block_hashes(1, b, 16);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_EQ(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]);
  EXPECT_NE(ha[3], hb[3]);  // every later block differs too: the hash covers the prefix
  EXPECT_NE(prefix_block_hashes(2, a, 16)[0], ha[0]);  // another model shares nothing
}

TEST(BlockHash, LargeBlocksMatchTheStreamingPath) {
  std::vector<int32_t> t(600);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>(i);
  const uint64_t big = chain_block_hash(9, std::span<const int32_t>(t).first(300));
  std::vector<uint8_t> buf(8 + 1200);
  const uint64_t prev = 9;
  std::memcpy(buf.data(), &prev, 8);
  std::memcpy(buf.data() + 8, t.data(), 1200);
  EXPECT_EQ(big, XXH3_64bits(buf.data(), buf.size()));
}

}  // namespace
}  // namespace sy::policy
