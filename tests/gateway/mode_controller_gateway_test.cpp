// The mode controller in process: a gateway over simulated workers (4 slots each;
// throughput = 2 replicas, latency = 1) with mode_controller's timings shortened. Ten
// users busy the latency replica: the thresholds (throughput not yet measured) switch to
// throughput; idle, it switches back; busy again, both modes are measured at that load
// and the measured rule (throughput moves about twice the tokens) switches. No request
// fails. Phases follow the status, not seconds; no rate is asserted.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "gateway/fleet_harness.h"

namespace sy::testing {
namespace {

using Clock = std::chrono::steady_clock;

class ModeControllerGatewayTest : public ::testing::Test {
 protected:
  ~ModeControllerGatewayTest() override {
    stop_users();
    if (gw_) gw_->terminate();
  }
  nlohmann::json status() {
    const auto r = http_request(gw_->admin_port(), "GET", "/admin/status");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  bool wait_for(const std::function<bool(const nlohmann::json&)>& done, const char* what) {
    nlohmann::json s;
    for (const auto deadline = Clock::now() + std::chrono::seconds(90); Clock::now() < deadline;) {
      s = status();
      if (s.is_object()) {
        for (const auto& r : s["replicas"]) gw_->remember_worker(r.value("pid", 0));
        if (done(s)) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "waiting for " << what << "; last status: " << s.dump() << "\n" << gw_->log();
    return false;
  }
  static std::function<bool(const nlohmann::json&)> settled(const std::string& mode, size_t replicas) {
    return [mode, replicas](const nlohmann::json& s) {
      size_t ready = 0;
      for (const auto& r : s["replicas"]) ready += r["state"] == "ready";
      return s["mode"] == mode && !s["switching"].get<bool>() && s["replicas"].size() == replicas && ready == replicas;
    };
  }
  // The controller's samples of `mode` at the bucket of ten users (6 to 12: "load": 8).
  static int samples_at_ten(const nlohmann::json& s, const char* mode) {
    for (const auto& e : s["controller"]["modes"][mode]["estimates"])
      if (e["load"] == 8) return e["samples"].get<int>();
    return 0;
  }
  void start_users(int n) {
    stop_ = false;
    for (int u = 0; u < n; ++u)
      users_.emplace_back([this, u] {
        for (int i = 0; !stop_; ++i) {
          const HttpResult r = http_request(gw_->port(), "POST", "/v1/completions",
                                            nlohmann::json{{"prompt", "user " + std::to_string(u) + " asks " + std::to_string(i)},
                                                           {"max_tokens", 40}, {"ignore_eos", true}}.dump());
          (r.status == 200 ? ok_ : failed_)++;
        }
      });
  }
  void stop_users() {
    stop_ = true;
    for (auto& t : users_) t.join();
    users_.clear();
  }

  std::unique_ptr<GatewayProcess> gw_;
  std::vector<std::thread> users_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, failed_{0};
};

TEST_F(ModeControllerGatewayTest, ThresholdsExploreThenTheMeasuredRuleSwitches) {
  FleetSpec spec;
  spec.max_num_seqs = 4;
  spec.worker_args = {"--ttft-ms", "5", "--itl-ms", "20"};
  spec.more_yaml =
      "default_mode: latency\n"
      "mode_controller: {to_throughput_above: 6, to_latency_below: 1, sustain_s: 2, min_dwell_s: 8, default_switch_s: 5}\n";
  const std::string config = temp_path("controller.yaml");
  write_fleet_config(config, spec);
  {
    std::string text = read_text_file(config);
    const std::string from = "modes:\n  throughput: {replicas: 2}\n";
    ASSERT_NE(text.find(from), std::string::npos) << text;
    text.replace(text.find(from), from.size(), "modes:\n  throughput: {replicas: 2}\n  latency: {replicas: 1}\n");
    std::ofstream(config) << text;
  }
  gw_ = std::make_unique<GatewayProcess>(std::string(SY_BIN_DIR) + "/switchyard-gateway", std::vector<std::string>{"--config", config},
                                         temp_path("controller.log"));
  ASSERT_NE(gw_->port(), 0) << gw_->log();
  ASSERT_TRUE(wait_for(settled("latency", 1), "the latency fleet"));

  // Ten users on one replica of four slots: above the threshold, throughput unmeasured.
  start_users(10);
  ASSERT_TRUE(wait_for(settled("throughput", 2), "the thresholds' switch to throughput"));
  ASSERT_TRUE(wait_for([](const nlohmann::json& s) { return samples_at_ten(s, "throughput") >= 3; }, "throughput measured at ten users"));
  stop_users();
  EXPECT_EQ(gw_->log().find("(measured:"), std::string::npos) << "the first switch had nothing measured to go by";

  // Idle: below the low threshold, back to latency.
  ASSERT_TRUE(wait_for(settled("latency", 1), "the switch back to latency"));
  nlohmann::json s = status();
  EXPECT_GE(samples_at_ten(s, "latency"), 3) << s["controller"].dump();
  EXPECT_TRUE(s["controller"]["modes"]["throughput"]["switch_s"].is_number()) << "the switch into throughput was measured";

  // Busy again: both modes are measured at this load; throughput moves about twice the
  // tokens (eight slots to four), so the measured rule switches.
  start_users(10);
  ASSERT_TRUE(wait_for(settled("throughput", 2), "the measured switch to throughput"));
  stop_users();
  const std::string log = gw_->log();
  EXPECT_NE(log.find("(measured: throughput gains"), std::string::npos) << log;
  s = status();
  EXPECT_EQ(failed_.load(), 0) << "of " << ok_.load();
  EXPECT_GT(ok_.load(), 10);
  EXPECT_EQ(s["counters"]["failed"], 0);
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace sy::testing
