// GPU telemetry through the gateway: two simulated workers that both report the same
// two GPUs (read through the NVML test double, tests/common/fake_nvml.*) show as two
// GPUs in /admin/status, keyed by uuid, each listing both replicas, the fleet's power
// counted once; /admin/history carries each GPU's power.
#include <gtest/gtest.h>

#include "gateway/fleet_harness.h"

namespace sy::testing {
namespace {

constexpr const char* kGpu0 = "GPU-0b5e7c1a-1111-2222-3333-444455556666";  // fake_nvml_reset()'s
constexpr const char* kGpu1 = "GPU-9f00aa17-7777-8888-9999-000011112222";

class GatewayGpuTelemetry : public FleetTest {
 protected:
  // The status once it lists `n` GPUs (the gateway polls workers every 2 s).
  nlohmann::json status_with_gpus(size_t n) {
    nlohmann::json s;
    for (const auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
      s = status();
      if (s.is_object() && s["gpus"].size() == n && s["gpus"][0]["replicas"].size() == 2) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }
};

TEST_F(GatewayGpuTelemetry, TwoWorkersOnTwoGpusShowTwoGpusOnce) {
  FleetSpec spec;
  spec.worker_args.insert(spec.worker_args.end(), {"--gpu-bus-ids", "00000000:3B:00.0,00000000:86:00.0", "--nvml", SY_FAKE_NVML});
  start(spec);
  const nlohmann::json s = status_with_gpus(2);
  ASSERT_EQ(s["gpus"].size(), 2u) << s.dump(1) << gw_->log();
  const nlohmann::json& a = s["gpus"][0];
  const nlohmann::json& b = s["gpus"][1];
  EXPECT_EQ(a["uuid"], kGpu0);
  EXPECT_EQ(a["name"], "NVIDIA H200");
  EXPECT_EQ(a["gpu"], "0");
  EXPECT_EQ(a["replicas"], nlohmann::json({"r0", "r1"})) << "both workers watch it; it is listed once";
  EXPECT_DOUBLE_EQ(a["power_watts"].get<double>(), 123.456);
  EXPECT_DOUBLE_EQ(a["power_limit_watts"].get<double>(), 700);
  EXPECT_DOUBLE_EQ(a["memory_used_bytes"].get<double>(), 1073741824.0);
  EXPECT_DOUBLE_EQ(a["memory_total_bytes"].get<double>(), 150754820096.0);
  EXPECT_DOUBLE_EQ(a["utilization_ratio"].get<double>(), 0.37);
  EXPECT_DOUBLE_EQ(a["temperature_celsius"].get<double>(), 41);
  EXPECT_EQ(b["uuid"], kGpu1);
  EXPECT_TRUE(b["power_watts"].is_null()) << "the double's second GPU has no power sensor";
  EXPECT_DOUBLE_EQ(b["power_limit_watts"].get<double>(), 650);
  EXPECT_DOUBLE_EQ(b["utilization_ratio"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s["power"]["watts"].get<double>(), 123.456) << "GPU 0 once, though two workers report it";

  // The history samples every second: GPU 0's power appears in it.
  nlohmann::json h;
  for (const auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline;) {
    h = http_request(gw_->admin_port(), "GET", "/admin/history").json();
    if (h.contains("gpu_power") && h["gpu_power"].contains(kGpu0)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(h["gpu_power"].contains(kGpu0)) << h.dump();
  EXPECT_FALSE(h["gpu_power"].contains(kGpu1)) << "no power reading, no power series";
  EXPECT_DOUBLE_EQ(h["gpu_power"][kGpu0].back().get<double>(), 123.456);
  EXPECT_DOUBLE_EQ(h["power_watts"].back().get<double>(), 123.456);
  EXPECT_EQ(h["t"].size(), h["power_watts"].size());
}

TEST_F(GatewayGpuTelemetry, CpuWorkersReportNoGpu) {
  start(FleetSpec{});
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past one metrics poll
  const nlohmann::json s = status();
  EXPECT_TRUE(s["gpus"].is_array());
  EXPECT_TRUE(s["gpus"].empty()) << s["gpus"].dump();
  EXPECT_DOUBLE_EQ(s["power"]["watts"].get<double>(), 0.0);
}

}  // namespace
}  // namespace sy::testing
