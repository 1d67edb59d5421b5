// The gateway with real workers on the fixture model, as operators run it: staggered
// startup, prefix affinity, a worker killed under it, mode switches under steady greedy
// load (two replicas of one rank to one replica of two tensor-parallel CPU ranks and
// back, every stream equal to its undisturbed run),
// bad requests, keys, and teardown that leaves no worker behind; workers inherit none of
// the gateway's sockets.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "fixture_util.h"
#include "worker/fixture_edit.h"
#include "gateway/gateway_process.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

using testing::GatewayProcess;
using testing::http_request;
using testing::HttpResult;

struct FleetOptions {
  std::string latency = "{replicas: 1, tp: 2}";  // the latency mode's shape
  double stagger_s = 0.5;
  std::string extra;  // more YAML at the top level
};

std::string write_config(const std::string& name, const FleetOptions& o) {
  const std::string path = testing::temp_path(name + ".yaml");
  std::ofstream(path) << "model: " << testing::fixture_path("qwen3-tiny-bf16.gguf") << "\n"
                      << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                      << "modes:\n  throughput: {replicas: 2}\n  latency: " << o.latency << "\n"
                      << "worker: {binary: " << SY_BIN_DIR << "/switchyard-worker, kv_memory_gb: 0.1, max_num_seqs: 8}\n"
                      << "startup: {stagger_s: " << o.stagger_s << ", ready_timeout_s: 60, restart_backoff_initial_s: 0.3}\n"
                      << o.extra;
  return path;
}

class Gateway {
 public:
  explicit Gateway(const std::string& name, const FleetOptions& o = {})
      : config_(write_config(name, o)),
        proc_(std::string(SY_BIN_DIR) + "/switchyard-gateway", {"--config", config_}, testing::temp_path(name + ".log")) {}
  ~Gateway() {
    proc_.terminate();
    std::filesystem::remove(config_);
  }

  nlohmann::json status(const std::string& key = {}) {
    const auto r = http_request(proc_.admin_port(), "GET", "/admin/status", {}, key.empty() ? "" : "Authorization: Bearer " + key + "\r\n");
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  // Waits until `n` replicas are ready (and remembers their pids); false on timeout.
  bool wait_ready(size_t n, std::chrono::seconds limit = std::chrono::seconds(120), const std::string& mode = {}) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto s = status();
      if (s.is_object() && (mode.empty() || (s["mode"] == mode && !s["switching"].get<bool>()))) {
        size_t ready = 0;
        for (const auto& r : s["replicas"]) {
          proc_.remember_worker(r["pid"].get<pid_t>());
          ready += r["state"] == "ready" && r["kv_events_connected"].get<bool>();
        }
        if (ready == n && s["replicas"].size() == n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  HttpResult complete(const nlohmann::json& body, const std::string& headers = {}) {
    return http_request(proc_.port(), "POST", "/v1/completions", body.dump(), headers);
  }
  GatewayProcess& proc() { return proc_; }

 private:
  std::string config_;
  GatewayProcess proc_;
};

nlohmann::json ids_prompt(const std::vector<int32_t>& ids, int max_tokens) {
  return {{"prompt", ids}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// The sockets a process holds open, as /proc names them ("socket:[inode]").
std::set<std::string> open_sockets(pid_t pid) {
  std::set<std::string> out;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) out.insert(target.string());
  }
  return out;
}

// No worker holds one of the gateway's sockets (its listeners would stay bound).
void expect_no_inherited_sockets(GatewayProcess& proc, const nlohmann::json& status) {
  const auto gateway = open_sockets(proc.pid());
  ASSERT_FALSE(gateway.empty());
  for (const auto& r : status["replicas"])
    for (const auto& s : open_sockets(r["pid"].get<pid_t>()))
      EXPECT_EQ(gateway.count(s), 0u) << "worker " << r["id"] << " holds the gateway's " << s;
}

std::vector<int32_t> prefix_ids(size_t n, int32_t base) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<int32_t>(i * 7 % 5000);
  return v;
}

TEST(GatewayIntegration, StaggeredStartThenPrefixAffinity) {
  Gateway gw("stagger", {.stagger_s = 1.0});
  ASSERT_TRUE(gw.wait_ready(2)) << gw.proc().log();
  const auto s = gw.status();
  const auto& r0 = s["replicas"][0];
  const auto& r1 = s["replicas"][1];
  // r1 was spawned only after r0 was ready plus the stagger.
  EXPECT_GE(r1["started_at"].get<double>(), r0["ready_at"].get<double>() + 1.0 - 0.05)
      << "r0 ready at " << r0["ready_at"] << ", r1 started at " << r1["started_at"];
  EXPECT_GT(r0["ready_at"].get<double>(), r0["started_at"].get<double>());

  // Requests sharing a 600-token prefix land on one replica while load is light.
  const auto shared = prefix_ids(600, 1000);
  std::set<std::string> replicas;
  int cached_hits = 0;
  for (int i = 0; i < 6; ++i) {
    auto ids = shared;
    ids.push_back(50 + i);
    const HttpResult r = gw.complete(ids_prompt(ids, 4));
    ASSERT_EQ(r.status, 200) << r.body;
    replicas.insert(r.header("x-switchyard-replica"));
    cached_hits += r.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >= 512;
  }
  EXPECT_EQ(replicas.size(), 1u) << "requests with one prefix went to several replicas";
  EXPECT_EQ(cached_hits, 5);
  // A different prefix is free to go elsewhere, and responses name their replica.
  const HttpResult other = gw.complete(ids_prompt(prefix_ids(600, 90000), 4));
  EXPECT_EQ(other.status, 200);
  EXPECT_FALSE(other.header("x-switchyard-replica").empty());
}

TEST(GatewayIntegration, KilledWorkerIsRestartedAndRequestsStillSucceed) {
  Gateway gw("restart");
  ASSERT_TRUE(gw.wait_ready(2)) << gw.proc().log();
  const pid_t victim = gw.status()["replicas"][0]["pid"].get<pid_t>();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  for (int i = 0; i < 10; ++i) {
    const HttpResult r = gw.complete({{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 4}});
    EXPECT_EQ(r.status, 200) << r.body;
  }
  ASSERT_TRUE(gw.wait_ready(2)) << gw.proc().log();
  const auto s = gw.status();
  EXPECT_EQ(s["replicas"][0]["restarts"].get<int>(), 1);
  EXPECT_NE(s["replicas"][0]["pid"].get<pid_t>(), victim);
  expect_no_inherited_sockets(gw.proc(), s);
  EXPECT_EQ(gw.complete({{"prompt", "after"}, {"max_tokens", 2}}).status, 200);
}

// The text of a completion, streamed (the deltas joined) or not; empty when it failed
// or a stream ended without [DONE] or with an error event.
std::string completion_text(const HttpResult& r, bool stream) {
  if (r.status != 200) return {};
  if (!stream) {
    const auto j = r.json();
    return j.contains("choices") ? j["choices"][0].value("text", std::string()) : std::string();
  }
  if (r.body.find("event: error") != std::string::npos || r.body.find("data: [DONE]") == std::string::npos) return {};
  std::string text;
  for (size_t at = r.body.find("data: {"); at != std::string::npos; at = r.body.find("data: {", at + 1)) {
    const auto j = nlohmann::json::parse(r.body.substr(at + 6, r.body.find('\n', at) - at - 6), nullptr, false);
    if (j.is_object() && j.contains("choices") && !j["choices"].empty()) text += j["choices"][0].value("text", std::string());
  }
  return text;
}

// Throughput (two replicas of one rank) → latency (one replica of `tp` × `pcp` CPU ranks)
// → throughput under steady greedy load: no request fails, and every stream equals the
// same prompt's undisturbed run (before any switch), whichever shape served it.
void switch_under_steady_greedy_load(const std::string& name, int tp, int pcp) {
  FleetOptions options;
  options.latency = "{replicas: 1, tp: " + std::to_string(tp) + ", pcp: " + std::to_string(pcp) + "}";
  Gateway gw(name, options);
  ASSERT_TRUE(gw.wait_ready(2)) << gw.proc().log();
  constexpr int kPrompts = 5;
  auto body = [](int p, bool stream) {
    return nlohmann::json{{"prompt", "steady prompt number " + std::to_string(p) + " says"}, {"max_tokens", 8}, {"ignore_eos", true},
                          {"temperature", 0}, {"stream", stream}};
  };
  std::vector<std::string> undisturbed(kPrompts);
  for (int p = 0; p < kPrompts; ++p) {
    undisturbed[p] = completion_text(gw.complete(body(p, false)), false);
    ASSERT_FALSE(undisturbed[p].empty()) << "prompt " << p;
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, differed{0};
  std::vector<std::string> failures;
  std::mutex mu;
  auto load = [&](int who) {
    for (int i = 0; !stop; ++i) {
      const int p = (who * 2 + i) % kPrompts;
      const bool stream = (i + who) % 2 == 0;
      const HttpResult r = gw.complete(body(p, stream));
      const std::string text = completion_text(r, stream);
      if (text.empty()) {
        ++failed;
      } else if (text != undisturbed[p]) {
        ++differed;
      } else {
        ++ok;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back("prompt " + std::to_string(p) + (stream ? " streamed: " : ": ") + std::to_string(r.status) + " " +
                         (text.empty() ? r.body.substr(0, 300) : "'" + text + "' not '" + undisturbed[p] + "'"));
    }
  };
  // Completed requests, not seconds, mark the phases: this machine's speed (or a
  // sanitizer build's) must not decide whether the switch ran under load.
  auto wait_ok = [&](int n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (ok.load() < n && failed.load() + differed.load() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  std::vector<std::thread> users;
  for (int u = 0; u < 3; ++u) users.emplace_back(load, u);
  wait_ok(4);  // the load runs before the switch
  const HttpResult sw = http_request(gw.proc().admin_port(), "POST", "/admin/mode", R"({"mode":"latency"})");
  EXPECT_EQ(sw.status, 202) << sw.body;
  EXPECT_EQ(http_request(gw.proc().admin_port(), "POST", "/admin/mode", R"({"mode":"latency"})").status, 409) << "a second switch while one runs";
  const bool to_latency = gw.wait_ready(1, std::chrono::seconds(120), "latency");
  const auto latency = gw.status();
  wait_ok(ok.load() + 4);  // on the new shape
  EXPECT_EQ(http_request(gw.proc().admin_port(), "POST", "/admin/mode", R"({"mode":"throughput"})").status, 202);
  const bool back = gw.wait_ready(2, std::chrono::seconds(120), "throughput");
  wait_ok(ok.load() + 4);  // and on the first shape again
  stop = true;
  for (auto& t : users) t.join();
  ASSERT_TRUE(to_latency && back) << gw.proc().log();
  EXPECT_EQ(failed.load(), 0) << (failures.empty() ? "" : failures[0]);
  EXPECT_EQ(differed.load(), 0) << (failures.empty() ? "" : failures[0]);
  EXPECT_GE(ok.load(), 12);
  ASSERT_EQ(latency["replicas"].size(), 1u);
  EXPECT_EQ(latency["replicas"][0]["tp"], tp) << "the latency mode's replica is one worker of tp × pcp CPU ranks";
  EXPECT_EQ(latency["replicas"][0]["pcp"], pcp);
  const auto s = gw.status();
  EXPECT_EQ(s["mode"], "throughput");
  ASSERT_EQ(s["replicas"].size(), 2u);
  for (const auto& r : s["replicas"]) EXPECT_EQ(r["tp"], 1);
  EXPECT_EQ(s["last_switch"]["from"], "latency");
  EXPECT_GT(s["last_switch"]["seconds"].get<double>(), 0.0);
  EXPECT_EQ(s["counters"]["failed"].get<int>(), 0);
}

TEST(GatewayIntegration, ModeSwitchUnderSteadyLoadKeepsGreedyStreams) { switch_under_steady_greedy_load("modes", 2, 1); }

// The same with a context-parallel latency shape (pcp 2: prefill split over two ranks,
// KV sharded by block; greedy-equal to the unsharded model, docs/CONTEXT_PARALLEL.md).
TEST(GatewayIntegration, ModeSwitchToContextParallelKeepsGreedyStreams) { switch_under_steady_greedy_load("modes-pcp", 1, 2); }

TEST(GatewayIntegration, BadRequestsKeysAndTeardown) {
  Gateway gw("keys", {.extra = "api_keys: [user-key]\nadmin_key: admin-key\n"});
  ASSERT_TRUE(gw.proc().port() > 0) << gw.proc().log();
  const std::string user = "Authorization: Bearer user-key\r\n";
  struct Row {
    std::string body, headers;
    int status;
    std::string needle;
  };
  const std::vector<Row> rows = {
      {R"({"prompt":"hi","max_tokens":2})", "", 401, "invalid_api_key"},
      {R"({"prompt":"hi","max_tokens":2})", "Authorization: Bearer wrong\r\n", 401, "invalid_api_key"},
      {R"({"prompt":"hi",)", user, 400, "invalid_request_error"},
      {R"({"prompt":"hi","max_tokens":2,"model":"nope"})", user, 404, "model_not_found"},
      {R"({"prompt":"hi","max_tokens":999999})", user, 400, "max_tokens"},
      {R"({"prompt":[1,999999999],"max_tokens":2})", user, 400, "prompt"},
      {R"({"prompt":"hi","max_tokens":2,"n":5})", user, 400, "\"n\""},
  };
  for (const Row& r : rows) {
    const HttpResult res = http_request(gw.proc().port(), "POST", "/v1/completions", r.body, r.headers);
    EXPECT_EQ(res.status, r.status) << r.body;
    EXPECT_NE(res.body.find(r.needle), std::string::npos) << r.body << " → " << res.body;
  }
  EXPECT_EQ(http_request(gw.proc().admin_port(), "GET", "/admin/status").status, 401) << "admin routes need the admin key";
  EXPECT_EQ(http_request(gw.proc().admin_port(), "GET", "/admin/status", {}, "Authorization: Bearer user-key\r\n").status, 401);
  EXPECT_EQ(http_request(gw.proc().admin_port(), "POST", "/admin/mode", R"({"mode":"warp"})", "Authorization: Bearer admin-key\r\n").status, 400);
  // Served once the fleet is up.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  HttpResult ok;
  while (std::chrono::steady_clock::now() < deadline && ok.status != 200) {
    ok = http_request(gw.proc().port(), "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2})", user);
    if (ok.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(ok.status, 200) << ok.body;
  const auto status = gw.status("admin-key");  // not a temporary: the loop walks inside it
  for (const auto& r : status["replicas"]) gw.proc().remember_worker(r["pid"].get<pid_t>());
  EXPECT_EQ(gw.proc().terminate(), 0);
  EXPECT_TRUE(gw.proc().workers_left().empty()) << "SIGTERM left workers running";
}

}  // namespace
}  // namespace sy
