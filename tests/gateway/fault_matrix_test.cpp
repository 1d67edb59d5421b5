// The proxy rows of issue 5's fault matrix, over real processes on loopback: a gateway
// whose two replicas are each a simworker behind its own switchyard-faultproxy
// (sy_proxied_worker). The workload (greedy and seeded streams, several at once) runs
// once undisturbed for the reference texts, then again while one replica's link breaks:
// a reset before the first byte, a reset mid-stream, a blackhole, a latency spike.
// Every request must end with exactly the undisturbed text and [DONE], none past its
// deadline, and each row checks that its fault really met the traffic.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "bench/faultproxy_process.h"
#include "gateway/fleet_harness.h"

namespace sy {
namespace {

using testing::FaultProxyControl;
using testing::Streamed;

constexpr int kRequests = 24;
constexpr int kConcurrency = 6;
constexpr int kTokens = 40;  // × 15 ms: 0.6 s a stream undisturbed
constexpr auto kDeadline = std::chrono::seconds(15);

class FaultMatrix : public testing::FleetTest {
 protected:
  void SetUp() override {
    control_dir_ = testing::temp_path(std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_proxies");
    std::filesystem::create_directories(control_dir_);
    testing::FleetSpec spec;
    spec.worker_binary = std::string(SY_BIN_DIR) + "/sy_proxied_worker";
    spec.worker_args = {"--ttft-ms", "5", "--itl-ms", "15", "--control-dir", control_dir_};
    ASSERT_NO_FATAL_FAILURE(start(spec));
    for (int i = 0; i < kRequests; ++i) bodies_.push_back(testing::request_body(300 + i, i % 2 == 1, kTokens));
    reference_ = complete_all(bodies_, kConcurrency, kDeadline);
    for (int i = 0; i < kRequests; ++i) {
      ASSERT_EQ(reference_[i].status, 200) << "undisturbed request " << i;
      ASSERT_TRUE(reference_[i].done && !reference_[i].error) << "undisturbed request " << i;
      ASSERT_FALSE(reference_[i].text.empty());
    }
  }
  void TearDown() override { std::filesystem::remove_all(control_dir_); }

  // The control API of the proxy in front of replica `index` (written by its
  // sy_proxied_worker under its boot id).
  FaultProxyControl proxy_of(int index) {
    const auto s = status();
    const std::string boot_id = s["replicas"][index]["boot_id"].get<std::string>();
    const auto j = nlohmann::json::parse(testing::read_text_file(control_dir_ + "/" + boot_id + ".json"), nullptr, false);
    return FaultProxyControl(j.is_object() ? j.value("control_port", uint16_t{0}) : uint16_t{0});
  }

  // Waits (at most 5 s) until replica `index` streams requests, then 150 ms more, so
  // that a fault injected next meets streams in the middle.
  bool wait_for_streams_on(int index) {
    for (int i = 0; i < 500; ++i) {
      const auto s = status();
      if (s.is_object() && s["replicas"][index]["load"]["in_flight"].get<int>() > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Runs the workload again while `inject` breaks replica 0's link (from another
  // thread, once that replica streams), then checks every request against the
  // undisturbed run.
  void run_with_fault(const std::function<void(FaultProxyControl&)>& inject) {
    FaultProxyControl proxy = proxy_of(0);
    ASSERT_NE(proxy.control_port(), 0) << "no control file for replica 0 in " << control_dir_;
    bool streaming = false;
    std::thread injector([&] {
      streaming = wait_for_streams_on(0);
      if (streaming) inject(proxy);
    });
    const std::vector<Streamed> got = complete_all(bodies_, kConcurrency, kDeadline);
    injector.join();
    ASSERT_TRUE(streaming) << "replica 0 never carried a request: " << status().dump();
    for (int i = 0; i < kRequests; ++i) {
      SCOPED_TRACE("request " + std::to_string(i) + (i % 2 ? " (seeded)" : " (greedy)"));
      EXPECT_FALSE(got[i].timed_out) << "past its deadline";
      EXPECT_EQ(got[i].status, 200);
      EXPECT_TRUE(got[i].done) << "no [DONE]";
      EXPECT_FALSE(got[i].error);
      EXPECT_EQ(got[i].text, reference_[i].text);
    }
    if (HasFailure()) ADD_FAILURE() << "status: " << status().dump() << "\nproxy: " << proxy.stats().dump() << "\n" << gw_->log();
  }

  // A fault that lasts `window`, then is lifted.
  static void for_a_while(FaultProxyControl& proxy, const nlohmann::json& toxic, std::chrono::milliseconds window) {
    const int64_t id = proxy.add_toxic(toxic);
    EXPECT_GE(id, 0) << proxy.last_reply().body;
    std::this_thread::sleep_for(window);
    EXPECT_TRUE(proxy.remove_toxic(id)) << proxy.last_reply().body;
  }

  std::string control_dir_;
  std::vector<nlohmann::json> bodies_;
  std::vector<Streamed> reference_;
};

// New connections to replica 0 are reset as they are accepted, before the worker sees a
// byte: those attempts fail over before their first token.
TEST_F(FaultMatrix, ProxyResetBeforeTheFirstByte) {
  run_with_fault([](FaultProxyControl& p) { for_a_while(p, {{"type", "reset"}}, std::chrono::milliseconds(1500)); });
  EXPECT_GE(counter("retries"), 1) << "no request met the reset";
}

// Every open connection to replica 0 is reset while its streams are half sent; for a
// while after, new ones are reset after their first 1500 bytes down (a few tokens in).
TEST_F(FaultMatrix, ProxyResetMidStream) {
  run_with_fault([](FaultProxyControl& p) {
    EXPECT_GE(p.reset_all(), 2) << "the KV-event stream and at least one request";
    for_a_while(p, {{"type", "reset"}, {"direction", "down"}, {"bytes", 1500}}, std::chrono::milliseconds(1500));
  });
  EXPECT_GE(counter("retries"), 1);
}

// New connections to replica 0 are accepted and swallowed (blackhole) for two seconds:
// no byte reaches the worker and none comes back, so those attempts are hedged (or
// failed over at the first-token timeout) on the other replica.
TEST_F(FaultMatrix, ProxyBlackhole) {
  run_with_fault([](FaultProxyControl& p) { for_a_while(p, {{"type", "blackhole"}}, std::chrono::milliseconds(2000)); });
  EXPECT_GE(counter("hedges") + counter("stalls"), 1) << "no request met the blackhole";
}

// Replica 0's replies are held back a second for a while: streams under way see a gap
// longer than the stall timeout, new ones a late first token.
TEST_F(FaultMatrix, LatencySpike) {
  run_with_fault([](FaultProxyControl& p) {
    for_a_while(p, {{"type", "latency"}, {"direction", "down"}, {"latency_ms", 1000}, {"jitter_ms", 100}}, std::chrono::milliseconds(1500));
  });
  EXPECT_GE(counter("stalls"), 1) << "no stream met the spike";
}

}  // namespace
}  // namespace sy
