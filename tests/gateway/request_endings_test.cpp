// The request state machine (ProxyRequest with the core and fleet) through every way a
// request ends: each replica slot and queue seat it took goes back exactly once, the
// client gets exactly one answer, and no worker call stays open (request_harness.h).
#include <gtest/gtest.h>

#include "request_harness.h"

namespace sy::gateway::testing {
namespace {

ResilienceConfig no_hedging() {
  ResilienceConfig r;
  r.hedge = false;
  return r;
}

TEST(RequestEndings, Success) {
  Harness h({.resilience = no_hedging()});
  auto r = h.submit();
  ASSERT_EQ(h.calls.size(), 1u);
  h.calls[0]->headers();
  h.calls[0]->tokens(0, {7, 8});
  h.calls[0]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  EXPECT_EQ(r.client->answers, 1);
  EXPECT_EQ(r.client->ids, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(r.client->header("x-switchyard-attempts"), "1");
  EXPECT_EQ(h.core->counters().completed, 1);
  h.expect_all_released();
}

TEST(RequestEndings, ClientGoneWhileQueued) {
  Harness h({.replicas = 1, .capacity = 1, .resilience = no_hedging()});
  auto busy = h.submit();
  auto queued = h.submit();
  ASSERT_EQ(h.calls.size(), 1u);
  EXPECT_EQ(h.core->queue().size(), 1u);
  queued.client->leave();
  h.settle();
  EXPECT_EQ(h.core->queue().size(), 0u);
  EXPECT_EQ(h.core->counters().cancelled, 1);
  EXPECT_EQ(h.ctx->open_requests.load(), 1);  // only the busy one
  h.calls[0]->headers();
  h.calls[0]->finish();
  h.settle();
  EXPECT_EQ(h.calls.size(), 1u) << "the withdrawn request was never sent";
  EXPECT_EQ(queued.client->answers, 0);
  h.expect_all_released();
}

TEST(RequestEndings, ClientGoneWhileItsAttemptRuns) {
  // How far the worker got before the client left: nothing, headers, headers and a token.
  for (int stage = 0; stage < 3; ++stage) {
    SCOPED_TRACE(stage);
    Harness h({.resilience = no_hedging()});
    auto r = h.submit();
    if (stage >= 1) h.calls[0]->headers();
    if (stage >= 2) h.calls[0]->tokens(0, {5});
    r.client->leave();
    h.settle();
    EXPECT_TRUE(h.calls[0]->cancelled);
    EXPECT_EQ(h.core->counters().cancelled, 1);
    EXPECT_EQ(r.client->answers, 0);
    h.expect_all_released();
  }
}

TEST(RequestEndings, ClientGoneWhileTheRetryIsOnItsWay) {
  Harness h({.resilience = no_hedging()});
  auto r = h.submit();
  h.calls[0]->reset();  // the retry decision is posted to the core...
  r.client->leave();    // ...and the client leaves before the new attempt arrives
  h.settle();
  EXPECT_EQ(h.calls.size(), 1u) << "the new attempt found its client gone and was never sent";
  EXPECT_EQ(h.core->counters().retries, 1);
  EXPECT_EQ(h.core->counters().cancelled, 1);
  h.expect_all_released();
}

TEST(RequestEndings, WorkerResetBeforeTheFirstByte) {
  Harness h({.resilience = no_hedging()});
  auto r = h.submit();
  h.calls[0]->reset();
  h.settle();
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_NE(Harness::replica_of(*h.calls[1], h), Harness::replica_of(*h.calls[0], h));
  h.calls[1]->headers();
  h.calls[1]->tokens(0, {3});
  h.calls[1]->finish();
  h.settle();
  EXPECT_TRUE(r.client->finished);
  EXPECT_EQ(r.client->answers, 1);
  EXPECT_EQ(h.core->counters().retries, 1);
  EXPECT_EQ(r.client->header("x-switchyard-replica"), h.core->fleet().info(Harness::replica_of(*h.calls[1], h)).id);
  EXPECT_EQ(r.client->header("x-switchyard-attempts"), "2") << "the retry before the first byte counts";
  EXPECT_TRUE(h.core->fleet().ejected(Harness::replica_of(*h.calls[0], h)));
  h.expect_all_released();
}

TEST(RequestEndings, WorkerResetAfterTheFirstByteResumes) {
  Harness h({.resilience = no_hedging()});
  auto r = h.submit();
  h.calls[0]->headers();
  h.calls[0]->tokens(0, {11, 12});
  h.calls[0]->reset();
  h.settle();
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[1]->body().resume_ids, (std::vector<int32_t>{11, 12}));
  EXPECT_EQ(h.calls[1]->body().sampling.seed, h.calls[0]->body().sampling.seed);
  h.calls[1]->headers();
  h.calls[1]->tokens(2, {13});
  h.calls[1]->finish();
  h.settle();
  EXPECT_EQ(r.client->ids, (std::vector<int32_t>{11, 12, 13}));
  EXPECT_TRUE(r.client->finished);
  h.expect_all_released();
}

TEST(RequestEndings, WorkerRefusalIsPassedOn) {
  Harness h({.resilience = no_hedging()});
  auto r = h.submit();
  h.calls[0]->headers(400);
  h.calls[0]->h.on_data(R"({"error":{"message":"bad"}})");
  h.calls[0]->end({}, "");
  h.settle();
  EXPECT_EQ(r.client->refused, 400);
  EXPECT_EQ(r.client->answers, 1);
  EXPECT_EQ(h.calls.size(), 1u) << "another worker would refuse it too";
  h.expect_all_released();
}

TEST(RequestEndings, RetriesExhausted) {
  ResilienceConfig res = no_hedging();
  res.max_attempts = 2;
  Harness h({.resilience = res});
  auto r = h.submit();
  h.calls[0]->reset();
  h.settle();
  ASSERT_EQ(h.calls.size(), 2u);
  h.calls[1]->headers();
  h.calls[1]->tokens(0, {1});
  h.calls[1]->reset();
  h.settle();
  EXPECT_EQ(h.calls.size(), 2u);
  ASSERT_TRUE(r.client->error.has_value());
  EXPECT_EQ(r.client->error->code, "upstream_error");
  EXPECT_EQ(r.client->answers, 1);
  EXPECT_EQ(h.core->counters().retries_denied, 1);
  EXPECT_EQ(h.core->counters().failed, 1);
  h.expect_all_released();
}

ResilienceConfig hedging_after(double s) {
  ResilienceConfig r;
  r.hedge_delay_max_s = s;  // no latency samples yet: the delay is the upper bound
  return r;
}

TEST(RequestEndings, HedgeRace) {
  // The first token comes from the hedge (won), or from the first attempt (lost).
  for (bool hedge_wins : {true, false}) {
    SCOPED_TRACE(hedge_wins ? "hedge won" : "hedge lost");
    Harness h({.resilience = hedging_after(1.0)});
    auto r = h.submit();
    if (!hedge_wins) h.calls[0]->headers();  // the first attempt reached its worker
    h.advance(0.75, {&r});
    EXPECT_EQ(h.calls.size(), 1u) << "no hedge before the delay";
    h.advance(0.25, {&r});
    ASSERT_EQ(h.calls.size(), 2u);
    EXPECT_NE(Harness::replica_of(*h.calls[1], h), Harness::replica_of(*h.calls[0], h));
    FakeCall& winner = *h.calls[hedge_wins ? 1 : 0];
    FakeCall& loser = *h.calls[hedge_wins ? 0 : 1];
    if (hedge_wins) winner.headers();
    winner.tokens(0, {4});
    h.settle();
    EXPECT_TRUE(loser.cancelled) << "the loser is cancelled on its worker";
    EXPECT_EQ(r.client->header("x-switchyard-replica"), h.core->fleet().info(Harness::replica_of(winner, h)).id);
    EXPECT_EQ(r.client->header("x-switchyard-attempts"), "2") << "the hedge counts, whoever won";
    winner.finish();
    h.settle();
    EXPECT_TRUE(r.client->finished);
    EXPECT_EQ(h.core->counters().hedges, 1);
    EXPECT_EQ(h.core->counters().hedges_won, hedge_wins ? 1 : 0);
    // A first attempt without headers within the hedge delay never reached its worker: an
    // outlier.
    EXPECT_EQ(h.core->fleet().ejected(Harness::replica_of(*h.calls[0], h)), hedge_wins);
    h.expect_all_released();
  }
}

TEST(RequestEndings, HedgeArrivingAfterTheFirstTokenIsNeverSent) {
  Harness h({.resilience = hedging_after(1.0)});
  auto r = h.submit();
  h.calls[0]->headers();
  h.clock->advance(1.0);
  boost::asio::post(h.ioc, std::exchange(r.alarm->f, nullptr));  // the watchdog rings...
  h.ioc.run_one();                                               // ...and asks the core for a hedge
  h.calls[0]->tokens(0, {9});                                    // the first token comes meanwhile
  h.settle();
  EXPECT_EQ(h.core->counters().hedges, 1);
  EXPECT_EQ(h.calls.size(), 1u) << "the late hedge gave its slot back unused";
  h.calls[0]->finish();
  h.expect_all_released();
}

TEST(RequestEndings, DrainRefusesTheQueuedAndTheRetries) {
  Harness h({.replicas = 1, .capacity = 1, .resilience = no_hedging()});
  auto running = h.submit();
  auto queued = h.submit();
  h.core->close(ApiError::unavailable("the gateway is shutting down", "shutting_down"));
  h.settle();
  ASSERT_TRUE(queued.client->error.has_value());
  EXPECT_EQ(queued.client->error->code, "shutting_down");
  h.calls[0]->headers();
  h.calls[0]->tokens(0, {1});
  h.calls[0]->reset();  // no retry once the core is closing
  h.settle();
  ASSERT_TRUE(running.client->error.has_value());
  EXPECT_EQ(running.client->answers, 1);
  EXPECT_EQ(h.calls.size(), 1u);
  h.expect_all_released();
}

TEST(RequestEndings, NoReplicaAnswersAtOnce) {
  Harness h({.replicas = 0, .resilience = {}});
  auto r = h.submit();
  ASSERT_TRUE(r.client->error.has_value());
  EXPECT_EQ(r.client->error->code, "no_replica");
  h.expect_all_released();
}

}  // namespace
}  // namespace sy::gateway::testing
