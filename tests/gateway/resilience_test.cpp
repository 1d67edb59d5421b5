// Faults hidden from clients, against a real gateway over simulated workers (whose
// tokens are a pure function of seed and index, as a real worker's greedy and seeded
// outputs are): a worker stopped (SIGSTOP) or killed (SIGKILL) mid-stream, a worker
// silent before its first token (hedged), and every worker silent (the budget bounds
// the extra attempts). Each streamed text must equal the undisturbed run's exactly.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <future>
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

std::string write_config(const std::string& path, int replicas) {
  std::ofstream(path) << "model: " << testing::fixture_path("qwen3-tiny-bf16.gguf") << "\n"
                      << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                      << "modes:\n  throughput: {replicas: " << replicas << "}\n"
                      << "worker:\n  binary: " << SY_BIN_DIR << "/switchyard-simworker\n"
                      << "  kv_blocks: 512\n  max_num_seqs: 8\n"
                      << "  extra_args: [--ttft-ms, '5', --itl-ms, '15']\n"
                      << "startup: {stagger_s: 0, ready_timeout_s: 30, restart_backoff_initial_s: 0.2}\n"
                      << "resilience: {hedge_max_priority: batch, hedge_delay_min_s: 0.25, hedge_delay_max_s: 0.3,\n"
                      << "             stall_min_s: 0.4, stall_max_s: 0.6, first_token_timeout_s: 1.5}\n";
  return path;
}

// The text of a streamed completion, and whether it ended cleanly with [DONE].
struct Streamed {
  int status = 0;
  std::string text;
  bool done = false;
  bool error = false;
  std::string replica;
};

Streamed parse_stream(const HttpResult& r) {
  Streamed s;
  s.status = r.status;
  s.replica = r.header("x-switchyard-replica");
  size_t pos = 0;
  while (pos < r.body.size()) {
    size_t end = r.body.find('\n', pos);
    if (end == std::string::npos) end = r.body.size();
    const std::string line = r.body.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("event: error", 0) == 0) s.error = true;
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("error")) s.error = true;
    if (j.contains("choices") && !j["choices"].empty() && j["choices"][0].contains("text"))
      s.text += j["choices"][0]["text"].get<std::string>();
  }
  return s;
}

nlohmann::json request_body(int i, bool seeded, int max_tokens) {
  nlohmann::json b = {{"prompt", "Tell me about harbours, request " + std::to_string(i)},
                      {"max_tokens", max_tokens},
                      {"stream", true},
                      {"temperature", seeded ? 0.8 : 0.0}};
  if (seeded) b["seed"] = 1000 + i;
  return b;
}

class Resilience : public ::testing::Test {
 protected:
  void start(int replicas) {
    replicas_ = replicas;
    config_ = write_config(testing::temp_path("resilience.yaml"), replicas);
    gw_ = std::make_unique<GatewayProcess>(std::string(SY_BIN_DIR) + "/switchyard-gateway", std::vector<std::string>{"--config", config_},
                                           testing::temp_path("resilience.log"));
    ASSERT_NE(gw_->port(), 0) << gw_->log();
    ASSERT_TRUE(wait_ready()) << gw_->log();
  }
  ~Resilience() override {
    for (pid_t p : stopped_) ::kill(p, SIGCONT);
    if (gw_) gw_->terminate();
    if (!config_.empty()) std::filesystem::remove(config_);
  }

  nlohmann::json status() {
    const auto r = http_request(gw_->admin_port(), "GET", "/admin/status");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  bool wait_ready(std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
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
  Streamed complete(const nlohmann::json& body) {
    return parse_stream(http_request(gw_->port(), "POST", "/v1/completions", body.dump()));
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

// A worker that stops or dies mid-stream: the stream continues on the other replica with
// the ids already sent, and the client sees exactly the undisturbed text.
TEST_F(Resilience, MidStreamFaultsKeepTheExactText) {
  start(2);
  for (const int sig : {SIGSTOP, SIGKILL}) {
    for (const bool seeded : {false, true}) {
      SCOPED_TRACE(std::string(sig == SIGSTOP ? "SIGSTOP" : "SIGKILL") + (seeded ? " seeded" : " greedy"));
      const nlohmann::json body = request_body(sig * 10 + seeded, seeded, 80);
      const Streamed reference = complete(body);
      ASSERT_EQ(reference.status, 200);
      ASSERT_TRUE(reference.done && !reference.error);
      ASSERT_FALSE(reference.text.empty());

      auto disturbed = std::async(std::launch::async, [&] { return complete(body); });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // ~20 tokens in
      const pid_t victim = busy_replica_pid();
      ASSERT_GT(victim, 0) << status().dump() << gw_->log();
      if (sig == SIGSTOP) stop(victim);
      else ::kill(victim, SIGKILL);
      ASSERT_EQ(disturbed.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the request hung";
      const Streamed got = disturbed.get();
      EXPECT_EQ(got.status, 200);
      EXPECT_TRUE(got.done) << "no [DONE]";
      EXPECT_FALSE(got.error);
      EXPECT_EQ(got.text, reference.text);
      for (pid_t p : stopped_) ::kill(p, SIGCONT);
      stopped_.clear();
      ASSERT_TRUE(wait_ready()) << gw_->log();  // the killed one restarted
    }
  }
  EXPECT_GE(counter("retries"), 4);
  EXPECT_GE(counter("stalls"), 2);
}

// A replica silent before its first token: requests are hedged on the other one after
// the hedge delay and finish long before the first-token timeout would fail them over.
TEST_F(Resilience, SilentReplicaIsHedged) {
  start(2);
  const auto s = status();
  stop(s["replicas"][0]["pid"].get<pid_t>());
  for (int i = 0; i < 6; ++i) {
    const nlohmann::json body = request_body(100 + i, i % 2 == 1, 12);
    const auto t0 = std::chrono::steady_clock::now();
    const Streamed got = complete(body);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(got.status, 200);
    EXPECT_TRUE(got.done && !got.error);
    EXPECT_EQ(got.replica, s["replicas"][1]["id"].get<std::string>());
    EXPECT_LT(took, 1.4) << "request " << i << " waited for the first-token timeout instead of a hedge";
  }
  EXPECT_GE(counter("hedges_won"), 1);
  // The hedged texts equal the ones the healthy replica gives undisturbed.
  for (pid_t p : stopped_) ::kill(p, SIGCONT);
  stopped_.clear();
}

// Every replica silent: the extra attempts (hedges and retries) stay within the budget,
// (1 + ratio) × requests plus the bucket's initial half, and every request ends with an
// error instead of hanging.
TEST_F(Resilience, BudgetBoundsAttemptsWhenEveryReplicaFails) {
  start(2);
  const auto s = status();
  for (const auto& r : s["replicas"]) stop(r["pid"].get<pid_t>());
  constexpr int kRequests = 24;
  std::vector<std::future<Streamed>> results;
  for (int i = 0; i < kRequests; ++i)
    results.push_back(std::async(std::launch::async, [&, i] { return complete(request_body(200 + i, false, 4)); }));
  int failed = 0;
  for (auto& f : results) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "a request hung";
    const Streamed got = f.get();
    failed += got.status != 200 || got.error || !got.done;
  }
  EXPECT_EQ(failed, kRequests);
  const int64_t extra = counter("hedges") + counter("retries");
  EXPECT_LE(static_cast<double>(extra), 0.1 * kRequests + 5.0 + 1e-9) << "extra attempts " << extra;
}

}  // namespace
}  // namespace sy
