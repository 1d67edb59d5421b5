// Graceful drain (issue 5 item 5), over a real gateway and simulated workers: on SIGTERM
// the gateway's /ready answers 503 at once, while streams are still running; new
// requests get 503; every stream in flight finishes with exactly its undisturbed text and
// [DONE] (also when its worker dies during the drain: it continues on another replica);
// then the gateway exits 0 and no worker it started is left. A grace shorter than the
// streams ends them without [DONE] and the gateway still exits.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <thread>

#include "gateway/fleet_harness.h"

namespace sy {
namespace {

using testing::http_request;
using testing::Streamed;

constexpr int kStreams = 6;
constexpr int kTokens = 100;  // × 20 ms: 2 s a stream
constexpr auto kExitWithin = std::chrono::seconds(20);

class Drain : public testing::FleetTest {
 protected:
  using Clock = std::chrono::steady_clock;

  void SetUp() override {
    testing::FleetSpec spec;
    spec.worker_args = {"--ttft-ms", "5", "--itl-ms", "20"};
    ASSERT_NO_FATAL_FAILURE(start(spec));
    for (int i = 0; i < kStreams; ++i) bodies_.push_back(testing::request_body(700 + i, i % 2 == 1, kTokens));
    reference_ = complete_all(bodies_, kStreams);
    for (const Streamed& r : reference_) ASSERT_TRUE(r.status == 200 && r.done && !r.error && !r.text.empty());
  }

  // Starts every stream, waits until all of them are under way, then runs `during`
  // (the drain) while they finish; checks each against the undisturbed run.
  void drain_while_streaming(const std::function<void()>& during) {
    std::vector<Streamed> got;
    std::vector<Clock::time_point> ended(kStreams);
    std::vector<std::thread> clients;
    got.resize(kStreams);
    for (int i = 0; i < kStreams; ++i)
      clients.emplace_back([&, i] {
        got[i] = complete(bodies_[i]);
        ended[i] = Clock::now();
      });
    const bool streaming =
        seconds_until([&] { return status().value("in_flight", 0) == kStreams; }, std::chrono::seconds(10)) >= 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // tokens flowing
    int most = 0;
    const auto s = status();
    for (const auto& r : s["replicas"])
      if (r["load"]["in_flight"].get<int>() > most) {
        most = r["load"]["in_flight"].get<int>();
        busiest_pid_ = r["pid"].get<pid_t>();
      }
    if (streaming) {
      EXPECT_EQ(http_request(gw_->port(), "GET", "/ready").status, 200);
      ::kill(gw_->pid(), SIGTERM);
      sigterm_at_ = Clock::now();
      during();
    }
    for (auto& c : clients) c.join();
    ASSERT_TRUE(streaming) << status().dump();
    first_stream_end_ = *std::min_element(ended.begin(), ended.end());
    for (int i = 0; i < kStreams; ++i) {
      SCOPED_TRACE("stream " + std::to_string(i));
      EXPECT_FALSE(got[i].timed_out);
      EXPECT_EQ(got[i].status, 200);
      EXPECT_TRUE(got[i].done) << "no [DONE]";
      EXPECT_FALSE(got[i].error);
      EXPECT_EQ(got[i].text, reference_[i].text);
    }
  }

  // /ready turns 503 (not a refused connection) within a second of the SIGTERM; the
  // time it did, or nothing.
  std::optional<Clock::time_point> ready_turns_503() {
    const double took = seconds_until([&] { return http_request(gw_->port(), "GET", "/ready").status == 503; },
                                      std::chrono::milliseconds(1000));
    if (took < 0) return std::nullopt;
    return Clock::now();
  }

  // The gateway exits 0 by itself and leaves no worker behind.
  void expect_clean_exit() {
    const auto code = gw_->wait_for_exit(kExitWithin);
    ASSERT_TRUE(code.has_value()) << "the gateway did not exit within 20 s of SIGTERM\n" << gw_->log();
    EXPECT_EQ(*code, 0) << gw_->log();
    EXPECT_TRUE(gw_->processes_with_its_boot_ids().empty()) << "a worker outlived the gateway";
    EXPECT_TRUE(gw_->workers_left(std::chrono::seconds(1)).empty());
  }

  std::vector<nlohmann::json> bodies_;
  std::vector<Streamed> reference_;
  Clock::time_point sigterm_at_, first_stream_end_;
  pid_t busiest_pid_ = -1;  // the replica with the most streams when SIGTERM came
};

TEST_F(Drain, ReadinessFailsAtOnceAndStreamsFinishBeforeExit) {
  std::optional<Clock::time_point> not_ready;
  int refused_status = 0;
  drain_while_streaming([&] {
    not_ready = ready_turns_503();
    refused_status = http_request(gw_->port(), "POST", "/v1/completions", testing::request_body(799, false, 4).dump()).status;
  });
  ASSERT_TRUE(not_ready.has_value()) << "/ready did not answer 503 within 1 s of SIGTERM\n" << gw_->log();
  EXPECT_LT(*not_ready, first_stream_end_) << "readiness failed only after streams ended";
  EXPECT_EQ(refused_status, 503) << "a new request during the drain";
  expect_clean_exit();
}

// A worker killed during the drain: its streams continue on the other replica.
TEST_F(Drain, StreamsOfAWorkerKilledDuringTheDrainContinueElsewhere) {
  drain_while_streaming([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(busiest_pid_, SIGKILL);
  });
  expect_clean_exit();
}

// shutdown.drain_grace_s shorter than the streams: the gateway stops waiting at the grace,
// stops its workers and exits; no cut stream ends with a clean [DONE].
class DrainGrace : public testing::FleetTest {};

TEST_F(DrainGrace, StreamsLongerThanTheGraceEndWithoutDoneAndTheGatewayExits) {
  testing::FleetSpec spec;
  spec.worker_args = {"--ttft-ms", "5", "--itl-ms", "20"};
  spec.more_yaml = "shutdown: {drain_grace_s: 0.5, worker_stop_grace_s: 2}\n";
  ASSERT_NO_FATAL_FAILURE(start(spec));
  constexpr int kLong = 4;
  std::vector<Streamed> got(kLong);
  std::vector<std::thread> clients;
  for (int i = 0; i < kLong; ++i)
    clients.emplace_back([&, i] { got[i] = complete(testing::request_body(900 + i, i % 2 == 1, 600), std::chrono::seconds(30)); });  // 12 s each
  ASSERT_GE(seconds_until([&] { return status().value("in_flight", 0) == kLong; }, std::chrono::seconds(10)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto sigterm_at = std::chrono::steady_clock::now();
  ::kill(gw_->pid(), SIGTERM);
  const auto code = gw_->wait_for_exit(std::chrono::seconds(15));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sigterm_at).count();
  for (auto& c : clients) c.join();
  ASSERT_TRUE(code.has_value()) << "the gateway did not exit within 15 s of SIGTERM\n" << gw_->log();
  EXPECT_EQ(*code, 0) << gw_->log();
  EXPECT_LT(took, 0.5 + 2 + 5) << "grace 0.5 s, worker stop grace 2 s, the simworker's own drain up to 5 s";
  for (int i = 0; i < kLong; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    EXPECT_FALSE(got[i].done) << "a stream cut by the end of the grace ended with a clean [DONE]";
    // Cut (an incomplete response) or ended by an error event: never mistaken for whole.
    EXPECT_TRUE(got[i].status == 0 || got[i].error) << "status " << got[i].status;
  }
  EXPECT_TRUE(gw_->processes_with_its_boot_ids().empty()) << "a worker outlived the gateway";
}

}  // namespace
}  // namespace sy
