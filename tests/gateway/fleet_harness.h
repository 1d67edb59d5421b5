// A real switchyard-gateway over a fleet of simulated workers (switchyard-simworker, or
// sy_proxied_worker: a simworker behind its own switchyard-faultproxy), for the
// resilience tests: the config, readiness, /admin/status, and streamed requests sent
// many at once, each with a deadline.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "fixture_util.h"
#include "gateway/gateway_process.h"
#include "gateway/stream_client.h"
#include "worker/fixture_edit.h"

namespace sy::testing {

struct FleetSpec {
  int replicas = 2;
  std::string worker_binary = std::string(SY_BIN_DIR) + "/switchyard-simworker";
  std::vector<std::string> worker_args = {"--ttft-ms", "5", "--itl-ms", "15"};
  int max_num_seqs = 8;
  int kv_blocks = 512;  // of 16 tokens
  std::string resilience =
      "{hedge_max_priority: batch, hedge_delay_min_s: 0.25, hedge_delay_max_s: 0.3,\n"
      "  stall_min_s: 0.4, stall_max_s: 0.6, first_token_timeout_s: 1.5}";
  std::string more_yaml;  // appended as is
};

inline void write_fleet_config(const std::string& path, const FleetSpec& s) {
  std::ofstream f(path);
  f << "model: " << fixture_path("qwen3-tiny-bf16.gguf") << "\n"
    << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
    << "modes:\n  throughput: {replicas: " << s.replicas << "}\n"
    << "worker:\n  binary: " << s.worker_binary << "\n"
    << "  kv_blocks: " << s.kv_blocks << "\n  max_num_seqs: " << s.max_num_seqs << "\n  extra_args: [";
  for (size_t i = 0; i < s.worker_args.size(); ++i) f << (i ? ", " : "") << "'" << s.worker_args[i] << "'";
  f << "]\n"
    << "startup: {stagger_s: 0, ready_timeout_s: 30, restart_backoff_initial_s: 0.2}\n"
    << "resilience: " << s.resilience << "\n"
    << s.more_yaml;
}

class FleetTest : public ::testing::Test {
 protected:
  using Clock = std::chrono::steady_clock;

  // Starts the gateway and waits until every replica is ready with its KV events.
  void start(const FleetSpec& spec) {
    replicas_ = spec.replicas;
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    config_ = temp_path(name + ".yaml");
    write_fleet_config(config_, spec);
    gw_ = std::make_unique<GatewayProcess>(std::string(SY_BIN_DIR) + "/switchyard-gateway", std::vector<std::string>{"--config", config_},
                                           temp_path(name + ".log"));
    ASSERT_NE(gw_->port(), 0) << gw_->log();
    ASSERT_TRUE(wait_ready()) << gw_->log();
  }
  ~FleetTest() override {
    for (pid_t p : stopped_) ::kill(p, SIGCONT);
    if (gw_) gw_->terminate();
    if (!config_.empty()) std::filesystem::remove(config_);
  }

  nlohmann::json status() {
    const auto r = http_request(gw_->admin_port(), "GET", "/admin/status");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  bool wait_ready(std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      const auto s = status();
      int ready = 0;
      if (s.is_object())
        for (const auto& r : s["replicas"]) {
          gw_->remember_worker(r["pid"].get<pid_t>());
          ready += r["state"] == "ready" && r["kv_events_connected"].get<bool>();
        }
      if (ready == replicas_) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // The pid of the replica serving a request now, waiting for one (at most 5 s).
  pid_t busy_replica_pid() {
    for (int i = 0; i < 500; ++i) {
      const auto s = status();  // a named copy: the loop must not iterate a temporary's member
      for (const auto& r : s["replicas"])
        if (r["load"]["in_flight"].get<int>() > 0) return r["pid"].get<pid_t>();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  int64_t counter(const char* name) { return status()["counters"][name].get<int64_t>(); }

  // The port of replica `index` (as the supervisor learned it), or 0.
  uint16_t replica_port(int index) {
    const auto s = status();
    const std::string url = s.is_object() ? s["replicas"][index].value("url", std::string()) : std::string();
    const size_t colon = url.rfind(':');
    return colon == std::string::npos ? 0 : static_cast<uint16_t>(std::atoi(url.c_str() + colon + 1));
  }
  // One series of a worker's /metrics, as written there (name and labels), or -1.
  static double worker_metric(uint16_t port, const std::string& series) {
    const auto r = http_request(port, "GET", "/metrics");
    const size_t at = r.status == 200 ? r.body.find("\n" + series + " ") : std::string::npos;
    return at == std::string::npos ? -1 : std::atof(r.body.c_str() + at + series.size() + 2);
  }
  // Checks `done` every 10 ms for at most `limit`: the seconds until it held, or -1.
  static double seconds_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    const auto t0 = Clock::now();
    for (;;) {
      if (done()) return std::chrono::duration<double>(Clock::now() - t0).count();
      if (Clock::now() - t0 > limit) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  Streamed complete(const nlohmann::json& body, std::chrono::seconds deadline = std::chrono::seconds(20)) {
    return parse_stream(timed_request(gw_->port(), "POST", "/v1/completions", body.dump(), Clock::now() + deadline));
  }
  // Every body, `concurrency` at a time; each request has `deadline` from its start.
  std::vector<Streamed> complete_all(const std::vector<nlohmann::json>& bodies, int concurrency,
                                     std::chrono::seconds deadline = std::chrono::seconds(20)) {
    std::vector<Streamed> out(bodies.size());
    std::atomic<size_t> next{0};
    std::vector<std::thread> users;
    for (int u = 0; u < concurrency; ++u)
      users.emplace_back([&] {
        for (size_t i; (i = next++) < bodies.size();) out[i] = complete(bodies[i], deadline);
      });
    for (auto& t : users) t.join();
    return out;
  }
  void stop(pid_t p) {
    ::kill(p, SIGSTOP);
    stopped_.push_back(p);
  }

  int replicas_ = 0;
  std::string config_;
  std::unique_ptr<GatewayProcess> gw_;
  std::vector<pid_t> stopped_;
};

}  // namespace sy::testing
