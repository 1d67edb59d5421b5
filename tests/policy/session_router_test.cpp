// Session affinity and the approximate router's name: a session sticks to one replica
// whatever its load or cache, sessions spread over replicas, losing a replica moves only
// its sessions, and a request without a session id falls back to its first block.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "policy/router.h"

namespace sy::policy {
namespace {

std::vector<ReplicaState> fleet(int n) {
  std::vector<ReplicaState> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)].id_hash = static_cast<uint64_t>(i) * 0x9e3779b9ull + 7;
    v[static_cast<size_t>(i)].available = true;
    v[static_cast<size_t>(i)].capacity = 8;
  }
  return v;
}

RouteRequest session(uint64_t key, uint64_t first_block = 1) {
  RouteRequest r;
  r.session_key = key;
  r.affinity_key = first_block;
  r.prompt_tokens = 600;
  return r;
}

TEST(SessionAffinityRouter, SessionSticksWhateverLoadOrCache) {
  SplitMixRandom rnd(1);
  auto router = make_router("session_affinity", {}, rnd);
  EXPECT_STREQ(router->name(), "session_affinity");
  auto replicas = fleet(4);
  const auto home = router->choose(session(42), replicas);
  ASSERT_TRUE(home);
  // Another replica holds the whole prompt and the home is the busiest: still home.
  const size_t other = (*home + 1) % replicas.size();
  replicas[other].matched_blocks = 37;
  replicas[*home].in_flight = 7;
  EXPECT_EQ(router->choose(session(42), replicas), home);
  // A different first block (the next turn's prompt) changes nothing either.
  EXPECT_EQ(router->choose(session(42, 999), replicas), home);
}

TEST(SessionAffinityRouter, SessionsSpreadAndLosingOneReplicaMovesOnlyItsSessions) {
  SplitMixRandom rnd(1);
  auto router = make_router("session_affinity", {}, rnd);
  auto replicas = fleet(4);
  std::map<uint64_t, size_t> before;
  std::set<size_t> used;
  for (uint64_t s = 1; s <= 200; ++s) {
    before[s] = *router->choose(session(s * 7919), replicas);
    used.insert(before[s]);
  }
  EXPECT_EQ(used.size(), 4u);
  replicas[2].available = false;
  for (const auto& [s, r] : before) {
    const size_t now = *router->choose(session(s * 7919), replicas);
    EXPECT_NE(now, 2u);
    if (r != 2) {
      EXPECT_EQ(now, r) << "session " << s << " moved off a live replica";
    }
  }
}

TEST(SessionAffinityRouter, WithoutSessionIdTheFirstBlockDecides) {
  SplitMixRandom rnd(1);
  auto router = make_router("session_affinity", {}, rnd);
  const auto replicas = fleet(8);
  std::set<size_t> used;
  for (uint64_t b = 1; b <= 64; ++b) {
    const auto a = router->choose(session(0, b), replicas);
    EXPECT_EQ(router->choose(session(0, b), replicas), a);
    used.insert(*a);
  }
  EXPECT_GT(used.size(), 1u);
}

TEST(SessionAffinityRouter, NothingAvailable) {
  SplitMixRandom rnd(1);
  auto router = make_router("session_affinity", {}, rnd);
  auto replicas = fleet(2);
  for (auto& r : replicas) r.available = false;
  EXPECT_EQ(router->choose(session(5), replicas), std::nullopt);
}

TEST(ApproximateRouter, IsThePrefixRouterUnderItsOwnName) {
  SplitMixRandom rnd(1);
  auto approx = make_router("approximate", {}, rnd);
  auto prefix = make_router("prefix", {}, rnd);
  EXPECT_STREQ(approx->name(), "approximate");
  auto replicas = fleet(3);
  replicas[1].matched_blocks = 30;
  EXPECT_EQ(approx->choose(session(0, 5), replicas), 1u);
  EXPECT_EQ(approx->choose(session(0, 5), replicas), prefix->choose(session(0, 5), replicas));
}

}  // namespace
}  // namespace sy::policy
