// The gateway's time-dependent rules on a manual clock, with no sleeps: outlier ejection
// and its backoff, the prefill cost measurement, queue aging, the hedge delay and stall limit learned from latencies,
// and the watchdog's first-token and stall timeouts (request_harness.h).
#include <gtest/gtest.h>

#include "request_harness.h"

namespace sy::gateway::testing {
namespace {

TEST(Ejection, BacksOffFromOneSecondDoublingToThirty) {
  Harness h;
  Fleet& fleet = h.core->fleet();
  const double spans[] = {1, 2, 4, 8, 16, 30, 30};
  for (double span : spans) {
    fleet.attempt_failed(0);
    EXPECT_TRUE(fleet.ejected(0));
    EXPECT_FALSE(fleet.usable(0));
    ASSERT_TRUE(fleet.next_ejection_end().has_value());
    EXPECT_DOUBLE_EQ(*fleet.next_ejection_end(), h.clock->now_s() + span);
    h.clock->advance(span - 0.25);  // steps a double adds exactly
    EXPECT_TRUE(fleet.ejected(0)) << span;
    h.clock->advance(0.25);
    EXPECT_FALSE(fleet.ejected(0)) << span;
    EXPECT_TRUE(fleet.usable(0));
  }
  EXPECT_EQ(fleet.load(0).ejections_total, 7);
}

TEST(Ejection, ASuccessOrANewBootEndsTheRun) {
  Harness h;
  Fleet& fleet = h.core->fleet();
  fleet.attempt_failed(0);
  fleet.attempt_failed(0);
  fleet.attempt_succeeded(0);
  fleet.attempt_failed(0);
  EXPECT_DOUBLE_EQ(*fleet.next_ejection_end(), h.clock->now_s() + 1);
  ReplicaInfo r = fleet.info(0);
  r.boot_id = "a new process";
  fleet.on_replica_change(r);
  EXPECT_FALSE(fleet.ejected(0));
  EXPECT_FALSE(fleet.next_ejection_end().has_value());
}

// The prefill cost per token is measured over the work the first token waited for: its
// own uncached tokens and the prefill queued ahead of it when it was sent. Dividing by
// its own tokens only would count the queue twice, as the router adds the queue itself.
TEST(PrefillCost, MeasuredOverTheWorkAheadToo) {
  Harness h;
  Fleet& fleet = h.core->fleet();
  const double before = fleet.load(0).prefill_s_per_token;
  for (int i = 0; i < 200; ++i) fleet.first_token(0, 1000, 3.0, 2000);  // 3 s for 3,000 tokens
  EXPECT_NEAR(fleet.load(0).prefill_s_per_token, 1e-3, 1e-9);
  for (int i = 0; i < 200; ++i) fleet.first_token(0, 1000, 4.0);  // nothing ahead: 4 s for 1,000
  EXPECT_NEAR(fleet.load(0).prefill_s_per_token, 4e-3, 1e-9);
  fleet.first_token(0, 10, 9.0, 5000);  // a short prompt measures overheads: not a sample
  EXPECT_NEAR(fleet.load(0).prefill_s_per_token, 4e-3, 1e-9);
  // Replica 1 has measured nothing: the router sees the mean of the measured ones, not
  // the default (which made a router starve it), until its own first sample.
  EXPECT_EQ(fleet.load(1).cost_samples, 0);
  EXPECT_DOUBLE_EQ(fleet.load(1).prefill_s_per_token, before);
  EXPECT_NEAR(fleet.states({}, false)[1].prefill_s_per_token, 4e-3, 1e-9);
  fleet.first_token(1, 500, 0.05);
  EXPECT_NEAR(fleet.states({}, false)[1].prefill_s_per_token, 1e-4, 1e-12);  // its first sample, whole
}

// A replica whose first tokens all carry a fixed 0.5 s (a slow link) is seen with that
// latency and the per-token cost it really has, not a per-token cost inflated by it.
TEST(PrefillCost, AFixedLatencyIsFittedApartFromThePerTokenCost) {
  Harness h;
  Fleet& fleet = h.core->fleet();
  for (int i = 0; i < 40; ++i) {
    const int64_t work = 500 + 1000 * (i % 8);
    fleet.first_token(0, work, 0.5 + work * 1e-4);
  }
  const auto states = fleet.states({}, false);
  EXPECT_NEAR(states[0].first_token_latency_s, 0.5, 1e-6);
  EXPECT_NEAR(states[0].prefill_s_per_token, 1e-4, 1e-9);
  // Replica 1, unmeasured, is taken at the measured mean of both.
  EXPECT_NEAR(states[1].first_token_latency_s, 0.5, 1e-6);
  EXPECT_NEAR(states[1].prefill_s_per_token, 1e-4, 1e-9);
}

// Replicas sharing a GPU queue their prefills on it: the router sees, for each, the
// pending prefill of every replica on one of its devices of the same host. A tp group
// shares with a replica on either of its GPUs; another host's "0" and CPU replicas do
// not, unless their workers report a common GPU uuid (and then whatever the config says).
TEST(PrefillCost, ReplicasSharingAGpuSeeItsWholeQueue) {
  Harness h({.replicas = 6, .capacity = 4, .resilience = {}});
  Fleet& fleet = h.core->fleet();
  const std::vector<std::vector<std::string>> devices = {{"0"}, {"0"}, {"1"}, {"1", "2"}, {"cpu"}, {"cpu"}};
  for (size_t i = 0; i < devices.size(); ++i) {
    ReplicaInfo r = fleet.info(i);
    r.devices = devices[i];
    fleet.on_replica_change(r);
  }
  ReplicaInfo remote = fleet.info(1);
  for (size_t i = 0; i < devices.size(); ++i) fleet.dispatched(i, {}, 1000 * static_cast<int64_t>(i + 1));
  auto pending = [&] {
    std::vector<int64_t> out;
    for (const auto& s : fleet.states({}, false)) out.push_back(s.pending_prefill_tokens);
    return out;
  };
  EXPECT_EQ(pending(), (std::vector<int64_t>{3000, 3000, 7000, 7000, 5000, 6000}));
  remote.host = "10.0.0.2";
  fleet.on_replica_change(remote);
  EXPECT_EQ(pending(), (std::vector<int64_t>{1000, 2000, 7000, 7000, 5000, 6000}));
  fleet.first_token(3, 4000, 0.5, 3000);  // replica 3's prefill is done: GPU 1 holds replica 2's
  EXPECT_EQ(pending(), (std::vector<int64_t>{1000, 2000, 3000, 3000, 5000, 6000}));
  fleet.set_worker_gpus(1, "boot1", {"GPU-x"});
  fleet.set_worker_gpus(4, "boot4", {"GPU-y", "GPU-x"});
  fleet.set_worker_gpus(5, "an old boot", {"GPU-x"});  // a stale answer
  EXPECT_EQ(pending(), (std::vector<int64_t>{1000, 7000, 3000, 3000, 7000, 6000}));
  remote.boot_id = "a new process";  // its report is gone with the old one
  fleet.on_replica_change(remote);
  EXPECT_EQ(pending(), (std::vector<int64_t>{1000, 2000, 3000, 3000, 5000, 6000}));
}

// Replicas on one GPU fit one device's queue: the router sees the mean of their measured
// fits for each of them (one not yet measured too), so their noise does not decide where
// new sessions live; a replica on another GPU keeps its own.
TEST(PrefillCost, ReplicasSharingAGpuShareItsFittedCost) {
  Harness h({.replicas = 4, .capacity = 4, .resilience = {}});
  Fleet& fleet = h.core->fleet();
  const std::vector<std::vector<std::string>> devices = {{"0"}, {"0"}, {"0"}, {"1"}};
  for (size_t i = 0; i < devices.size(); ++i) {
    ReplicaInfo r = fleet.info(i);
    r.devices = devices[i];
    fleet.on_replica_change(r);
  }
  for (int k = 0; k < 200; ++k)
    fleet.first_token(0, 1000, 1.0), fleet.first_token(1, 1000, 3.0), fleet.first_token(3, 1000, 10.0);
  std::vector<double> cost;
  for (const auto& s : fleet.states({}, false)) cost.push_back(s.prefill_s_per_token);
  ASSERT_EQ(cost.size(), 4u);
  EXPECT_NEAR(cost[0], 2e-3, 1e-9);
  EXPECT_NEAR(cost[1], 2e-3, 1e-9);
  EXPECT_NEAR(cost[2], 2e-3, 1e-9) << "not yet measured: its GPU's";
  EXPECT_NEAR(cost[3], 10e-3, 1e-9);
  EXPECT_NEAR(fleet.load(1).prefill_s_per_token, 3e-3, 1e-9) << "each keeps its own fit";
}

// A batch request queued at the start and a standard one `waited` seconds later: is the
// batch one sent first when the only slot frees? It climbs a class per queues.aging_s
// (10 s by default) on the core's clock, keeping its arrival time within its new class.
bool batch_goes_first(double waited) {
  Harness h({.replicas = 1, .capacity = 1, .resilience = {}});
  auto busy = h.submit();
  auto batch = h.submit(kPriorityBatch);
  h.clock->advance(waited);
  auto standard = h.submit(kPriorityStandard);
  busy.client->leave();  // frees the slot
  h.settle();
  EXPECT_EQ(h.calls.size(), 2u);
  const bool first = h.calls.back()->body().request_id.starts_with("gw-cmpl-2-");
  batch.client->leave();
  standard.client->leave();
  h.expect_all_released();
  return first;
}

TEST(Aging, AWaitingRequestClimbsAClassPerAgingPeriod) {
  EXPECT_FALSE(batch_goes_first(0));
  EXPECT_FALSE(batch_goes_first(9.75));  // still batch
  EXPECT_TRUE(batch_goes_first(10));     // standard, and the older of the two
}

TEST(LearnedLimits, HedgeDelayAndStallFollowRecentLatencies) {
  ResilienceConfig res;
  res.hedge_delay_factor = 3, res.hedge_delay_min_s = 0.05, res.hedge_delay_max_s = 5;
  res.stall_factor = 8, res.stall_min_s = 0.1, res.stall_max_s = 30;
  Harness h({.resilience = res});
  GatewayCore& core = *h.core;
  // Too few samples: the upper bounds.
  EXPECT_DOUBLE_EQ(core.timeouts_for(PriorityClass::kStandard).hedge_delay, 5);
  EXPECT_DOUBLE_EQ(core.timeouts_for(PriorityClass::kStandard).stall, 30);
  for (int k = 0; k < 8; ++k) core.observe_attempt_ttft(0.2), core.observe_itl(0.05);
  const AttemptTimeouts t = core.timeouts_for(PriorityClass::kInteractive);
  EXPECT_NEAR(t.hedge_delay, 0.6, 1e-9);  // 3 × the median
  EXPECT_NEAR(t.stall, 0.4, 1e-9);        // 8 × the p99 gap
  EXPECT_DOUBLE_EQ(t.first_token, res.first_token_timeout_s);
  EXPECT_DOUBLE_EQ(core.timeouts_for(PriorityClass::kBatch).hedge_delay, 0) << "batch work is not hedged";
  EXPECT_NEAR(core.timeouts_for(PriorityClass::kInteractive, 4.0).hedge_delay, 4.6, 1e-9) << "plus the prefill it is expected to need";
  EXPECT_DOUBLE_EQ(core.timeouts_for(PriorityClass::kBatch, 4.0).hedge_delay, 0) << "and still no hedge for batch work";
  for (int k = 0; k < 2048; ++k) core.observe_attempt_ttft(0.001);
  EXPECT_DOUBLE_EQ(core.timeouts_for(PriorityClass::kStandard).hedge_delay, 0.05) << "clamped to the lower bound";
}

// The hedge waits the usual delay (3 × the median attempt TTFT, 0.6 s) plus the prefill
// the request needs where it went: its 40 uncached tokens at the median fitted cost of
// the replicas, (1 + 10) / 2 ms a token = 0.22 s; not at the cost of the replica it went to
// (the cheaper, 1 ms), since a hedge is for a replica slower than the others.
// Replica 0 fits 1 ms a token and replica 1 `replica1_s_per_token`, attempts took 0.2 s:
// a request of 40 tokens, sent to replica 0 (the cheaper), which answered its headers.
Harness::Request sent_to_the_cheaper_replica(Harness& h, double replica1_s_per_token) {
  Fleet& fleet = h.core->fleet();
  for (int i = 0; i < 20; ++i) fleet.first_token(0, 1000, 1.0), fleet.first_token(1, 1000, 1000 * replica1_s_per_token);
  for (int k = 0; k < 8; ++k) h.core->observe_attempt_ttft(0.2);
  auto r = h.submit();
  EXPECT_EQ(h.calls.size(), 1u);
  EXPECT_EQ(Harness::replica_of(*h.calls.at(0), h), 0u) << "the cheaper replica";
  h.calls.at(0)->headers();
  return r;
}

TEST(LearnedLimits, AHedgeAlsoWaitsThePrefillTheRequestNeeds) {
  Harness h;
  auto r = sent_to_the_cheaper_replica(h, 10e-3);
  h.advance(0.81, {&r});
  EXPECT_EQ(h.calls.size(), 1u);
  h.advance(0.02, {&r});
  ASSERT_EQ(h.calls.size(), 2u) << "hedged at 0.6 + 0.22 s";
  h.calls[1]->headers();
  h.calls[1]->tokens(0, {7});
  h.calls[1]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  h.expect_all_released();
}

// A hedge goes only where a first token is predicted sooner than the attempt has already
// waited. Replica 1 fits 100 ms a token: the 40-token prompt goes to replica 0 (1 ms),
// whose hedge delay is 0.6 s plus 40 tokens at the median cost, 50.5 ms: 2.62 s. Replica 1
// would take 4 s, so the hedge is put off until the attempt has waited that long.
TEST(LearnedLimits, AHedgePredictedSlowerThanTheWaitIsPutOff) {
  Harness h;
  auto r = sent_to_the_cheaper_replica(h, 100e-3);
  h.advance(2.63, {&r});
  EXPECT_EQ(h.calls.size(), 1u) << "replica 1 would need 4 s";
  EXPECT_EQ(h.core->counters().hedges_deferred, 1);
  EXPECT_EQ(h.core->counters().hedges, 0);
  h.advance(1.36, {&r});
  EXPECT_EQ(h.calls.size(), 1u);
  h.advance(0.02, {&r});
  ASSERT_EQ(h.calls.size(), 2u) << "after 4 s of waiting the hedge goes";
  EXPECT_EQ(Harness::replica_of(*h.calls[1], h), 1u);
  EXPECT_EQ(h.core->counters().hedges, 1);
  h.calls[0]->tokens(0, {7});
  h.calls[0]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  h.expect_all_released();
}

ResilienceConfig silences(double first_token, double stall) {
  ResilienceConfig r;
  r.hedge = false;
  r.first_token_timeout_s = first_token;
  r.stall_max_s = stall;
  return r;
}

// A worker that preempted the stream (KV pressure) says so, and recomputes its context
// before the next token: the silence after the notice may last as long as a first token
// may take, not the stall limit; the next token restores the stall limit.
TEST(Watchdog, APreemptedStreamMayBeSilentWhileItsContextIsRecomputed) {
  Harness h({.resilience = silences(20, 3)});
  auto r = h.submit();
  h.calls[0]->headers();
  h.calls[0]->tokens(0, {1});
  h.advance(1, {&r});
  h.calls[0]->preempted(60000);
  h.advance(19.75, {&r});
  EXPECT_EQ(h.calls.size(), 1u) << "recomputing is not a stall";
  EXPECT_EQ(h.core->counters().stalls, 0);
  EXPECT_EQ(h.core->counters().preempted, 1);
  h.calls[0]->tokens(1, {2});
  h.advance(2.75, {&r});
  EXPECT_EQ(h.calls.size(), 1u);
  h.advance(0.25, {&r});
  ASSERT_EQ(h.calls.size(), 2u) << "after the next token the stall limit applies again";
  EXPECT_EQ(h.calls[1]->body().resume_ids, (std::vector<int32_t>{1, 2}));
  h.calls[1]->headers();
  h.calls[1]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  h.expect_all_released();
}

TEST(Watchdog, NoFirstTokenInTimeFailsOver) {
  Harness h({.resilience = silences(5, 30)});
  auto r = h.submit();
  h.calls[0]->headers();
  h.advance(4.75, {&r});
  EXPECT_EQ(h.calls.size(), 1u);
  h.advance(0.25, {&r});
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_TRUE(h.calls[0]->cancelled);
  EXPECT_EQ(h.core->counters().stalls, 1);
  h.calls[1]->headers();
  h.calls[1]->finish();
  h.expect_all_released();
}

TEST(Watchdog, SilenceAfterATokenIsAStallFromTheLatestToken) {
  Harness h({.resilience = silences(120, 3)});
  auto r = h.submit();
  h.calls[0]->headers();
  h.advance(50, {&r});  // prefill may take up to the first-token timeout
  h.calls[0]->tokens(0, {1});
  h.advance(2, {&r});
  h.calls[0]->tokens(1, {2});
  h.advance(2.75, {&r});
  EXPECT_EQ(h.calls.size(), 1u) << "the stall limit runs from the latest token";
  h.advance(0.25, {&r});
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[1]->body().resume_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(h.core->counters().stalls, 1);
  h.calls[1]->headers();
  h.calls[1]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  h.expect_all_released();
}

}  // namespace
}  // namespace sy::gateway::testing
