// The operator dashboard rendered by headless Chromium against real gateways: one running
// two CPU workers on the fixture model (the live fleet, with a screenshot), and one
// running simulated workers that report the NVML test double's GPUs (history charts,
// the GPU panel, with a screenshot). Without chromium these tests fail: scripts/setup.sh
// installs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "chromium.h"
#include "dashboard_dom.h"
#include "fake_admin_server.h"
#include "gateway/dashboard.h"
#include "gateway_process.h"
#include "worker/worker_process.h"  // http_request, post_json

namespace sy::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// ---- against the real gateway ----------------------------------------------------------

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sy-dashboard-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string fleet_yaml() {
  return "model: " SY_FIXTURES_DIR
         "/qwen3-tiny-bf16.gguf\n"
         "listen: 127.0.0.1:0\n"
         "admin_listen: 127.0.0.1:0\n"
         "devices: [cpu]\n"
         "modes:\n"
         "  throughput: {replicas: 2, devices_per_replica: 1}\n"
         "  latency: {replicas: 1, devices_per_replica: 1}\n"
         "default_mode: throughput\n"
         "worker:\n"
         "  binary: " SY_BIN_DIR
         "/switchyard-worker\n"
         "  max_num_seqs: 4\n"
         "  kv_memory_gb: 0.1\n"
         "  cpu_threads: 1\n"
         "startup:\n"
         "  stagger_s: 0.5\n"
         "  ready_timeout_s: 120\n";
}

TEST(DashboardGateway, ShowsTheLiveFleetOfARealGateway) {
  REQUIRE_CHROMIUM();
  const std::string binary = SY_BIN_DIR "/switchyard-gateway";
  ASSERT_EQ(::access(binary.c_str(), X_OK), 0)
      << binary << " is missing: build the switchyard-gateway target";
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string config = (dir.path / "replicas.yaml").string();
  std::ofstream(config) << fleet_yaml();

  GatewayProcess gw(binary, {"--config", config}, (dir.path / "gateway.log").string());
  ASSERT_NE(gw.port(), 0) << "the gateway printed no address; its log:\n" << gw.log();

  // Both replicas ready (staggered start), as /admin/status reports them.
  json status;
  bool ready = false;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
       !ready && std::chrono::steady_clock::now() < deadline;) {
    const HttpResult r = http_request(gw.admin_port(), "GET", "/admin/status");
    if (r.status == 200) {
      status = r.json();
      int n_ready = 0;
      for (const auto& rep : status.value("replicas", json::array())) {
        gw.remember_worker(rep.value("pid", 0));
        n_ready += rep.value("state", "") == "ready";
      }
      ready = status["replicas"].size() == 2 && n_ready == 2;
    }
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_TRUE(ready) << "replicas not ready; last status: " << status.dump() << "\ngateway log:\n"
                     << gw.log();

  // A few completions so that the counters, latencies and tok/s move.
  constexpr int kRequests = 6;
  for (int i = 0; i < kRequests; ++i) {
    const HttpResult r =
        post_json(gw.port(), "/v1/completions",
                  {{"prompt", "The dashboard test asks question number " + std::to_string(i)},
                   {"max_tokens", 12},
                   {"temperature", 0}});
    EXPECT_EQ(r.status, 200) << r.body;
  }
  status = http_request(gw.admin_port(), "GET", "/admin/status").json();
  EXPECT_GT(status["counters"].value("output_tokens", 0), 0) << status.dump();

  // Traffic while the page loads, so that it has tokens per second to show.
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0}, refused{0};
  std::thread load([&] {
    while (!stop) {
      const HttpResult r = post_json(
          gw.port(), "/v1/completions",
          {{"prompt", "Background request " + std::to_string(sent.load())}, {"max_tokens", 24}});
      ++sent;
      refused += r.status != 200;
    }
  });
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.admin_port()) + "/dashboard";
  const std::string dom = dump_dom(url);
  check_screenshot(url, SY_TEST_OUTPUT_DIR "/dashboard.png");
  stop = true;
  load.join();
  EXPECT_EQ(refused, 0) << "of " << sent << " background requests";

  EXPECT_EQ(start_tag(dom, "data-conn=\"live\"").rfind("<body", 0), 0u)
      << "the page did not reach /admin/status";
  EXPECT_TRUE(is_hidden(start_tag(dom, "id=\"banner\""))) << text_of(dom, "banner");
  EXPECT_EQ(text_of(dom, "mode"), "throughput");
  for (const char* id : {"r0", "r1"}) {
    const std::string row = start_tag(dom, std::string("data-replica=\"") + id + "\"");
    EXPECT_NE(row.find("data-state=\"ready\""), std::string::npos) << id << ": " << row;
  }
  for (const char* cls : {"interactive", "standard", "batch"})
    EXPECT_TRUE(is_number(text_of(dom, std::string("queue-") + cls))) << cls;
  EXPECT_TRUE(is_number(text_of(dom, "tok-per-s"))) << text_of(dom, "tok-per-s");
  EXPECT_TRUE(is_duration(text_of(dom, "ttft-p50"))) << text_of(dom, "ttft-p50");
  EXPECT_TRUE(is_duration(text_of(dom, "itl-p50"))) << text_of(dom, "itl-p50");
  EXPECT_TRUE(is_number(counter_text(dom, "completed")));
  EXPECT_GE(std::stoi(counter_text(dom, "completed")), kRequests);
  EXPECT_EQ(counter_text(dom, "failed"), "0");

  // The check below sees running workers, so an empty answer after SIGTERM means something.
  EXPECT_EQ(gw.live_workers().size(), 2u);
  EXPECT_EQ(gw.terminate(), 0) << gw.log();
  EXPECT_EQ(gw.workers_left(), std::vector<pid_t>{})
      << "switchyard-worker processes outlived the gateway";
}

// A fleet of two simulated workers reporting the NVML test double's GPUs: after a mode
// switch and some traffic, the page shows each GPU once and the history charts draw,
// with the switch marked; the screenshot is the test's output.
TEST(DashboardGateway, DrawsTheHistoryOfASimulatedGpuFleet) {
  REQUIRE_CHROMIUM();
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string config = (dir.path / "replicas.yaml").string();
  std::ofstream(config) << "model: " SY_FIXTURES_DIR "/qwen3-tiny-bf16.gguf\n"
                        << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                        << "modes:\n  throughput: {replicas: 2}\n  latency: {replicas: 1}\n"
                        << "worker:\n  binary: " SY_BIN_DIR "/switchyard-simworker\n  kv_blocks: 512\n  max_num_seqs: 8\n"
                        << "  extra_args: [--itl-ms, '5', --gpu-bus-ids, '00000000:3B:00.0,00000000:86:00.0', --nvml, '" SY_FAKE_NVML "']\n"
                        << "startup: {stagger_s: 0, ready_timeout_s: 30}\n";
  GatewayProcess gw(SY_BIN_DIR "/switchyard-gateway", {"--config", config}, (dir.path / "gateway.log").string());
  ASSERT_NE(gw.port(), 0) << gw.log();
  auto wait_for = [&](const std::function<bool(const json&)>& done) {
    json s;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30); std::chrono::steady_clock::now() < deadline;) {
      const HttpResult r = http_request(gw.admin_port(), "GET", "/admin/status");
      if (r.status == 200) {
        s = r.json();
        for (const auto& rep : s["replicas"]) gw.remember_worker(rep.value("pid", 0));
        if (done(s)) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "last status: " << s.dump() << "\n" << gw.log();
    return false;
  };
  auto ready = [](const std::string& mode, size_t n) {
    return [mode, n](const json& s) {
      size_t up = 0;
      for (const auto& r : s["replicas"]) up += r["state"] == "ready";
      return s["mode"] == mode && !s["switching"].get<bool>() && up == n && s["replicas"].size() == n;
    };
  };
  ASSERT_TRUE(wait_for(ready("throughput", 2)));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(post_json(gw.port(), "/v1/completions", {{"prompt", "before " + std::to_string(i)}, {"max_tokens", 16}}).status, 200);
  EXPECT_EQ(http_request(gw.admin_port(), "POST", "/admin/mode", R"({"mode":"latency"})").status, 202);
  ASSERT_TRUE(wait_for(ready("latency", 1)));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(post_json(gw.port(), "/v1/completions", {{"prompt", "after " + std::to_string(i)}, {"max_tokens", 16}}).status, 200);
  ASSERT_TRUE(wait_for([](const json& s) { return s["gpus"].size() == 2; }));  // the next metrics poll
  // ... and the history has GPU 0's power for its last three points (a line to draw).
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    const json h = http_request(gw.admin_port(), "GET", "/admin/history").json();
    const json& w = h["gpu_power"]["GPU-0b5e7c1a-1111-2222-3333-444455556666"];
    if (w.is_array() && w.size() >= 3 && w[w.size() - 1].is_number() && w[w.size() - 2].is_number() && w[w.size() - 3].is_number()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no power history for GPU 0: " << h.dump();
  }
  // ... and two points in a row with prompts in them, for a hit-rate line: a point is a
  // second, and four quick requests may all fall in one (CI failed on that once).
  for (int i = 0;; ++i) {
    const json hit = http_request(gw.admin_port(), "GET", "/admin/history").json()["prefix_hit_rate"];
    bool line = false;
    for (size_t k = 1; k < hit.size(); ++k) line = line || (hit[k].is_number() && hit[k - 1].is_number());
    if (line) break;
    ASSERT_LT(i, 100) << "no two hit-rate points in a row: " << hit.dump();
    EXPECT_EQ(post_json(gw.port(), "/v1/completions", {{"prompt", "more " + std::to_string(i)}, {"max_tokens", 16}}).status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }

  const std::string url = "http://127.0.0.1:" + std::to_string(gw.admin_port()) + "/dashboard";
  const std::string dom = dump_dom(url);
  check_screenshot(url, SY_TEST_OUTPUT_DIR "/dashboard-history.png", 1280, 1400);
  EXPECT_EQ(count_of(dom, "<tr data-gpu="), 2) << "each GPU once, though both workers reported both";
  const std::string gpu0 = "data-gpu=\"GPU-0b5e7c1a-1111-2222-3333-444455556666\"";
  EXPECT_EQ(cell_text(dom, gpu0, "power"), "123 W / 700 W");
  EXPECT_EQ(cell_text(dom, gpu0, "temperature"), "41 °C");
  expect_charts_drawn(dom, 2);
  for (const char* kind : {"mode", "start", "ready"})
    EXPECT_NE(chart_of(dom, "tok-s").find(std::string("data-event=\"") + kind + "\""), std::string::npos) << "no " << kind << " mark";
  bool gpu_power = false;
  for (const Polyline& l : polylines(chart_of(dom, "power"))) gpu_power = gpu_power || l.series == "GPU-0b5e7c1a";
  EXPECT_TRUE(gpu_power) << "GPU 0's power has no line";
  EXPECT_EQ(gw.terminate(), 0) << gw.log();
  EXPECT_EQ(gw.workers_left(), std::vector<pid_t>{});
}

}  // namespace
}  // namespace sy::testing
