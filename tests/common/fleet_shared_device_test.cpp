// Several replicas on one GPU (issue 20): a GPU id listed once per replica that shares
// it, each replica with its own KV budget; and the routing policies the config accepts.
#include <gtest/gtest.h>

#include <stdexcept>

#include "common/config/fleet_config.h"

namespace sy {
namespace {

TEST(FleetSharedDevice, FourReplicasOnOneGpu) {
  const FleetConfig c = FleetConfig::parse(
      "model: m.gguf\ndevices: [\"0\", \"0\", \"0\", \"0\"]\nmodes: {throughput: {replicas: 4}}\n"
      "worker: {kv_memory_gb: 14}\n",
      "test.yaml");
  EXPECT_EQ(c.devices.size(), 4u);
  EXPECT_EQ(c.modes.at("throughput").replicas, 4);
  EXPECT_DOUBLE_EQ(c.worker.kv_memory_gb, 14.0);  // each replica's share, passed as --kv-memory-gb
}

TEST(FleetSharedDevice, TwoTp2ReplicasOnTwoGpusAndTheLimits) {
  EXPECT_NO_THROW(
      FleetConfig::parse("model: m\ndevices: [\"0\", \"1\", \"0\", \"1\"]\nmodes: {latency: "
                         "{replicas: 2, tp: 2}}\ndefault_mode: latency\n",
                         "t.yaml"));
  // One replica's group naming a GPU twice is refused, as are more replicas than slots.
  EXPECT_THROW(FleetConfig::parse("model: m\ndevices: [\"0\", \"0\", \"1\", \"1\"]\nmodes: "
                                  "{latency: {replicas: 2, tp: 2}}\ndefault_mode: latency\n",
                                  "t.yaml"),
               std::runtime_error);
  EXPECT_THROW(
      FleetConfig::parse("model: m\ndevices: [\"0\", \"0\"]\nmodes: {throughput: {replicas: 3}}\n",
                         "t.yaml"),
      std::runtime_error);
}

TEST(FleetSharedDevice, RoutingPolicies) {
  for (const char* p :
       {"prefix", "approximate", "session_affinity", "round_robin", "least_loaded"}) {
    const FleetConfig c = FleetConfig::parse(
        std::string("model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {policy: ") + p + "}\n",
        "t.yaml");
    EXPECT_EQ(c.routing.policy, p);
  }
  EXPECT_THROW(
      FleetConfig::parse(
          "model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {policy: sticky}\n", "t.yaml"),
      std::runtime_error);
}

}  // namespace
}  // namespace sy
