// Routing decisions as table rows, plus the properties a fleet relies on: prefix
// affinity, bounded load, and that losing a replica moves only the keys it held.
#include "policy/router.h"

#include <gtest/gtest.h>

#include <map>

namespace sy::policy {
namespace {

ReplicaState replica(uint64_t id, int32_t in_flight = 0, int32_t matched = 0, int64_t pending = 0, bool available = true) {
  ReplicaState r;
  r.id_hash = id * 0x1234567 + 1;
  r.available = available;
  r.in_flight = in_flight;
  r.capacity = 8;
  r.matched_blocks = matched;
  r.pending_prefill_tokens = pending;
  r.prefill_s_per_token = 1e-3;
  return r;
}

struct Row {
  const char* name;
  std::vector<ReplicaState> replicas;
  int32_t prompt_tokens;
  std::optional<size_t> expected;
};

TEST(PrefixRouter, Decisions) {
  SplitMixRandom rnd(1);
  auto router = make_router("prefix", {}, rnd);
  const std::vector<Row> rows = {
      {"the replica holding the prefix wins", {replica(1), replica(2, 0, 37), replica(3)}, 600, 1},
      {"a longer cached prefix wins", {replica(1, 0, 10), replica(2, 0, 30)}, 600, 1},
      {"queued prefill work outweighs a small cache hit", {replica(1, 0, 2, 2000), replica(2, 0, 0, 0)}, 600, 1},
      {"an unavailable replica is never chosen", {replica(1, 0, 37, 0, false), replica(2)}, 600, 1},
      {"a replica over the load bound loses its cache advantage", {replica(1, 9, 37), replica(2, 1), replica(3, 1)}, 600, 1},
      {"nothing available", {replica(1, 0, 0, 0, false)}, 600, std::nullopt},
  };
  for (const Row& r : rows) {
    auto got = router->choose({.affinity_key = 42, .prompt_tokens = r.prompt_tokens, .block_size = 16}, r.replicas);
    if (r.expected && std::string(r.name) == "a replica over the load bound loses its cache advantage") {
      ASSERT_TRUE(got.has_value()) << r.name;
      EXPECT_NE(*got, 0u) << r.name;  // replica 0 is over ceil(1.25 × 12 / 3) = 5
      continue;
    }
    EXPECT_EQ(got, r.expected) << r.name;
  }
}

TEST(PrefixRouter, SamePrefixSameReplicaAndLosingOneMovesOnlyItsKeys) {
  SplitMixRandom rnd(1);
  auto router = make_router("prefix", {}, rnd);
  std::vector<ReplicaState> four = {replica(1), replica(2), replica(3), replica(4)};
  std::map<uint64_t, size_t> before;
  for (uint64_t key = 0; key < 2000; ++key) {
    const auto a = router->choose({.affinity_key = key, .prompt_tokens = 100}, four);
    const auto b = router->choose({.affinity_key = key, .prompt_tokens = 100}, four);
    ASSERT_EQ(a, b);  // sticky
    before[key] = *a;
  }
  // Every replica gets a fair share of keys.
  std::map<size_t, int> share;
  for (const auto& [k, r] : before) ++share[r];
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(share[i], 500, 100);
  four[2].available = false;
  int moved = 0;
  for (uint64_t key = 0; key < 2000; ++key) {
    const size_t now = *router->choose({.affinity_key = key, .prompt_tokens = 100}, four);
    if (before[key] != 2) {
      EXPECT_EQ(now, before[key]) << "key " << key << " moved though its replica stayed";
    }
    moved += before[key] != now;
  }
  EXPECT_EQ(moved, share[2]);
}

// Multi-turn sessions: a session's first turn matches only its agent type's system
// prompt, which one replica holds; its later turns match their own growing context.
// The router must spread the sessions' homes (every later turn goes home) instead of
// piling each agent type onto the replica holding its system prompt.
TEST(PrefixRouter, NewSessionsSpreadAndLaterTurnsGoHome) {
  SplitMixRandom rnd(3);
  auto router = make_router("prefix", {}, rnd);
  const int kReplicas = 4, kSessions = 40, kTypes = 4;
  std::map<uint64_t, size_t> home;  // session → replica of its first turn
  std::vector<int> homes(kReplicas, 0);
  for (int s = 0; s < kSessions; ++s) {
    const int type = s % kTypes;
    // Type t's 3,000-token system prompt (187 blocks) is cached on replica t % 2 only.
    std::vector<ReplicaState> r;
    for (int i = 0; i < kReplicas; ++i) r.push_back(replica(i + 1, 0, i == type % 2 ? 187 : 0));
    const auto got = router->choose({.affinity_key = 100u + type, .prompt_tokens = 3200, .block_size = 16,
                                     .session_key = 5000u + s, .now_s = s * 0.5},
                                    r);
    ASSERT_TRUE(got.has_value());
    home[s] = *got;
    ++homes[*got];
  }
  // Ten each; by cost alone replicas 0 and 1 would take all 40.
  for (int i = 0; i < kReplicas; ++i) EXPECT_EQ(homes[i], 10) << "replica " << i;
  // A later turn goes where its context is cached, even to a home over the in-flight
  // bound (ceil(1.25 × 10 / 4) = 4 here): elsewhere it would recompute 6,400 tokens.
  for (int s = 0; s < kSessions; ++s) {
    std::vector<ReplicaState> r;
    for (int i = 0; i < kReplicas; ++i) {
      const bool is_home = static_cast<size_t>(i) == home[s];
      r.push_back(replica(i + 1, is_home ? 6 : 1, is_home ? 400 : 187));
    }
    const auto got = router->choose({.affinity_key = 100u + s % kTypes, .prompt_tokens = 6500, .block_size = 16,
                                     .session_key = 5000u + s, .now_s = 30},
                                    r);
    EXPECT_EQ(got, home[s]) << "session " << s;
  }
}

// A session not seen for the TTL no longer counts as its replica's load, and a replica
// whose measured prefill cost is high (a slow one) is home to proportionally fewer sessions.
TEST(PrefixRouter, GoneSessionsStopCountingAndSlowReplicasGetFewNewSessions) {
  SplitMixRandom rnd(5);
  auto router = make_router("prefix", {.session_ttl_s = 60}, rnd);
  std::vector<ReplicaState> two = {replica(1), replica(2)};
  two[1].prefill_s_per_token = 5e-3;  // replica 1 is five times slower
  std::map<size_t, int> first;
  for (uint64_t s = 1; s <= 10; ++s) ++first[*router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = 0}, two)];
  for (uint64_t s = 1; s <= 10; ++s) router->attempt_ended(s, 1);
  // (sessions + 1) × cost: the slow replica takes a session when the fast one holds 5
  // (6 × 1 ms > 1 × 5 ms), and its second only past 9.
  EXPECT_EQ(first[0], 9);
  EXPECT_EQ(first[1], 1);
  // 100 s later those sessions are gone: the fast replica takes the next ones again, but
  // for one on the slow replica while it holds none (so it keeps measuring its cost).
  std::map<size_t, int> later;
  for (uint64_t s = 11; s <= 14; ++s) ++later[*router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = 100}, two)];
  EXPECT_EQ(later[0], 3);
  EXPECT_EQ(later[1], 1);
}

// A session weighs on its home while a turn is in flight and for session_idle_s after
// one ended; an idle or finished one no longer keeps new sessions away, yet its next
// turn still goes home (the TTL keeps where it lives).
TEST(PrefixRouter, OnlyLiveSessionsWeighOnTheirHome) {
  SplitMixRandom rnd(9);
  auto router = make_router("prefix", {.session_ttl_s = 120, .session_idle_s = 10}, rnd);
  const std::vector<ReplicaState> two = {replica(1), replica(2)};
  auto first_turn = [&](uint64_t s, double now) {
    return *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = now}, two);
  };
  // Session 1 goes where the tie-break sends key 7 between empty replicas (f); session
  // 2 to the other one (o), and its turn ends at 5 s; session 1's stays in flight.
  const size_t f = first_turn(1, 0), o = first_turn(2, 0);
  ASSERT_NE(f, o);
  router->attempt_ended(2, 5);
  // At 12 s session 2 ended 7 s ago: still live, one session each, the tie-break: f.
  EXPECT_EQ(first_turn(3, 12), f);
  // At 13 s f holds two, o one: o; that turn ends at 14 s.
  EXPECT_EQ(first_turn(4, 13), o);
  router->attempt_ended(4, 14);
  // At 30 s sessions 2 and 4 are idle while 1 and 3, sent 30 and 18 s ago, are still in
  // flight: o is emptier. (Counting every session the TTL remembers, or sessions by when
  // they were last sent, would tie them and send it to f.)
  EXPECT_EQ(first_turn(5, 30), o);
  // Session 2 returns at 100 s, idle 95 s but within the TTL: home, where its context is.
  std::vector<ReplicaState> cached = two;
  cached[o].matched_blocks = 60;
  EXPECT_EQ(router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = 2, .now_s = 100}, cached), o);
}

// A hedge (a second attempt of a turn still running on its home) counts as one of its
// session's attempts but leaves the session's home where it was: counted on the hedge's
// replica instead, it made that replica look fuller and new sessions went elsewhere.
TEST(PrefixRouter, AHedgeLeavesItsSessionsHomeWhereItWas) {
  SplitMixRandom rnd(11);
  auto router = make_router("prefix", {.session_idle_s = 10}, rnd);
  const std::vector<ReplicaState> two = {replica(1), replica(2)};
  auto first_turn = [&](uint64_t s, double now) {
    return *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = now}, two);
  };
  // Sessions 1 and 2 on either replica, session 3 where the tie-break sends it (f):
  // f holds two live sessions, o one.
  const size_t a = first_turn(1, 0), b = first_turn(2, 0);
  ASSERT_NE(a, b);
  const size_t f = first_turn(3, 1), o = 1 - f;
  const uint64_t on_f = f == a ? 1 : 2;
  // Session on_f's turn is slow: a hedge goes to o (f excluded), and ends there.
  std::vector<ReplicaState> hedged = two;
  hedged[f].available = false;
  EXPECT_EQ(router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = on_f, .now_s = 2, .hedge = true}, hedged), o);
  router->attempt_ended(on_f, 3);
  // Still two live on f and one on o: the next session goes to o. (Re-homed by its hedge,
  // on_f would count on o, tie them at 1 and 2 the other way, and send it to f.)
  EXPECT_EQ(first_turn(4, 4), o);
}

// Four replicas of one kind whose fitted costs differ by noise (0.8-1.3 ms per token):
// weighed by those fits, new sessions pile onto the cheapest; with
// session_cost_tolerance 1.5 they count as the median and share sessions by count. A
// replica 3× the median stays weighed by its own cost under either.
TEST(PrefixRouter, SessionCostToleranceSharesSessionsByCountAmongLikeReplicas) {
  auto homes_of = [](double tolerance, const std::vector<double>& costs) {
    SplitMixRandom rnd(13);
    auto router = make_router("prefix", {.session_cost_tolerance = tolerance}, rnd);
    std::vector<ReplicaState> r;
    for (size_t i = 0; i < costs.size(); ++i) {
      r.push_back(replica(i + 1));
      r.back().prefill_s_per_token = costs[i];
    }
    std::vector<int> homes(costs.size(), 0);
    for (uint64_t s = 1; s <= 24; ++s)
      ++homes[*router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = 0.1 * s}, r)];
    return homes;
  };
  const std::vector<double> noisy = {0.8e-3, 1.0e-3, 1.1e-3, 1.3e-3};
  EXPECT_EQ(homes_of(1.5, noisy), (std::vector<int>{6, 6, 6, 6}));
  const std::vector<int> by_fit = homes_of(1.0, noisy);
  EXPECT_GE(by_fit[0], 7) << "the cheapest fit takes more than its share";
  EXPECT_LE(by_fit[3], 5) << "the dearest fit takes less";
  // (homes + 1) × 3 ms against × 1 ms: the slow one takes about a session per three
  // that each of the others takes.
  const std::vector<int> slow = homes_of(1.5, {1e-3, 1e-3, 1e-3, 3e-3});
  for (int i = 0; i < 3; ++i) EXPECT_GE(slow[i], 7) << i;
  EXPECT_LE(slow[3], 3);
}

// Two like replicas, one live session each, both placed at 0 s: replica a's has had a
// turn in flight for the whole 60 s since, b's for 10 s (five 2 s turns, 10 s apart).
// Counted one each (session_load count) they tie, and the next new session goes where
// the prompt's hash puts it, a (where the first went). Weighed by activity (each
// session's in-flight seconds plus 30 s at the mean, over its age plus 30 s: 0.85
// against 0.30, the mean 0.57), a carries 1.48 units to b's 0.52 and b takes it.
TEST(PrefixRouter, SessionLoadActivityWeighsLiveSessionsByTheirTimeInFlight) {
  auto third_home = [](bool by_activity) {
    SplitMixRandom rnd(13);
    auto router = make_router("prefix", {.session_load_activity = by_activity}, rnd);
    std::vector<ReplicaState> r = {replica(1), replica(2)};
    const size_t a = *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = 1, .now_s = 0}, r);
    const size_t b = *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = 2, .now_s = 0}, r);
    EXPECT_NE(a, b);
    std::vector<ReplicaState> at_b = r;
    at_b[b].matched_blocks = 62;  // the session's context is held at its home
    for (double t = 0; t < 50; t += 12) {
      if (t > 0) {
        EXPECT_EQ(*router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = 2, .now_s = t}, at_b), b);
      }
      router->attempt_ended(2, t + 2);
    }
    router->attempt_ended(1, 60);
    const size_t third = *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = 3, .now_s = 61}, r);
    return std::pair{third == a, third == b};
  };
  EXPECT_EQ(third_home(false), std::pair(true, false));
  EXPECT_EQ(third_home(true), std::pair(false, true));
}

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
}

// A replica whose fitted cost is stale and ten times the others' (it got no session, so
// it measured nothing since): weighed by that cost it would never be a home again. It
// takes the first session while it has none, and no second among these twelve.
TEST(PrefixRouter, AReplicaWithoutLiveSessionsTakesTheNextOneWhateverItsCost) {
  SplitMixRandom rnd(13);
  auto router = make_router("prefix", {}, rnd);
  std::vector<ReplicaState> r = {replica(1), replica(2), replica(3), replica(4)};
  r[3].prefill_s_per_token = 10e-3;
  std::vector<int> homes(r.size(), 0);
  for (uint64_t s = 1; s <= 12; ++s)
    ++homes[*router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = 0.1 * s}, r)];
  EXPECT_EQ(homes[3], 1);
  EXPECT_EQ(homes[0] + homes[1] + homes[2], 11);
  for (int i = 0; i < 3; ++i) EXPECT_GE(homes[i], 3) << i;
}

// A session's later turn of 10,000 tokens, replica 0 holding all but 400 of them behind
// P tokens of queued prefill, against an idle replica 1 that holds none (1 ms a token):
// with recompute_weight 1 it moves once P passes the 9,600 tokens replica 1 would
// recompute; with 2 only past twice that; with the default (100) not at these queues.
// Where no replica holds it, and for a request without a session, the weight changes
// nothing.
TEST(PrefixRouter, RecomputeWeightChargesASessionForLeavingItsContext) {
  auto choice = [](std::optional<double> weight, int64_t pending, int32_t matched, bool session = true) {
    SplitMixRandom rnd(5);
    RouterOptions o;
    if (weight) o.recompute_weight = *weight;
    auto router = make_router("prefix", o, rnd);
    const std::vector<ReplicaState> empty = {replica(1), replica(2)};
    const uint64_t key = session ? 9 : 0;
    router->choose({.affinity_key = 3, .prompt_tokens = 100, .block_size = 16, .session_key = key, .now_s = 0}, empty);
    const std::vector<ReplicaState> two = {replica(1, 1, matched, pending), replica(2)};
    return router->choose({.affinity_key = 3, .prompt_tokens = 10000, .block_size = 16, .session_key = key, .now_s = 1}, two);
  };
  EXPECT_EQ(choice(1, 9000, 600), 0u);
  EXPECT_EQ(choice(1, 12000, 600), 1u);
  EXPECT_EQ(choice(2, 12000, 600), 0u);
  EXPECT_EQ(choice(2, 19000, 600), 0u);
  EXPECT_EQ(choice(2, 20000, 600), 1u);
  EXPECT_EQ(choice(std::nullopt, 200000, 600), 0u);
  EXPECT_EQ(choice(std::nullopt, 12000, 600, /*session=*/false), 1u);
  EXPECT_EQ(choice(1, 500, 0), 1u);
  EXPECT_EQ(choice(std::nullopt, 500, 0), 1u);
}

// Replica 0 adds a fixed 0.5 s to every first token and computes as fast as replica 1:
// a request without a session goes to replica 1 (lower predicted TTFT), and new sessions
// still split evenly, since the latency costs each turn there but no capacity.
TEST(PrefixRouter, AFixedLatencyCostsTurnsNotSessions) {
  SplitMixRandom rnd(13);
  auto router = make_router("prefix", {}, rnd);
  std::vector<ReplicaState> two = {replica(1), replica(2)};
  for (auto& r : two) r.prefill_s_per_token = 1e-4;
  two[0].first_token_latency_s = 0.5;
  for (uint64_t key = 1; key <= 20; ++key)
    EXPECT_EQ(router->choose({.affinity_key = key, .prompt_tokens = 2000}, two), 1u) << key;
  std::map<size_t, int> homes;
  for (uint64_t s = 1; s <= 10; ++s)
    ++homes[*router->choose({.affinity_key = 7, .prompt_tokens = 2000, .session_key = s, .now_s = 0}, two)];
  EXPECT_EQ(homes[0], 5);
  EXPECT_EQ(homes[1], 5);
}

// Sessions 1..n's first turns at 0 s, which alternate between the two replicas (the
// live-session rule), all ended at 1 s. Returns the replica session 1 went to: where
// key 7's tie-break goes between empty replicas.
size_t alternate_sessions(Router& router, const std::vector<ReplicaState>& two, uint64_t n, int32_t prompt_tokens) {
  size_t a = 0;
  for (uint64_t s = 1; s <= n; ++s) {
    const size_t got = *router.choose({.affinity_key = 7, .prompt_tokens = prompt_tokens, .session_key = s, .now_s = 0}, two);
    if (s == 1) a = got;
    EXPECT_EQ(got, s % 2 ? a : 1 - a) << s;
  }
  for (uint64_t s = 1; s <= n; ++s) router.attempt_ended(s, 1);
  return a;
}

// session_rebalance: after the sessions on one replica end, a session whose home holds
// more than load_bound × what the emptier replica would hold with it moves there at its
// next turn (and lives there after), despite its cached context at home; where the
// homes differ by less, it stays. Off, it stays whatever the imbalance.
TEST(PrefixRouter, SessionRebalanceMovesASessionOffAnOverloadedHome) {
  for (const bool rebalance : {false, true}) {
    SplitMixRandom rnd(21);
    auto router = make_router("prefix", {.session_idle_s = 10, .session_rebalance = rebalance}, rnd);
    const std::vector<ReplicaState> two = {replica(1), replica(2)};
    auto turn = [&](uint64_t s, double now, const std::vector<ReplicaState>& r) {
      return *router->choose({.affinity_key = 7, .prompt_tokens = 1000, .session_key = s, .now_s = now}, r);
    };
    // Eight sessions alternate; every turn ends at 1 s; b's four sessions finish (never
    // return), a's keep turning.
    const size_t a = alternate_sessions(*router, two, 8, 1000), b = 1 - a;
    std::vector<ReplicaState> cached = two;
    cached[a].matched_blocks = 60;  // a holds the sessions' contexts
    // At 20 s only a's sessions are live (b's ended 19 s ago). Session 1's turn: a holds
    // 4 live sessions with it, b would hold 1: 4 > 1.25 × 1, so it moves to b.
    for (uint64_t s : {3, 5, 7}) router->attempt_ended(s, 19);
    EXPECT_EQ(turn(1, 20, cached), rebalance ? b : a) << rebalance;
    router->attempt_ended(1, 20.5);
    // Then a holds 3 and b 1 (session 1): session 3's turn, 3 > 1.25 × 2: it moves too.
    EXPECT_EQ(turn(3, 21, cached), rebalance ? b : a) << rebalance;
    router->attempt_ended(3, 21.5);
    // Now 2 and 2: session 5 stays home (2 > 1.25 × 3 is false), and session 1, home
    // at b now, stays there (b's cache is not in the state: its cost alone keeps it).
    EXPECT_EQ(turn(5, 22, cached), a) << rebalance;
    router->attempt_ended(5, 22.5);
    if (rebalance) {
      std::vector<ReplicaState> moved = two;
      moved[b].matched_blocks = 60;
      EXPECT_EQ(turn(1, 23, moved), b);
    }
  }
}

// A later turn whose context no replica holds any more (no replica holds half of the
// session's last prompt: only the shared system prompt, its home having evicted the
// rest) is placed as a new session is, on the replica with the fewest live sessions; by
// cost alone the replicas tie and the prompt's first block picks, here its crowded old
// home. Where its home, or another replica, still holds its context, that one takes it.
TEST(PrefixRouter, ATurnWhoseContextIsNowhereIsPlacedByLoad) {
  SplitMixRandom rnd(17);
  auto router = make_router("prefix", {.session_idle_s = 10}, rnd);
  const std::vector<ReplicaState> two = {replica(1), replica(2)};
  auto turn = [&](uint64_t s, double now, const std::vector<ReplicaState>& r) {
    return *router->choose({.affinity_key = 7, .prompt_tokens = 12000, .session_key = s, .now_s = now}, r);
  };
  // Four sessions alternate, their first turns ended at 1 s.
  const size_t a = alternate_sessions(*router, two, 4, 12000), b = 1 - a;
  // b's sessions end; a's two keep turning. At 20 s a holds two live sessions, b none.
  router->attempt_ended(1, 19);
  router->attempt_ended(3, 19);
  std::vector<ReplicaState> shared_only = two;
  for (auto& r : shared_only) r.matched_blocks = 180;  // the 2,880-token system prompt
  std::vector<ReplicaState> at_home = shared_only;
  at_home[a].matched_blocks = 700;  // 11,200 of the last prompt's 12,000 tokens
  // Session 3 with its context at home: home.
  EXPECT_EQ(turn(3, 20, at_home), a);
  router->attempt_ended(3, 20.5);
  // Session 3 again, its context held at both (a hedge computed it on b too): not lost;
  // by cost the replicas tie and the tie-break keeps it at a, where b's count would not.
  std::vector<ReplicaState> at_both = at_home;
  at_both[b].matched_blocks = 700;
  EXPECT_EQ(turn(3, 20.6, at_both), a);
  router->attempt_ended(3, 20.7);
  // Session 1, its context evicted from a: to b, the replica without live sessions.
  EXPECT_EQ(turn(1, 21, shared_only), b);
  router->attempt_ended(1, 21.5);
  // It lives at b now: its next turn, its context at b, goes there.
  std::vector<ReplicaState> at_b = shared_only;
  at_b[b].matched_blocks = 740;
  EXPECT_EQ(turn(1, 23, at_b), b);
}

// Two equally loaded replicas whose first two sessions went apart: session 10's 40K
// tokens on `big`, session 11's 5K on `small`; `key` is every prompt's first block.
struct BigAndSmall {
  BigAndSmall(uint64_t key, const RouterOptions& options)
      : key(key), rnd(key), router(make_router("prefix", options, rnd)) {
    big = turn(10, 40000, 0);
    small = turn(11, 5000, 0.1);
  }
  size_t turn(uint64_t session, int32_t tokens, double now) {
    return *router->choose({.affinity_key = key, .prompt_tokens = tokens, .session_key = session, .now_s = now}, two);
  }
  uint64_t key;
  SplitMixRandom rnd;
  std::unique_ptr<Router> router;
  std::vector<ReplicaState> two = {replica(1), replica(2)};
  size_t big = 0, small = 0;
};

// With lost_context_by_kv a lost context, among replicas equally loaded by sessions,
// goes where the live sessions' contexts are smallest: its recomputation displaces the
// least KV there. (Off, the prompt's first block decides: the big one on every key here.)
TEST(PrefixRouter, ALostContextByKvGoesWhereLiveContextsAreSmallest) {
  for (uint64_t key = 1; key <= 8; ++key) {  // whatever the prompt's first block
    BigAndSmall f(key, {.session_idle_s = 10, .lost_context_by_kv = true});
    ASSERT_NE(f.big, f.small);
    f.turn(12, 12000, 0.2);
    for (uint64_t s : {10, 11, 12}) f.router->attempt_ended(s, 1);
    for (auto& r : f.two) r.matched_blocks = 180;  // the system prompt only: 12's context is lost
    EXPECT_EQ(f.turn(12, 13000, 2), f.small) << "affinity key " << key;
  }
}

// With new_session_by_kv a new session, among replicas equally loaded by sessions, goes
// where the live sessions' contexts are smallest. (Off, the prompt's first block decides:
// the big one on every key here, the one that took the first session.)
TEST(PrefixRouter, ANewSessionByKvGoesWhereLiveContextsAreSmallest) {
  for (uint64_t key = 1; key <= 8; ++key) {  // whatever the prompt's first block
    BigAndSmall f(key, {.session_idle_s = 10, .new_session_by_kv = true});
    ASSERT_NE(f.big, f.small);
    for (uint64_t s : {10, 11}) f.router->attempt_ended(s, 1);
    for (auto& r : f.two) r.matched_blocks = 180;  // the system prompt, on both
    EXPECT_EQ(f.turn(12, 3000, 2), f.small) << "affinity key " << key;
  }
}

TEST(BaselineRouters, RoundRobinAndLeastLoaded) {
  SplitMixRandom rnd(7);
  auto rr = make_router("round_robin", {}, rnd);
  std::vector<ReplicaState> r = {replica(1), replica(2, 0, 0, 0, false), replica(3)};
  EXPECT_EQ(rr->choose({}, r), 0u);
  EXPECT_EQ(rr->choose({}, r), 2u);
  EXPECT_EQ(rr->choose({}, r), 0u);
  auto ll = make_router("least_loaded", {}, rnd);
  std::vector<ReplicaState> l = {replica(1, 5), replica(2, 1), replica(3, 3)};
  EXPECT_EQ(ll->choose({}, l), 1u);
  std::map<size_t, int> ties;
  std::vector<ReplicaState> t = {replica(1, 2), replica(2, 2), replica(3, 4)};
  for (int i = 0; i < 3000; ++i) ++ties[*ll->choose({}, t)];
  EXPECT_NEAR(ties[0], 1500, 150);
  EXPECT_NEAR(ties[1], 1500, 150);
  EXPECT_EQ(ties[2], 0);
  EXPECT_THROW(make_router("nope", {}, rnd), std::invalid_argument);
}

}  // namespace
}  // namespace sy::policy
