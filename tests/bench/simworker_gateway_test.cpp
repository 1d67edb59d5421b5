// A real switchyard-gateway whose fleet is switchyard-simworker processes (worker.binary
// in replicas.yaml): the supervisor starts them as it starts workers, they become ready,
// completions stream through with the requested token counts, and the gateway's prefix
// routing follows the simulated workers' /internal/kv-events.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <thread>

#include "fixture_util.h"
#include "gateway/gateway_process.h"
#include "worker/fixture_edit.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

using testing::GatewayProcess;
using testing::http_request;
using testing::HttpResult;

constexpr size_t kReplicas = 4;

std::string write_config(const std::string& path) {
  std::ofstream(path) << "model: " << testing::fixture_path("qwen3-tiny-bf16.gguf") << "\n"
                      << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                      << "modes:\n  throughput: {replicas: " << kReplicas << "}\n"
                      << "worker:\n  binary: " << SY_BIN_DIR << "/switchyard-simworker\n"
                      << "  kv_blocks: 512\n  max_num_seqs: 8\n"
                      << "  extra_args: [--ttft-ms, '2', --itl-ms, '1', --prefill-us-per-token, '20']\n"
                      << "startup: {stagger_s: 0, ready_timeout_s: 30}\n";
  return path;
}

std::vector<int32_t> prefix_ids(size_t n, int32_t base) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<int32_t>(i * 7 % 5000);
  return v;
}

class SimFleet : public ::testing::Test {
 protected:
  SimFleet()
      : config_(write_config(testing::temp_path("simfleet.yaml"))),
        gw_(std::string(SY_BIN_DIR) + "/switchyard-gateway", {"--config", config_}, testing::temp_path("simfleet.log")) {}
  ~SimFleet() override {
    gw_.terminate();
    std::filesystem::remove(config_);
  }

  nlohmann::json status() {
    const auto r = http_request(gw_.admin_port(), "GET", "/admin/status");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  // Every replica ready with its event stream connected; remembers their pids.
  bool wait_ready(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto s = status();
      size_t ready = 0;
      if (s.is_object())
        for (const auto& r : s["replicas"]) {
          pids_.insert(r["pid"].get<pid_t>());
          ready += r["state"] == "ready" && r["kv_events_connected"].get<bool>();
        }
      if (ready == kReplicas) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  uint16_t replica_port(const nlohmann::json& replica) {
    const std::string url = replica["url"];
    return static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  }

  std::string config_;
  GatewayProcess gw_;
  std::set<pid_t> pids_;
};

TEST_F(SimFleet, StartsStreamsAndRoutesByTheSimulatedCaches) {
  ASSERT_NE(gw_.port(), 0) << gw_.log();
  ASSERT_TRUE(wait_ready()) << gw_.log();
  const auto s = status();
  for (const auto& r : s["replicas"]) {
    EXPECT_EQ(r["load"]["capacity"], 8);
    const std::string cmdline = testing::read_text_file("/proc/" + std::to_string(r["pid"].get<pid_t>()) + "/cmdline");
    EXPECT_NE(cmdline.find("switchyard-simworker"), std::string::npos);
  }

  // Streaming completions through the gateway: every one has its tokens.
  for (int i = 0; i < 8; ++i) {
    const nlohmann::json body = {{"prompt", "Tell me about ships, part " + std::to_string(i)}, {"max_tokens", 7},
                                 {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    const HttpResult r = http_request(gw_.port(), "POST", "/v1/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("event: error"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("\"completion_tokens\":7"), std::string::npos) << r.body;
    EXPECT_FALSE(r.header("x-switchyard-replica").empty());
  }

  // A long prompt sent straight to one simulated worker is known to the gateway only
  // through that worker's KV events: a request sharing its prefix lands there. Three
  // prefixes on three different replicas rule out luck.
  for (size_t target : {2u, 0u, 3u}) {
    const auto& replica = s["replicas"][target];
    const auto prefix = prefix_ids(600, 1000 + 20000 * static_cast<int32_t>(target));
    testing::SseStream events(replica_port(replica), "GET", "/internal/kv-events");
    std::vector<http::SseEvent> got;
    ASSERT_TRUE(events.next(got));  // the snapshot
    const nlohmann::json direct = {{"request_id", "direct-" + std::to_string(target)}, {"prompt_ids", prefix}, {"max_tokens", 2}};
    const HttpResult d = http_request(replica_port(replica), "POST", "/internal/generate", direct.dump());
    ASSERT_EQ(d.status, 200) << d.body;
    ASSERT_TRUE(events.next(got)) << "no stored event";  // published to every subscriber at once
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the gateway's copy is on its way

    auto ids = prefix;
    ids.insert(ids.end(), {42, 43, 44});
    const HttpResult r = http_request(gw_.port(), "POST", "/v1/completions",
                                      nlohmann::json{{"prompt", ids}, {"max_tokens", 3}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-switchyard-replica"), replica["id"].get<std::string>());
    EXPECT_GE(r.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 592);
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], 3);
  }

  // SIGTERM: the gateway stops its simulated workers too.
  EXPECT_EQ(gw_.terminate(), 0) << gw_.log();
  for (pid_t p : pids_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::kill(p, 0) == 0 && testing::read_text_file("/proc/" + std::to_string(p) + "/cmdline").find("simworker") != std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(testing::read_text_file("/proc/" + std::to_string(p) + "/cmdline").find("simworker") == std::string::npos)
        << "simulated worker " << p << " outlived the gateway";
  }
}

}  // namespace
}  // namespace sy
