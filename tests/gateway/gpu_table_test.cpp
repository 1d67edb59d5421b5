// The gateway's reading of workers' /metrics (worker_scrape.h) and the fleet's GPUs by
// uuid (gpu_table.h): two workers on one GPU count it once, stale and stopped replicas'
// GPUs go away.
#include <gtest/gtest.h>

#include <cmath>

#include "gateway/gpu_table.h"
#include "gateway/worker_scrape.h"

namespace sy::gateway {
namespace {

// As common/telemetry/gpu_metrics.cpp writes it for two GPUs, the second without a power
// sensor, after the engine's unlabelled gauges.
const char kWorkerMetrics[] =
    "# HELP switchyard_worker_kv_blocks_used KV blocks in use\n"
    "# TYPE switchyard_worker_kv_blocks_used gauge\n"
    "switchyard_worker_kv_blocks_used 12\n"
    "switchyard_worker_kv_blocks_capacity 4096\n"
    "switchyard_worker_kv_host_blocks_capacity 8192\n"
    "switchyard_worker_requests_running 3\n"
    "switchyard_worker_requests_waiting 1\n"
    "switchyard_gpu_power_watts{gpu=\"0\",uuid=\"GPU-a\"} 123.456\n"
    "switchyard_gpu_power_limit_watts{gpu=\"0\",uuid=\"GPU-a\"} 700\n"
    "switchyard_gpu_power_limit_watts{gpu=\"1\",uuid=\"GPU-b\"} 650\n"
    "switchyard_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-a\"} 1073741824\n"
    "switchyard_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-a\"} 1.50754820096e+11\n"
    "switchyard_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-a\"} 0.37\n"
    "switchyard_gpu_utilization_ratio{gpu=\"1\",uuid=\"GPU-b\"} 1\n"
    "switchyard_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-a\"} 41\n"
    "switchyard_gpu_temperature_celsius{gpu=\"1\",uuid=\"GPU-b\"} NaN\n"
    "switchyard_gpu_info{gpu=\"0\",uuid=\"GPU-a\",name=\"NVIDIA \\\"H200\\\"\",pci_bus_id=\"00000000:3B:00.0\"} 1\n"
    "switchyard_gpu_power_watts{gpu=\"2\"} 99\n"  // no uuid: cannot be told apart, ignored
    "switchyard_gpu_power_watts{gpu=\"3\",uuid=\"GPU-c\" 99\n";  // malformed, ignored

TEST(WorkerScrape, ReadsEngineGaugesAndGpusByUuid) {
  const WorkerScrape w = parse_worker_metrics(kWorkerMetrics);
  EXPECT_EQ(w.kv_blocks_used, 12);
  EXPECT_EQ(w.kv_blocks_total, 4096);
  EXPECT_EQ(w.kv_host_blocks_total, 8192);
  EXPECT_EQ(w.requests_running, 3);
  EXPECT_EQ(w.requests_waiting, 1);
  ASSERT_EQ(w.gpus.size(), 2u);
  const GpuSample& a = w.gpus[0];
  EXPECT_EQ(a.uuid, "GPU-a");
  EXPECT_EQ(a.gpu, "0");
  EXPECT_EQ(a.name, "NVIDIA \"H200\"");
  EXPECT_EQ(a.pci_bus_id, "00000000:3B:00.0");
  EXPECT_DOUBLE_EQ(a.power_watts, 123.456);
  EXPECT_DOUBLE_EQ(a.power_limit_watts, 700);
  EXPECT_DOUBLE_EQ(a.memory_used_bytes, 1073741824.0);
  EXPECT_DOUBLE_EQ(a.memory_total_bytes, 150754820096.0);
  EXPECT_DOUBLE_EQ(a.utilization_ratio, 0.37);
  EXPECT_DOUBLE_EQ(a.temperature_celsius, 41);
  const GpuSample& b = w.gpus[1];
  EXPECT_EQ(b.uuid, "GPU-b");
  EXPECT_TRUE(std::isnan(b.power_watts)) << "no series: no reading";
  EXPECT_TRUE(std::isnan(b.temperature_celsius)) << "a NaN series reads NaN";
  EXPECT_DOUBLE_EQ(b.power_limit_watts, 650);
  EXPECT_EQ(b.name, "");
}

TEST(WorkerScrape, CpuWorkerHasNoGpus) {
  const WorkerScrape w = parse_worker_metrics("switchyard_worker_kv_blocks_used 5\r\nswitchyard_worker_requests_running 2");
  EXPECT_EQ(w.kv_blocks_used, 5);
  EXPECT_EQ(w.requests_running, 2);
  EXPECT_TRUE(w.gpus.empty());
  EXPECT_TRUE(parse_worker_metrics("").gpus.empty());
}

GpuSample sample(const std::string& uuid, double watts) {
  GpuSample g{uuid, "0", "", "", watts, 700, 1, 2, 0.5, 40};
  return g;
}

TEST(GpuTable, TwoReplicasOnOneGpuCountItOnce) {
  GpuTable table(10);
  table.update("r0", {sample("GPU-a", 100), sample("GPU-b", 50)}, 1.0);
  table.update("r1", {sample("GPU-a", 110)}, 2.0);  // the same GPU, read a second later
  const auto gpus = table.gpus(2.0);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].sample.uuid, "GPU-a");
  EXPECT_DOUBLE_EQ(gpus[0].sample.power_watts, 110) << "the freshest report wins";
  EXPECT_EQ(gpus[0].replicas, (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(gpus[1].replicas, (std::vector<std::string>{"r0"}));
  EXPECT_DOUBLE_EQ(table.power_watts(2.0), 160) << "GPU-a once, not twice";
}

TEST(GpuTable, StaleAndForgottenReportsLeave) {
  GpuTable table(10);
  table.update("r0", {sample("GPU-a", 100)}, 0.0);
  table.update("r1", {sample("GPU-b", std::nan(""))}, 5.0);
  EXPECT_DOUBLE_EQ(table.power_watts(5.0), 100) << "a GPU without a power reading adds nothing";
  EXPECT_EQ(table.gpus(10.5).size(), 1u) << "r0's report is 10.5 s old";
  table.forget("r1");
  EXPECT_TRUE(table.gpus(10.5).empty());
  table.update("r0", {sample("GPU-a", 100)}, 11);
  table.update("r0", {}, 12);  // the replica reports no GPU any more
  EXPECT_TRUE(table.gpus(12).empty());
}

}  // namespace
}  // namespace sy::gateway
