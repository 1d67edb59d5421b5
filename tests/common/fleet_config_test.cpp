#include "common/config/fleet_config.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sy {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    FleetConfig::parse(yaml, "test.yaml");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(FleetConfig, TheCheckedInFileLoads) {
  const FleetConfig c = FleetConfig::load(std::string(SY_SOURCE_DIR) + "/replicas.yaml");
  EXPECT_EQ(c.default_mode, "throughput");
  EXPECT_EQ(c.modes.at("throughput").replicas, 2);
  EXPECT_EQ(c.modes.at("latency").replicas, 1);
  EXPECT_EQ(c.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(c.routing.policy, "prefix");
  EXPECT_EQ(split_host_port(c.admin_listen).first, "127.0.0.1");
}

TEST(FleetConfig, DefaultsAndGpuModes) {
  const FleetConfig c = FleetConfig::parse(R"(
model: /m/x.gguf
devices: ["0", "1", "2", "3"]
modes:
  throughput: {replicas: 4, devices_per_replica: 1}
  latency: {replicas: 1, devices_per_replica: 4, parallel: pcp}
)", "t");
  EXPECT_EQ(c.served_model_name, "x");
  EXPECT_EQ(c.modes.at("latency").parallel, "pcp");
  EXPECT_EQ(c.startup.stagger_s, 2.0);
  EXPECT_EQ(c.limits.max_header_bytes, 16384u);
}

TEST(FleetConfig, MistakesAreNamed) {
  const std::string base = "model: m.gguf\nmodes: {throughput: {replicas: 2}}\n";
  struct Row {
    std::string yaml, needle;
  };
  const std::vector<Row> rows = {
      {"modes: {a: {replicas: 1}}\ndefault_mode: a\n", "model: is required"},
      {base + "colour: blue\n", "colour: unknown field"},
      {base + "worker: {max_num_seqs: many}\n", "worker.max_num_seqs: has the wrong type"},
      {base + "worker: {max_num_seqs: 0}\n", "worker.max_num_seqs: must be 1 to 4096"},
      {base + "default_mode: latency\n", "default_mode: 'latency' is not one of the modes"},
      {base + "listen: nowhere\n", "not host:port"},
      {base + "routing: {policy: random}\n", "routing.policy"},
      {"model: m\ndevices: [\"0\"]\nmodes: {throughput: {replicas: 2}}\n", "need more than the 1 devices"},
      {"model: [unclosed\n", "invalid YAML"},
      {"model: m\nmodes: {throughput: {replicas: 2, gpus: 3}}\n", "modes.throughput.gpus: unknown field"},
      {base + "model: other.gguf\n", "model: appears twice"},
  };
  for (const Row& r : rows) {
    const std::string e = error_of(r.yaml);
    EXPECT_NE(e.find(r.needle), std::string::npos) << "yaml:\n" << r.yaml << "error: " << e;
    EXPECT_EQ(e.find("test.yaml"), 0u) << e;
  }
}

}  // namespace
}  // namespace sy
