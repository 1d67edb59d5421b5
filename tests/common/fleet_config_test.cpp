#include "common/config/fleet_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/config/host_check.h"

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
  EXPECT_EQ(c.modes.at("latency").tp, 2);  // two CPU ranks as threads of one worker
  EXPECT_EQ(c.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(c.routing.policy, "prefix");
  EXPECT_EQ(split_host_port(c.admin_listen).first, "127.0.0.1");
  // Its relative paths are below the repository root, the file's folder.
  EXPECT_EQ(c.model, std::string(SY_SOURCE_DIR) + "/models/qwen3-0.6b-synthetic.gguf");
  EXPECT_EQ(c.worker.binary, std::string(SY_SOURCE_DIR) + "/build/bin/switchyard-worker");
}

TEST(FleetConfig, DefaultsAndGpuModes) {
  const FleetConfig c = FleetConfig::parse(R"(
model: /m/x.gguf
devices: ["0", "1", "2", "3"]
modes:
  throughput: {replicas: 4, devices_per_replica: 1}
  latency: {replicas: 1, tp: 1}
)", "t");
  EXPECT_EQ(c.served_model_name, "x");
  EXPECT_EQ(c.modes.at("throughput").tp, 1);
  EXPECT_EQ(c.modes.at("latency").devices_per_replica, 1);  // tp × pcp
  EXPECT_EQ(c.startup.stagger_s, 2.0);
  EXPECT_EQ(c.worker.numerics, "deterministic");  // what seeded failover needs
  EXPECT_EQ(c.limits.max_header_bytes, 16384u);
  EXPECT_EQ(c.limits.max_body_bytes, 4194304u);
  EXPECT_EQ(c.limits.header_timeout_s, 15.0);
  EXPECT_TRUE(c.api_keys.empty());
  EXPECT_TRUE(c.key_limits.empty());
  EXPECT_TRUE(c.cors.allow_origins.empty());
  EXPECT_EQ(split_host_port(c.admin_listen).first, "127.0.0.1");
  EXPECT_FALSE(c.routing.session_rebalance);
  EXPECT_TRUE(FleetConfig::parse("model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {session_rebalance: true}\n", "t")
                  .routing.session_rebalance);
  EXPECT_EQ(c.routing.session_cost_tolerance, 1.0);
  EXPECT_EQ(c.routing.recompute_weight, 100.0);
  EXPECT_EQ(c.routing.session_load, "count");
  EXPECT_EQ(c.routing.lost_context, "sessions");
  EXPECT_EQ(c.routing.new_session, "sessions");
  EXPECT_EQ(FleetConfig::parse("model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {new_session: kv}\n", "t").routing.new_session, "kv");
  EXPECT_EQ(FleetConfig::parse("model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {lost_context: kv}\n", "t").routing.lost_context, "kv");
  EXPECT_EQ(FleetConfig::parse("model: m\nmodes: {throughput: {replicas: 1}}\nrouting: {session_cost_tolerance: 1.5}\n", "t")
                .routing.session_cost_tolerance,
            1.5);
  // Context parallelism over GPUs: tp × pcp devices a replica.
  const FleetConfig cp = FleetConfig::parse(R"(
model: /m/x.gguf
devices: ["0", "1", "2", "3"]
modes:
  throughput: {replicas: 4}
  latency: {replicas: 1, tp: 2, pcp: 2}
)", "t");
  EXPECT_EQ(cp.modes.at("latency").devices_per_replica, 4);
  EXPECT_EQ(cp.modes.at("latency").pcp, 2);
  // The host tier with context parallelism: cpu ranks share one (GPUs: refused, below).
  const std::string cpu_pcp = "model: m\nmodes: {latency: {replicas: 1, pcp: 2}}\ndefault_mode: latency\n";
  EXPECT_DOUBLE_EQ(FleetConfig::parse(cpu_pcp + "worker: {kv_host_gb: 1}\n", "t").worker.kv_host_gb, 1);
}

TEST(FleetConfig, ApiKeysAreStringsOrMappingsWithLimits) {
  const FleetConfig c = FleetConfig::parse(R"(
model: m.gguf
modes: {throughput: {replicas: 1}}
api_keys:
  - plain
  - {key: limited, requests_per_s: 2.5, burst: 5, max_concurrent: 3}
  - {key: rate-only, requests_per_s: 1}
admin_key: boss
admin_listen: 0.0.0.0:9000
cors: {allow_origins: ["https://app.example", "http://localhost:3000"]}
limits: {header_timeout_s: 1.5, write_timeout_s: 2, max_stream_buffer_bytes: 65536}
)", "t");
  EXPECT_EQ(c.api_keys, (std::vector<std::string>{"plain", "limited", "rate-only"}));
  ASSERT_EQ(c.key_limits.size(), 2u);
  EXPECT_EQ(c.key_limits.at("limited").requests_per_s, 2.5);
  EXPECT_EQ(c.key_limits.at("limited").burst, 5.0);
  EXPECT_EQ(c.key_limits.at("limited").max_concurrent, 3);
  EXPECT_EQ(c.key_limits.at("rate-only").max_concurrent, 0);
  EXPECT_EQ(c.cors.allow_origins.size(), 2u);
  EXPECT_EQ(c.limits.header_timeout_s, 1.5);
  EXPECT_EQ(c.limits.write_timeout_s, 2.0);
  EXPECT_EQ(c.limits.max_stream_buffer_bytes, 65536u);
  EXPECT_EQ(c.limits.idle_timeout_s, 60.0);  // untouched fields keep their defaults
  EXPECT_EQ(c.limits.body_timeout_s, 30.0);
}

// chat_template_kwargs: a YAML mapping kept as JSON, scalars typed as YAML reads them.
TEST(FleetConfig, ChatTemplateKwargsAreJson) {
  const std::string base = "model: m.gguf\nmodes: {throughput: {replicas: 1}}\n";
  EXPECT_EQ(FleetConfig::parse(base, "t").chat_template_kwargs, "{}");
  const FleetConfig c = FleetConfig::parse(
      base + "chat_template_kwargs: {enable_thinking: false, depth: 3, ratio: 0.5, name: \"x\", quoted: \"true\", none: ~, list: [1, a]}\n", "t");
  EXPECT_EQ(c.chat_template_kwargs,
            R"({"depth":3,"enable_thinking":false,"list":[1,"a"],"name":"x","none":null,"quoted":"true","ratio":0.5})");
  EXPECT_NE(error_of(base + "chat_template_kwargs: [1]\n").find("chat_template_kwargs: must be a mapping"), std::string::npos);
}

TEST(FleetConfig, ModeControllerAndPowerStagger) {
  const std::string base = "model: m.gguf\nmodes: {throughput: {replicas: 1}}\n";
  EXPECT_FALSE(FleetConfig::parse(base, "t").mode_controller.enabled);
  EXPECT_TRUE(FleetConfig::parse(base + "mode_controller: true\n", "t").mode_controller.enabled);
  const FleetConfig c = FleetConfig::parse(base + "mode_controller: {sustain_s: 2, min_dwell_s: 8, horizon_s: 60}\n"
                                                  "startup: {max_power_w: 2400, power_gpus: ['0', '0000:3B:00.0']}\nnvml_library: /x/nvml.so\n",
                                           "t");
  EXPECT_TRUE(c.mode_controller.enabled) << "a mapping turns it on";
  EXPECT_DOUBLE_EQ(c.mode_controller.sustain_s, 2);
  EXPECT_DOUBLE_EQ(c.mode_controller.min_dwell_s, 8);
  EXPECT_DOUBLE_EQ(c.mode_controller.horizon_s, 60);
  EXPECT_DOUBLE_EQ(c.mode_controller.to_throughput_above, 8) << "the rest keep their defaults";
  EXPECT_DOUBLE_EQ(c.startup.max_power_w, 2400);
  EXPECT_EQ(c.startup.power_gpus, (std::vector<std::string>{"0", "0000:3B:00.0"}));
  EXPECT_EQ(c.nvml_library, "/x/nvml.so");
  EXPECT_FALSE(FleetConfig::parse(base + "mode_controller: {enabled: false, sustain_s: 2}\n", "t").mode_controller.enabled);
  const std::pair<std::string, std::string> rows[] = {
      {"mode_controller: {sustain: 2}\n", "mode_controller.sustain: unknown field"},
      {"mode_controller: {to_latency_below: 9}\n", "mode_controller: needs 0 <= to_latency_below < to_throughput_above"},
      {"mode_controller: {horizon_s: 0}\n", "mode_controller: needs"},
      {"startup: {max_power_w: -1}\n", "startup.max_power_w: must be >= 0"},
      {"startup: {max_power_w: 500}\n", "startup.power_gpus: max_power_w needs GPUs to measure"},
      {"startup: {max_power_w: 500, power_gpus: [gpu0]}\n", "startup.power_gpus: 'gpu0' is neither an NVML index"},
  };
  for (const auto& [yaml, needle] : rows) EXPECT_NE(error_of(base + yaml).find(needle), std::string::npos) << yaml << " → " << error_of(base + yaml);
}

TEST(FleetConfig, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1"}) EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "128.0.0.1", "127.example.com", "", "example.com"})
    EXPECT_FALSE(is_loopback_host(h)) << h;
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
      {base + "worker: {numerics: exact}\n", "worker.numerics: must be deterministic, fast or auto"},
      {base + "worker: {kv_host_gb: -1}\n", "worker.kv_host_gb: must be 0 or more"},
      {"model: m.gguf\ndevices: [\"0\", \"1\"]\nmodes: {latency: {replicas: 1, pcp: 2}}\ndefault_mode: latency\nworker: {kv_host_gb: 1}\n",
       "worker.kv_host_gb: the KV host tier is not supported with context parallelism on GPUs yet (modes.latency.pcp is 2)"},
      {"model: m.gguf\nmodes: {latency: {replicas: 1, devices_per_replica: 4, parallel: pcp}}\ndefault_mode: latency\n",
       "modes.latency.parallel: is replaced by tp and pcp"},
      {"model: m.gguf\ndevices: [\"0\", \"1\"]\nmodes: {latency: {replicas: 1, tp: 4}}\ndefault_mode: latency\n",
       "modes.latency: 1 replicas × 4 devices need 4 devices, more than the 2 listed"},
      {"model: m.gguf\ndevices: [\"0\", \"1\"]\nmodes: {latency: {replicas: 1, pcp: 16}}\ndefault_mode: latency\n",
       "modes.latency.pcp: must be 1 to 15 over GPUs"},
      {"model: m.gguf\nmodes: {latency: {replicas: 1, pcp: 65}}\ndefault_mode: latency\n", "modes.latency.pcp: must be 1 to 64"},
      {"model: m.gguf\nmodes: {latency: {replicas: 1, tp: 0}}\ndefault_mode: latency\n", "modes.latency.tp: must be 1 to 64"},
      {base + "default_mode: latency\n", "default_mode: 'latency' is not one of the modes"},
      {base + "listen: nowhere\n", "not host:port"},
      {base + "routing: {policy: random}\n", "routing.policy"},
      {base + "routing: {session_rebalance: often}\n", "routing.session_rebalance: has the wrong type"},
      {base + "routing: {session_cost_tolerance: 0.5}\n", "routing.session_cost_tolerance: must be in [1, 100]"},
      {base + "routing: {session_cost_tolerance: .nan}\n", "routing.session_cost_tolerance: must be in [1, 100]"},
      {base + "routing: {recompute_weight: 0.9}\n", "routing.recompute_weight: must be in [1, 100]"},
      {base + "routing: {session_load: tokens}\n", "routing.session_load: must be count or activity"},
      {base + "routing: {lost_context: nearest}\n", "routing.lost_context: must be sessions or kv"},
      {base + "routing: {new_session: nearest}\n", "routing.new_session: must be sessions or kv"},
      {"model: m\ndevices: [\"0\"]\nmodes: {throughput: {replicas: 2}}\n", "modes.throughput: 2 replicas × 1 devices need 2 devices, more than the 1 listed"},
      {"model: m\ndevices: [\"0\", \"1\"]\nmodes: {throughput: {replicas: 3}}\n", "3 replicas × 1 devices need 3 devices, more than the 2 listed"},
      {"model: m\ndevices: [gpu0]\nmodes: {throughput: {replicas: 1}}\n", "devices: 'gpu0' is neither cpu nor a GPU index"},
      {"model: m\ndevices: [\"-1\"]\nmodes: {throughput: {replicas: 1}}\n", "devices: '-1' is neither cpu nor a GPU index"},
      {"model: m\ndevices: [\"0\", \"0\"]\nmodes: {latency: {replicas: 1, tp: 2}}\ndefault_mode: latency\n", "replica 0 would have GPU '0' twice"},
      {"model: m\ndevices: [cpu, \"0\"]\nmodes: {throughput: {replicas: 1}}\n", "devices: \"cpu\" cannot be mixed with GPU ids"},
      {"model: m\ndevices: []\nmodes: {throughput: {replicas: 1}}\n", "devices: needs at least one device"},
      {"model: [unclosed\n", "invalid YAML"},
      {"model: m\nmodes: {throughput: {replicas: 2, gpus: 3}}\n", "modes.throughput.gpus: unknown field"},
      {base + "model: other.gguf\n", "model: appears twice"},
      {base + "api_keys: [a, {key: b, requests_per_s: -1}]\n", "api_keys[1]: limits must not be negative"},
      {base + "api_keys: [a, {key: b, rate: 3}]\n", "api_keys[1].rate: unknown field"},
      {base + "api_keys: [a, {requests_per_s: 3}]\n", "api_keys[1]: the key must be a non-empty string"},
      {base + "api_keys: [secret1, secret1]\n", "api_keys[1]: repeats an earlier key"},
      {base + "api_keys: [[x]]\n", "api_keys[0]: must be a key or a mapping"},
      {base + "api_keys: k\n", "api_keys: must be a list"},
      {base + "api_keys: [k]\nadmin_key: k\n", "admin_key: must differ from every api key"},
      {base + "admin_listen: 0.0.0.0:8081\n", "admin_listen: '0.0.0.0:8081' is reachable from other hosts"},
      {base + "admin_listen: 127.example.com:8081\n", "is reachable from other hosts"},
      {base + "cors: {allow_origins: [\"https://a.example/path\"]}\n", "cors.allow_origins: 'https://a.example/path' is not an origin"},
      {base + "cors: {allow_origins: [a.example]}\n", "is not an origin"},
      {base + "cors: {origins: [\"*\"]}\n", "cors.origins: unknown field"},
      {base + "limits: {write_timeout_s: 0}\n", "limits.write_timeout_s: must be positive"},
      {base + "limits: {max_stream_buffer_bytes: 100}\n", "limits.max_stream_buffer_bytes: must be at least 4096"},
      {base + "limits: {max_connections: 0}\n", "limits.max_connections: must be at least 1"},
      {base + "limits: {socket_send_buffer_bytes: 100}\n", "limits.socket_send_buffer_bytes: must be 0"},
      {base + "resilience: {hedge_max_priority: urgent}\n", "resilience.hedge_max_priority: must be interactive, standard or batch"},
      {base + "resilience: {hedge_delay_min_s: 2, hedge_delay_max_s: 1}\n", "resilience.hedge_delay_*"},
      {base + "resilience: {stall_min_s: 0}\n", "resilience.stall_*"},
      {base + "resilience: {budget_ratio: 2}\n", "resilience.budget_ratio: must be in [0, 1]"},
      {base + "resilience: {max_attempts: 0}\n", "resilience.max_attempts"},
      {base + "resilience: {hedging: true}\n", "resilience.hedging: unknown field"},
  };
  for (const Row& r : rows) {
    const std::string e = error_of(r.yaml);
    EXPECT_NE(e.find(r.needle), std::string::npos) << "yaml:\n" << r.yaml << "error: " << e;
    EXPECT_EQ(e.find("test.yaml"), 0u) << e;
  }
}

// A folder of its own under the system's temp folder, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sy-fleet-config-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name, const std::string& text = "x", std::filesystem::perms perms = std::filesystem::perms::owner_read |
                                                                                                      std::filesystem::perms::owner_write) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    std::filesystem::permissions(p, perms);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr auto kExecutable = std::filesystem::perms::owner_all;

TEST(FleetConfig, RelativePathsAreTakenFromTheFilesFolder) {
  TempDir dir;
  const std::string yaml = dir.file("conf/replicas.yaml",
                                    "model: models/m.gguf\nmodes: {throughput: {replicas: 1}}\nworker: {binary: ../bin/worker}\n");
  const FleetConfig c = FleetConfig::load(yaml);
  EXPECT_EQ(c.model, dir.path() + "/conf/models/m.gguf");
  EXPECT_EQ(c.worker.binary, dir.path() + "/bin/worker");
  EXPECT_EQ(c.served_model_name, "m");

  // Absolute paths and an unset binary (the gateway's default) stay as written.
  const std::string abs = dir.file("abs.yaml", "model: /models/m.gguf\nmodes: {throughput: {replicas: 1}}\n");
  const FleetConfig a = FleetConfig::load(abs);
  EXPECT_EQ(a.model, "/models/m.gguf");
  EXPECT_EQ(a.worker.binary, "");

  // A relative path to the file itself is made absolute first: the result does not
  // depend on the folder the gateway later runs in.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const FleetConfig r = FleetConfig::load("conf/replicas.yaml");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(r.model, dir.path() + "/conf/models/m.gguf");
}

TEST(FleetConfig, HostProblemsNameTheField) {
  TempDir dir;
  const std::string model = dir.file("m.gguf");
  const std::string worker = dir.file("worker", "#!/bin/sh\n", kExecutable);
  const std::string plain = dir.file("plain");  // not executable
  std::filesystem::create_directories(dir.path() + "/hf-model");
  struct Row {
    std::string model, binary;
    std::vector<std::string> devices;
    int32_t gpus;
    std::string field, needle;  // field empty: no problem
  };
  const std::string missing = dir.path() + "/nope";
  const std::vector<Row> rows = {
      {model, worker, {"cpu"}, 0, "", ""},
      {dir.path() + "/hf-model", worker, {"cpu"}, 0, "", ""},  // a Hugging Face directory
      {model, worker, {"0", "1"}, 2, "", ""},
      {missing, worker, {"cpu"}, 0, "model", "'" + missing + "' does not exist"},
      {model, missing, {"cpu"}, 0, "worker.binary", "'" + missing + "' does not exist"},
      {model, plain, {"cpu"}, 0, "worker.binary", "is not executable"},
      {model, dir.path(), {"cpu"}, 0, "worker.binary", "is a directory, not a program"},
      {model, "", {"cpu"}, 0, "worker.binary", "is empty"},
      {model, worker, {"0"}, 0, "devices[0]", "GPU 0 does not exist: this machine has no NVIDIA GPU"},
      {model, worker, {"0", "1", "2"}, 2, "devices[2]", "GPU 2 does not exist: this machine has 2 (ids 0 to 1, from test)"},
      {missing, missing, {"7"}, 0, "model", "does not exist"},  // the first problem only
  };
  for (const Row& r : rows) {
    FleetConfig c;
    c.model = r.model;
    c.worker.binary = r.binary;
    c.devices = r.devices;
    const auto p = host_problem(c, HostDevices{r.gpus, "test"});
    if (r.field.empty()) {
      EXPECT_FALSE(p) << r.model << " " << r.binary << ": " << p->first << ": " << p->second;
      continue;
    }
    ASSERT_TRUE(p) << r.needle;
    EXPECT_EQ(p->first, r.field);
    EXPECT_NE(p->second.find(r.needle), std::string::npos) << p->second;
    EXPECT_EQ(p->second.find('\n'), std::string::npos) << p->second;  // one line
  }
}

// worker.kv_host_gb per rank of the largest mode, against 3/4 of the machine's memory.
TEST(FleetConfig, TheKvHostTierMustFitTheMachinesMemory) {
  TempDir dir;
  FleetConfig c;
  c.model = dir.file("m.gguf");
  c.worker.binary = dir.file("worker", "#!/bin/sh\n", kExecutable);
  c.devices = {"cpu"};
  c.modes["throughput"] = ModeConfig{"throughput", 4};
  c.modes["latency"] = ModeConfig{"latency", 1, 2};
  c.worker.kv_host_gb = 16;
  const int64_t gib = int64_t{1} << 30;
  EXPECT_FALSE(host_problem(c, HostDevices{0, "test", 128 * gib}));  // 64 of 96
  EXPECT_FALSE(host_problem(c, HostDevices{0, "test", 0}));          // unknown: not checked
  const auto p = host_problem(c, HostDevices{0, "test", 64 * gib});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "worker.kv_host_gb");
  EXPECT_NE(p->second.find("4 ranks × 16 GiB = 64.0 GiB of pinned host memory, more than 3/4 of this machine's 64.0 GiB"),
            std::string::npos)
      << p->second;
  c.modes["latency"].replicas = 3;  // 3 × tp 2 = 6 ranks: the largest mode counts
  EXPECT_NE(host_problem(c, HostDevices{0, "test", 100 * gib})->second.find("6 ranks"), std::string::npos);
  c.worker.kv_host_gb = 0;
  EXPECT_FALSE(host_problem(c, HostDevices{0, "test", 1}));
}

TEST(FleetConfig, ThisMachinesGpusAreCountedFromTheDriversFiles) {
  const HostDevices host = probe_host_devices();
  EXPECT_GE(host.gpus, 0);
  EXPECT_GT(host.memory_bytes, int64_t{1} << 20) << "MemTotal of /proc/meminfo";
  if (!std::filesystem::exists("/proc/driver/nvidia/gpus") && !std::filesystem::exists("/dev/nvidia0")) {
    EXPECT_EQ(host.gpus, 0);
  }
  if (std::filesystem::exists("/dev/nvidia0")) {
    EXPECT_GE(host.gpus, 1);
  }
}

}  // namespace
}  // namespace sy
