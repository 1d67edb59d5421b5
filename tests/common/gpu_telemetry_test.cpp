// GPU telemetry through NVML opened at run time: a missing library, a library without a
// symbol, a failing nvmlInit, and the real dlopen/dlsym path against the test double of
// the driver's library (fake_nvml.h), whose readings must come out on /metrics exactly.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/telemetry/gpu_metrics.h"
#include "common/telemetry/gpu_telemetry.h"
#include "common/telemetry/nvml_library.h"
#include "tests/common/fake_nvml.h"

namespace sy {
namespace {

using namespace std::chrono_literals;

// The test's own handle on the fake keeps it loaded across tests, so its state is the
// one NvmlLibrary::open sees.
class GpuTelemetryTest : public testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(SY_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto reset = reinterpret_cast<void (*)()>(dlsym(handle_, "fake_nvml_reset"));
    auto state = reinterpret_cast<FakeNvmlState* (*)()>(dlsym(handle_, "fake_nvml_state"));
    ASSERT_TRUE(reset && state);
    reset();
    fake_ = state();
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
  }

  // Only the switchyard_gpu_* lines of an exposition.
  static std::string gpu_lines(const std::string& exposition) {
    std::istringstream in(exposition);
    std::string out;
    for (std::string line; std::getline(in, line);)
      if (line.find("switchyard_gpu_") != std::string::npos) out += line + "\n";
    return out;
  }

  // The worker's two GPUs as the CUDA runtime names them.
  const std::vector<GpuDevice> devices_ = {{0, "0000:3B:00.0"}, {1, "0000:86:00.0"}};
  void* handle_ = nullptr;
  FakeNvmlState* fake_ = nullptr;
};

TEST_F(GpuTelemetryTest, MissingLibraryMeansNoGpuSeries) {
  const NvmlLibrary::Opened nvml = NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(nvml.library, nullptr);
  EXPECT_NE(nvml.error.find("cannot open /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << nvml.error;

  MetricsRegistry registry;
  const std::string line = start_gpu_metrics(registry, devices_, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(line.rfind("gpu telemetry: off (cannot open /nonexistent/libnvidia-ml.so.1", 0), 0u)
      << line;
  EXPECT_EQ(gpu_lines(registry.expose()), "");
}

TEST_F(GpuTelemetryTest, LibraryWithoutAnEntryPointIsRefused) {
  const NvmlLibrary::Opened nvml = NvmlLibrary::open(SY_FAKE_NVML_PARTIAL);
  EXPECT_EQ(nvml.library, nullptr);
  EXPECT_NE(nvml.error.find("has no symbol nvmlDeviceGetTemperature"), std::string::npos)
      << nvml.error;
}

TEST_F(GpuTelemetryTest, FailedInitIsReportedAndNothingRegistered) {
  fake_->init_result = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  MetricsRegistry registry;
  EXPECT_EQ(start_gpu_metrics(registry, devices_, SY_FAKE_NVML),
            "gpu telemetry: off (nvmlInit_v2 failed: Driver Not Loaded (9))");
  EXPECT_EQ(gpu_lines(registry.expose()), "");
  EXPECT_EQ(fake_->shutdown_calls, 0);  // nothing to shut down after a failed init
}

TEST_F(GpuTelemetryTest, NoDevicesLeavesNvmlUnopened) {
  MetricsRegistry registry;
  EXPECT_EQ(start_gpu_metrics(registry, {}, SY_FAKE_NVML), "");
  EXPECT_EQ(fake_->init_calls, 0);
}

TEST_F(GpuTelemetryTest, ExposesEachReadingInPrometheusUnits) {
  {
    MetricsRegistry registry;
    const std::string line = start_gpu_metrics(registry, devices_, SY_FAKE_NVML);
    EXPECT_EQ(line, std::string("gpu telemetry: NVML ") + SY_FAKE_NVML +
                        "; gpu 0 NVIDIA H200 (GPU-0b5e7c1a-1111-2222-3333-444455556666, "
                        "0000:3B:00.0): 123.5 W of 700 W, 1.0 of 140.4 GiB, 37% busy, 41 C"
                        "; gpu 1 NVIDIA H200 (GPU-9f00aa17-7777-8888-9999-000011112222, "
                        "0000:86:00.0): nan W of 650 W, 0.5 of 140.4 GiB, 100% busy, 67 C");
    EXPECT_EQ(fake_->init_calls, 1);
    const std::string u0 = "gpu=\"0\",uuid=\"GPU-0b5e7c1a-1111-2222-3333-444455556666\"";
    const std::string u1 = "gpu=\"1\",uuid=\"GPU-9f00aa17-7777-8888-9999-000011112222\"";
    // GPU 1 has no power sensor: no power series for it.
    EXPECT_EQ(gpu_lines(registry.expose()),
              "# HELP switchyard_gpu_info The worker's GPUs: 1 per GPU, identity in the labels.\n"
              "# TYPE switchyard_gpu_info gauge\n"
              "switchyard_gpu_info{" + u0 + ",name=\"NVIDIA H200\",pci_bus_id=\"0000:3B:00.0\"} 1\n"
              "switchyard_gpu_info{" + u1 + ",name=\"NVIDIA H200\",pci_bus_id=\"0000:86:00.0\"} 1\n"
              "# HELP switchyard_gpu_power_watts GPU power draw (NVML).\n"
              "# TYPE switchyard_gpu_power_watts gauge\n"
              "switchyard_gpu_power_watts{" + u0 + "} 123.456\n"
              "# HELP switchyard_gpu_power_limit_watts GPU enforced power limit (NVML).\n"
              "# TYPE switchyard_gpu_power_limit_watts gauge\n"
              "switchyard_gpu_power_limit_watts{" + u0 + "} 700\n"
              "switchyard_gpu_power_limit_watts{" + u1 + "} 650\n"
              "# HELP switchyard_gpu_memory_used_bytes GPU memory not free: what processes hold plus the driver's reservation (NVML).\n"
              "# TYPE switchyard_gpu_memory_used_bytes gauge\n"
              "switchyard_gpu_memory_used_bytes{" + u0 + "} 1073741824\n"
              "switchyard_gpu_memory_used_bytes{" + u1 + "} 536870912\n"
              "# HELP switchyard_gpu_memory_total_bytes GPU memory in all (NVML).\n"
              "# TYPE switchyard_gpu_memory_total_bytes gauge\n"
              "switchyard_gpu_memory_total_bytes{" + u0 + "} 150754820096\n"
              "switchyard_gpu_memory_total_bytes{" + u1 + "} 150754820096\n"
              "# HELP switchyard_gpu_utilization_ratio Fraction of NVML's last sample period during which a kernel ran on the GPU.\n"
              "# TYPE switchyard_gpu_utilization_ratio gauge\n"
              "switchyard_gpu_utilization_ratio{" + u0 + "} 0.37\n"
              "switchyard_gpu_utilization_ratio{" + u1 + "} 1\n"
              "# HELP switchyard_gpu_temperature_celsius GPU die temperature (NVML).\n"
              "# TYPE switchyard_gpu_temperature_celsius gauge\n"
              "switchyard_gpu_temperature_celsius{" + u0 + "} 41\n"
              "switchyard_gpu_temperature_celsius{" + u1 + "} 67\n");
    EXPECT_EQ(fake_->shutdown_calls, 0);  // the series keep NVML open
  }
  EXPECT_EQ(fake_->shutdown_calls, 1);  // and the last one closes it
}

TEST_F(GpuTelemetryTest, GpuNvmlDoesNotKnowIsLeftOutAndSaidSo) {
  MetricsRegistry registry;
  const std::string line =
      start_gpu_metrics(registry, {{0, "0000:AF:00.0"}, {1, "0000:86:00.0"}}, SY_FAKE_NVML);
  EXPECT_NE(line.find("; gpu 0 (0000:AF:00.0): not in NVML, no telemetry for it: Not Found (6)"),
            std::string::npos)
      << line;
  const std::string lines = gpu_lines(registry.expose());
  EXPECT_EQ(lines.find("gpu=\"0\""), std::string::npos) << lines;
  EXPECT_NE(lines.find("switchyard_gpu_temperature_celsius{gpu=\"1\""), std::string::npos) << lines;
}

// The gateway has no CUDA to name bus ids: it watches GPUs by NVML index.
TEST_F(GpuTelemetryTest, GpusByNvmlIndex) {
  NvmlLibrary::Opened nvml = NvmlLibrary::open(SY_FAKE_NVML);
  ASSERT_NE(nvml.library, nullptr) << nvml.error;
  std::vector<std::string> logged;
  GpuTelemetry t(nvml.library, {{1, ""}, {7, ""}}, [&](const std::string& m) { logged.push_back(m); });
  ASSERT_EQ(t.gpus().size(), 1u);
  EXPECT_EQ(t.gpus()[0].uuid, "GPU-9f00aa17-7777-8888-9999-000011112222");
  EXPECT_EQ(t.gpus()[0].ordinal, 1);
  EXPECT_DOUBLE_EQ(t.reading(0).power_limit_watts, 650);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("gpu 7 (NVML index): not in NVML"), std::string::npos) << logged[0];
}

TEST_F(GpuTelemetryTest, ReadingsAreKeptUpToASecondAndReadForAllGpusAtOnce) {
  NvmlLibrary::Opened nvml = NvmlLibrary::open(SY_FAKE_NVML);
  ASSERT_NE(nvml.library, nullptr) << nvml.error;
  auto now = std::chrono::steady_clock::time_point{} + 100s;
  GpuTelemetry telemetry(nvml.library, devices_, [](const std::string& m) { FAIL() << m; },
                         [&now] { return now; });
  ASSERT_EQ(telemetry.gpus().size(), 2u);
  EXPECT_EQ(telemetry.reading(0).power_watts, 123.456);
  EXPECT_TRUE(std::isnan(telemetry.reading(1).power_watts));
  EXPECT_EQ(fake_->power_reads, 2);  // one round: both GPUs

  fake_->gpus[0].power_mw = 450000;
  fake_->gpus[1].temperature_c = 70;
  now += 999ms;
  EXPECT_EQ(telemetry.reading(0).power_watts, 123.456);
  EXPECT_EQ(telemetry.reading(1).temperature_celsius, 67);
  EXPECT_EQ(fake_->power_reads, 2);
  now += 1ms;
  EXPECT_EQ(telemetry.reading(1).temperature_celsius, 70);
  EXPECT_EQ(telemetry.reading(0).power_watts, 450);
  EXPECT_EQ(fake_->power_reads, 4);
}

// promtool's verdict on the fake GPUs' exposition ("" when it passes). Skips without
// promtool (scripts/setup.sh installs Debian's prometheus).
TEST_F(GpuTelemetryTest, ExpositionPassesPromtool) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  MetricsRegistry registry;
  start_gpu_metrics(registry, devices_, SY_FAKE_NVML);
  const std::string text = registry.expose();
  ASSERT_NE(gpu_lines(text), "");
  const std::string in = testing::TempDir() + "gpu_metrics.prom";
  const std::string out = testing::TempDir() + "gpu_metrics.promtool";
  std::ofstream(in) << text;
  const int rc = std::system(("promtool check metrics < " + in + " > " + out + " 2>&1").c_str());
  std::stringstream said;
  said << std::ifstream(out).rdbuf();
  EXPECT_EQ(rc, 0) << said.str();
  EXPECT_EQ(said.str(), "") << text;
}

}  // namespace
}  // namespace sy
