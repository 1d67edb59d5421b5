// The worker's GPUs for telemetry: the CUDA ordinals its --device names, and, where the
// build has CUDA and the machine a GPU and a driver, the real NVML readings of device 0
// (RealNvml: printed, and checked for sense; skipped elsewhere).
#include "worker/telemetry/worker_gpus.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/telemetry/gpu_metrics.h"

namespace sy {
namespace {

TEST(WorkerGpus, OrdinalsFollowTheDeviceName) {
  struct Row {
    const char* device;
    int ranks;
    std::vector<int> ordinals;
  };
  const Row rows[] = {
      {"cpu", 1, {}},          {"cpu", 4, {}},           {"cuda", 1, {0}},
      {"cuda", 2, {0, 1}},     {"cuda:3", 1, {3}},       {"cuda:3", 2, {3, 4}},
      {"cuda:2,0", 2, {2, 0}}, {"cuda:1,1", 2, {1}},     {"cuda:0,0,1,1", 4, {0, 1}},
      {"cuda:", 1, {}},        {"cuda:x", 1, {}},        {"cuda:-1", 1, {}},
      {"cuda0", 1, {}},        {"gpu", 1, {}},           {"cuda:1,", 2, {}},
      {"cuda:1,,2", 3, {}},
  };
  for (const Row& r : rows)
    EXPECT_EQ(cuda_ordinals(r.device, r.ranks), r.ordinals) << r.device << " × " << r.ranks;
}

TEST(WorkerGpus, CpuWorkerHasNoGpuSeries) {
  MetricsRegistry registry;
  EXPECT_EQ(start_worker_gpu_metrics(registry, "cpu", 2), "");
  EXPECT_EQ(registry.expose().find("switchyard_gpu_"), std::string::npos);
}

#ifndef SY_HAVE_CUDA
TEST(WorkerGpus, BuildWithoutCudaNamesNoBusIds) {
  std::string error;
  EXPECT_TRUE(cuda_gpu_devices({0}, error).empty());
  EXPECT_EQ(error, "this build has no CUDA");
  MetricsRegistry registry;
  EXPECT_EQ(start_worker_gpu_metrics(registry, "cuda", 1), "gpu telemetry: off (this build has no CUDA)");
  EXPECT_EQ(registry.expose().find("switchyard_gpu_"), std::string::npos);
}
#endif

// On a GPU machine: device 0 found by its bus id in the real libnvidia-ml.so.1, every
// series present with a sensible value. Run it with
// `sy_worker_telemetry_test --gtest_filter=RealNvml.*`.
TEST(RealNvml, Device0Readings) {
  std::string error;
  const std::vector<GpuDevice> gpus = cuda_gpu_devices({0}, error);
  if (gpus.empty()) GTEST_SKIP() << "no CUDA device 0: " << error;
  if (NvmlLibrary::Opened nvml = NvmlLibrary::open(); !nvml.library)
    GTEST_SKIP() << "no NVML: " << nvml.error;
  MetricsRegistry registry;
  const std::string line = start_worker_gpu_metrics(registry, "cuda", 1);
  std::printf("%s\n", line.c_str());
  const std::string text = registry.expose();
  std::printf("%s", text.c_str());
  ASSERT_NE(line.find("; gpu 0 "), std::string::npos) << line;  // found in NVML by bus id
  ASSERT_NE(line.find(gpus[0].pci_bus_id), std::string::npos) << line;

  NvmlLibrary::Opened nvml = NvmlLibrary::open();
  GpuTelemetry telemetry(nvml.library, gpus, [](const std::string& m) { FAIL() << m; });
  ASSERT_EQ(telemetry.gpus().size(), 1u);
  EXPECT_EQ(telemetry.gpus()[0].uuid.rfind("GPU-", 0), 0u) << telemetry.gpus()[0].uuid;
  const GpuReading r = telemetry.reading(0);
  EXPECT_GT(r.power_watts, 10);  // an idle H200 draws tens of watts
  EXPECT_GE(r.power_limit_watts, 100);
  EXPECT_LE(r.power_limit_watts, 2000);
  EXPECT_GT(r.memory_total_bytes, 1e9);
  EXPECT_GT(r.memory_used_bytes, 0);  // the driver's reservation at least
  EXPECT_LE(r.memory_used_bytes, r.memory_total_bytes);
  EXPECT_GE(r.utilization_ratio, 0);
  EXPECT_LE(r.utilization_ratio, 1);
  EXPECT_GT(r.temperature_celsius, 5);
  EXPECT_LT(r.temperature_celsius, 110);
}

}  // namespace
}  // namespace sy
