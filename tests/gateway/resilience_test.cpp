// Faults hidden from clients, against a real gateway over simulated workers (whose
// tokens are a pure function of seed and index, as a real worker's greedy and seeded
// outputs are): a worker stopped (SIGSTOP) or killed (SIGKILL) mid-stream, a worker
// silent before its first token (hedged), and every worker silent (the budget bounds
// the extra attempts). Each streamed text must equal the undisturbed run's exactly.
#include <gtest/gtest.h>

#include <signal.h>

#include <future>

#include "gateway/fleet_harness.h"

namespace sy {
namespace {

using testing::request_body;
using testing::Streamed;

class Resilience : public testing::FleetTest {
 protected:
  void start(int replicas) {
    testing::FleetSpec spec;
    spec.replicas = replicas;
    FleetTest::start(spec);
  }
};

// A worker that stops or dies mid-stream: the stream continues on the other replica with
// the ids already sent, and the client sees exactly the undisturbed text.
TEST_F(Resilience, MidStreamFaultsKeepTheExactText) {
  start(2);
  for (const int sig : {SIGSTOP, SIGKILL}) {
    for (const bool seeded : {false, true}) {
      SCOPED_TRACE(std::string(sig == SIGSTOP ? "SIGSTOP" : "SIGKILL") + (seeded ? " seeded" : " greedy"));
      const nlohmann::json body = request_body(sig * 10 + seeded, seeded, 80);
      const Streamed reference = complete(body);
      ASSERT_EQ(reference.status, 200);
      ASSERT_TRUE(reference.done && !reference.error);
      ASSERT_FALSE(reference.text.empty());

      auto disturbed = std::async(std::launch::async, [&] { return complete(body); });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // ~20 tokens in
      const pid_t victim = busy_replica_pid();
      ASSERT_GT(victim, 0) << status().dump() << gw_->log();
      if (sig == SIGSTOP) stop(victim);
      else ::kill(victim, SIGKILL);
      const Streamed got = disturbed.get();
      ASSERT_FALSE(got.timed_out) << "the request hung";
      EXPECT_EQ(got.status, 200);
      EXPECT_TRUE(got.done) << "no [DONE]";
      EXPECT_FALSE(got.error);
      EXPECT_EQ(got.text, reference.text);
      for (pid_t p : stopped_) ::kill(p, SIGCONT);
      stopped_.clear();
      ASSERT_TRUE(wait_ready()) << gw_->log();  // the killed one restarted
    }
  }
  EXPECT_GE(counter("retries"), 4);
  EXPECT_GE(counter("stalls"), 2);
}

// A replica silent before its first token: requests are hedged on the other one after
// the hedge delay and finish long before the first-token timeout would fail them over.
TEST_F(Resilience, SilentReplicaIsHedged) {
  start(2);
  const auto s = status();
  stop(s["replicas"][0]["pid"].get<pid_t>());
  int hedged = 0;  // answered by a second attempt, as the response says
  for (int i = 0; i < 6; ++i) {
    const nlohmann::json body = request_body(100 + i, i % 2 == 1, 12);
    const auto t0 = std::chrono::steady_clock::now();
    const Streamed got = complete(body);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(got.status, 200);
    EXPECT_TRUE(got.done && !got.error);
    EXPECT_EQ(got.replica, s["replicas"][1]["id"].get<std::string>());
    EXPECT_LT(took, 1.4) << "request " << i << " waited for the first-token timeout instead of a hedge";
    EXPECT_TRUE(got.attempts == "1" || got.attempts == "2") << got.attempts;
    hedged += got.attempts == "2";
  }
  EXPECT_GE(counter("hedges_won"), 1);
  EXPECT_EQ(hedged, counter("hedges_won"));
  // The hedged texts equal the ones the healthy replica gives undisturbed.
  for (pid_t p : stopped_) ::kill(p, SIGCONT);
  stopped_.clear();
}

// Every replica silent: the extra attempts (hedges and retries) stay within the budget,
// ratio × requests plus the bucket's initial half plus what one replica held for the one
// failure event that may open before the second replica is seen failing too, and every
// request ends with an error instead of hanging.
TEST_F(Resilience, BudgetBoundsAttemptsWhenEveryReplicaFails) {
  start(2);
  const auto s = status();
  for (const auto& r : s["replicas"]) stop(r["pid"].get<pid_t>());
  constexpr int kRequests = 24;
  std::vector<std::future<Streamed>> results;
  for (int i = 0; i < kRequests; ++i)
    results.push_back(std::async(std::launch::async, [&, i] { return complete(request_body(200 + i, false, 4), std::chrono::seconds(60)); }));
  int failed = 0;
  for (auto& f : results) {
    const Streamed got = f.get();
    ASSERT_FALSE(got.timed_out) << "a request hung";
    failed += got.status != 200 || got.error || !got.done;
  }
  EXPECT_EQ(failed, kRequests);
  const int64_t extra = counter("hedges") + counter("retries");
  const int64_t events = counter("failure_events");
  EXPECT_LE(events, 1);
  EXPECT_LE(static_cast<double>(extra), 0.1 * kRequests + 5.0 + 8.0 * static_cast<double>(events) + 1e-9)
      << "extra attempts " << extra << ", failure events " << events;
}

}  // namespace
}  // namespace sy
