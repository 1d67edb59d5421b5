// The power-aware stagger in process: a gateway whose own NVML is the test double with
// GPU 0's power scripted through a file (tests/common/fake_nvml.h), over two simulated
// workers that take seconds to load. The first load's spike is measured (the script
// raises the draw while r0 loads); the second worker waits while draw + spike exceeds
// startup.max_power_w and starts once the draw falls; the startup timeline is in
// /admin/status and /admin/history. Phases follow the status, not seconds.
#include <gtest/gtest.h>

#include <fstream>

#include "gateway/fleet_harness.h"

namespace sy::testing {

constexpr const char* kGpu0 = "GPU-0b5e7c1a-1111-2222-3333-444455556666";

class PowerStaggerTest : public ::testing::Test {
 protected:
  using Clock = std::chrono::steady_clock;

  void SetUp() override {
    power_file_ = temp_path("power-stagger-mw");
    set_power_w(100);
    ::setenv("FAKE_NVML_POWER_FILE", power_file_.c_str(), 1);  // the gateway inherits it
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_POWER_FILE");
    std::filesystem::remove(power_file_);
  }
  void set_power_w(int watts) {
    const std::string tmp = power_file_ + ".tmp";
    std::ofstream(tmp) << watts * 1000 << "\n";
    std::filesystem::rename(tmp, power_file_);  // whole, never half written
  }
  nlohmann::json status() {
    const auto r = http_request(gw_->admin_port(), "GET", "/admin/status");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  // The status once `done` holds (at most 30 s); the last one otherwise.
  nlohmann::json wait_for(const std::function<bool(const nlohmann::json&)>& done) {
    nlohmann::json s;
    for (const auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
      s = status();
      if (s.is_object()) {
        for (const auto& r : s["replicas"]) gw_->remember_worker(r.value("pid", 0));
        if (done(s)) return s;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "timed out; last status: " << s.dump() << "\n" << gw_->log();
    return s;
  }
  static std::string state(const nlohmann::json& s, int i) { return s["replicas"][i].value("state", ""); }

  std::string power_file_;
  std::unique_ptr<GatewayProcess> gw_;
};

TEST_F(PowerStaggerTest, TheSecondWorkerWaitsForRoomForTheFirstOnesSpike) {
  FleetSpec spec;
  spec.worker_args = {"--ready-delay-ms", "6000"};  // a load long enough to script its spike
  spec.more_yaml = std::string("nvml_library: ") + SY_FAKE_NVML + "\n";
  const std::string config = temp_path("power-stagger.yaml");
  write_fleet_config(config, spec);
  {  // write_fleet_config's startup line, with the power limit
    std::string text = read_text_file(config);
    const std::string from = "startup: {stagger_s: 0,";
    text.replace(text.find(from), from.size(), "startup: {max_power_w: 500, power_gpus: ['00000000:3B:00.0'], stagger_s: 0,");
    std::ofstream(config) << text;
  }
  gw_ = std::make_unique<GatewayProcess>(std::string(SY_BIN_DIR) + "/switchyard-gateway", std::vector<std::string>{"--config", config},
                                         temp_path("power-stagger.log"));
  ASSERT_NE(gw_->port(), 0) << gw_->log();

  // r0 loads from 100 W; while it loads the draw peaks at 420 W.
  nlohmann::json s = wait_for([](const nlohmann::json& s) { return !s["startup"]["loading"].is_null(); });
  EXPECT_EQ(s["startup"]["loading"]["replica"], "r0");
  EXPECT_DOUBLE_EQ(s["startup"]["loading"]["baseline_w"].get<double>(), 100);
  EXPECT_EQ(state(s, 1), "stopped") << "one load at a time";
  set_power_w(420);
  s = wait_for([](const nlohmann::json& s) { return !s["startup"]["loading"].is_null() && s["startup"]["loading"]["peak_w"] == 420.0; });
  set_power_w(300);  // after the peak, still loading

  // r0 ready: a 320 W spike; 300 + 320 > 500, so r1 waits.
  s = wait_for([](const nlohmann::json& s) { return state(s, 0) == "ready" && s["startup"]["waiting_for_power"] == true; });
  ASSERT_EQ(s["startup"]["spikes"].size(), 1u) << s.dump();
  EXPECT_DOUBLE_EQ(s["startup"]["spike_w"].get<double>(), 320);
  EXPECT_EQ(state(s, 1), "stopped");
  EXPECT_EQ(s["replicas"][1]["pid"], 0);
  // Still waiting a few gate checks later (the draw has not moved).
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  s = status();
  EXPECT_EQ(state(s, 1), "stopped") << "r1 started at 300 W + a 320 W spike, over 500 W";

  // The draw falls to 150 W: 150 + 320 ≤ 500, r1 starts, and both end ready.
  set_power_w(150);
  s = wait_for([](const nlohmann::json& s) { return state(s, 0) == "ready" && state(s, 1) == "ready"; });
  ASSERT_EQ(s["startup"]["spikes"].size(), 2u) << s.dump();
  EXPECT_EQ(s["startup"]["spikes"][1]["replica"], "r1");
  EXPECT_DOUBLE_EQ(s["startup"]["spikes"][1]["baseline_w"].get<double>(), 150);
  EXPECT_EQ(s["startup"]["waiting_for_power"], false);
  EXPECT_EQ(s["gpus"][0]["uuid"], kGpu0) << "the gateway's own reading of GPU 0";
  EXPECT_EQ(s["gpus"][0]["replicas"], nlohmann::json({"gateway"}));

  // The startup timeline: GPU 0's power over time, with the starts and readiness marked.
  const nlohmann::json h = http_request(gw_->admin_port(), "GET", "/admin/history").json();
  ASSERT_TRUE(h["gpu_power"].contains(kGpu0)) << h.dump();
  double peak = 0;
  for (const auto& w : h["gpu_power"][kGpu0])
    if (w.is_number()) peak = std::max(peak, w.get<double>());
  EXPECT_DOUBLE_EQ(peak, 420) << "the spike is in the history";
  int starts = 0, readies = 0;
  for (const auto& e : h["events"]) starts += e["kind"] == "start", readies += e["kind"] == "ready";
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(readies, 2);
  gw_->terminate();
  std::filesystem::remove(config);
}

}  // namespace sy::testing
