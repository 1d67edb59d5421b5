// The operator dashboard (gateway/dashboard.html, served at /dashboard) rendered by
// headless Chromium against canned status answers: a known fleet, its GPUs, history
// charts, none, forty replicas, a failing or refusing status endpoint. Without chromium
// these tests fail: scripts/setup.sh installs it. dashboard_gateway_test.cpp renders it
// against real gateways.
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

// ---- canned status answers -------------------------------------------------------------

json fake_replica(int i, const std::string& state, double t0) {
  return {{"id", "r" + std::to_string(i)},
          {"state", state},
          {"pid", 4000 + i},
          {"url", "http://127.0.0.1:" + std::to_string(39000 + i)},
          {"boot_id", "b" + std::to_string(i)},
          {"devices", {"cpu"}},
          {"tp", i == 0 ? 2 : 1},
          {"pcp", 1},
          {"started_at", t0 + 3 * i},
          {"ready_at", state == "ready" ? t0 + 3 * i + 2.5 : 0.0},
          {"restarts", i % 3},
          {"load",
           {{"in_flight", i % 4},
            {"capacity", 8},
            {"pending_prefill_tokens", 0},
            {"worker_running", i % 4},
            {"worker_waiting", 0}}},
          {"kv", {{"blocks_used", 100 * i}, {"blocks_total", 4096}, {"host_blocks_total", i == 1 ? 8192 : 0}}},
          {"requests_total", 10 * i},
          {"hit_rate", 0.25},
          {"prefill_s_per_token", 1e-3},
          {"kv_events_connected", state == "ready"}};
}

// Every call is one second later on the server's clock with 50 more output tokens, so
// the page's tok/s is exactly 50.
json fake_status(int polls, const std::vector<std::string>& states) {
  const double t0 = 1.7e9;
  json replicas = json::array();
  for (size_t i = 0; i < states.size(); ++i)
    replicas.push_back(fake_replica(static_cast<int>(i), states[i], t0));
  return {{"mode", "throughput"},
          {"switching", false},
          {"last_switch",
           {{"from", "latency"},
            {"to", "throughput"},
            {"started_at", t0 - 60},
            {"finished_at", t0 - 20},
            {"seconds", 40.0}}},
          {"modes", {"latency", "throughput"}},
          {"model", "qwen3-tiny-bf16"},
          {"router", "prefix"},
          {"replicas", replicas},
          {"queues", {{"interactive", 1}, {"standard", 7}, {"batch", 42}}},
          {"in_flight", 5},
          {"counters",
           {{"requests", 130},
            {"completed", 120},
            {"failed", 2},
            {"cancelled", 3},
            {"rejected_queue_full", 4},
            {"rejected_no_replica", 1},
            {"output_tokens", 1000 + 50 * polls},
            {"prompt_tokens", 40000},
            {"cached_tokens", 23000}}},
          {"latency",
           {{"ttft_p50", 0.0412},
            {"ttft_p90", 0.113},
            {"ttft_p99", 1.27},
            {"itl_p50", 8.9e-6},
            {"itl_p90", 0.0142},
            {"itl_p99", 0.031}}},
          {"prefix_hit_rate", 0.575},
          {"gpus",
           {{{"uuid", "GPU-aaaa"}, {"gpu", "0"}, {"name", "NVIDIA H200"}, {"pci_bus_id", "00000000:3B:00.0"},
             {"replicas", {"r0", "r1"}}, {"power_watts", 412.4}, {"power_limit_watts", 700.0},
             {"memory_used_bytes", 75161927680.0}, {"memory_total_bytes", 150754820096.0},
             {"utilization_ratio", 0.87}, {"temperature_celsius", 63.0}},
            {{"uuid", "GPU-bbbb"}, {"gpu", "1"}, {"name", "NVIDIA H200"}, {"pci_bus_id", "00000000:86:00.0"},
             {"replicas", {"r2"}}, {"power_watts", nullptr}, {"power_limit_watts", 650.0},
             {"memory_used_bytes", nullptr}, {"memory_total_bytes", nullptr},
             {"utilization_ratio", nullptr}, {"temperature_celsius", nullptr}}}},
          {"power", {{"watts", 412.4}}},
          {"startup",
           {{"max_power_w", 1000.0}, {"measuring", true}, {"draw_w", 412.4}, {"spike_w", 650.0},
            {"spikes", json::array()}, {"loading", nullptr}, {"waiting_for_power", true}}},
          {"time", t0 + polls}};
}

// Five minutes of one point a second, with a null stretch in the hit rate, two GPUs'
// power and one event of each kind.
json fake_history() {
  json h = {{"interval_s", 1.0}, {"window_s", 900.0}};
  std::map<std::string, json> cols;
  const char* names[] = {"t", "tok_s", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "queue_interactive",
                         "queue_standard", "queue_batch", "in_flight", "prefix_hit_rate", "power_watts"};
  for (const char* n : names) cols[n] = json::array();
  json a = json::array(), b = json::array();
  for (int i = 0; i < 300; ++i) {
    const double x = i / 20.0;
    cols["t"].push_back(i - 300.0);
    cols["tok_s"].push_back(400 + 150 * std::sin(x));
    cols["ttft_p50"].push_back(0.04 + 0.01 * std::sin(x));
    cols["ttft_p99"].push_back(0.2 + 0.05 * std::cos(x));
    cols["itl_p50"].push_back(0.012);
    cols["itl_p99"].push_back(0.03 + 0.01 * std::sin(2 * x));
    cols["queue_interactive"].push_back(i % 7);
    cols["queue_standard"].push_back(i % 13);
    cols["queue_batch"].push_back(i / 10);
    cols["in_flight"].push_back(8);
    cols["prefix_hit_rate"].push_back(i >= 100 && i < 120 ? json(nullptr) : json(0.5 + 0.3 * std::sin(x)));
    a.push_back(300 + 100 * std::sin(x));
    b.push_back(i < 150 ? json(nullptr) : json(250.0));
    cols["power_watts"].push_back(300 + 100 * std::sin(x) + (i < 150 ? 0 : 250));
  }
  for (auto& [n, c] : cols) h[n] = c;
  h["gpu_power"] = {{"GPU-aaaa", a}, {"GPU-bbbb", b}};
  h["events"] = {{{"t", -290.0}, {"kind", "start"}, {"text", "r0 starting"}},
                 {{"t", -285.0}, {"kind", "ready"}, {"text", "r0 ready"}},
                 {{"t", -200.0}, {"kind", "mode"}, {"text", "throughput → latency: draining"}},
                 {{"t", -100.0}, {"kind", "restart"}, {"text", "r0 restarting (1)"}}};
  return h;
}

// Serves the embedded page and, for the admin routes, `status` (or `failing_status`).
class FakeGateway {
 public:
  explicit FakeGateway(std::vector<std::string> states, int failing_status = 0)
      : states_(std::move(states)),
        failing_status_(failing_status),
        server_([this](const std::string& target) { return answer(target); }) {}
  std::string dashboard_url() const { return server_.url("/dashboard"); }
  int status_polls() const { return polls_; }
  int history_polls() const { return history_polls_; }

 private:
  FakeReply answer(const std::string& target) {
    if (target == "/dashboard")
      return {200, "text/html; charset=utf-8", std::string(sy::gateway::kDashboardHtml)};
    if (failing_status_)
      return {failing_status_, "application/json", R"({"error":{"message":"no"}})"};
    if (target == "/admin/status")
      return {200, "application/json", fake_status(polls_++, states_).dump()};
    if (target == "/admin/history") {
      ++history_polls_;
      return {200, "application/json", fake_history().dump()};
    }
    if (target == "/admin/events")
      return {
          200, "text/event-stream",
          "event: status\ndata: " + fake_status(0, states_).dump() + "\n\n" +
              "event: replica\ndata: "
              "{\"type\":\"replica\",\"id\":\"r1\",\"state\":\"ready\",\"pid\":4001,\"restarts\":1}"
              "\n\n"
              "event: mode\ndata: "
              "{\"type\":\"mode\",\"phase\":\"done\",\"to\":\"throughput\",\"seconds\":40.0}\n\n"};
    return {404, "text/plain", "not found"};
  }

  std::vector<std::string> states_;
  int failing_status_;
  std::atomic<int> polls_{0};
  std::atomic<int> history_polls_{0};
  FakeAdminServer server_;
};

// ---- the page itself ------------------------------------------------------------------

TEST(DashboardPage, IsOneSelfContainedPage) {
  const std::string page(sy::gateway::kDashboardHtml);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  // Nothing loads from elsewhere: no external scripts, styles, images or fonts.
  for (const char* banned :
       {"http://", "https://", " src=", "<link", "@import", "url(", "@font-face"})
    EXPECT_EQ(page.find(banned), std::string::npos)
        << "the page refers to an outside resource: " << banned;
}

TEST(DashboardPage, ShowsAFleetFromStatus) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({"ready", "ready", "starting", "restarting", "draining", "stopped"});
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_GE(gw.status_polls(), 2) << "the page should poll /admin/status every second";

  EXPECT_EQ(start_tag(dom, "data-conn=\"live\"").rfind("<body", 0), 0u)
      << start_tag(dom, "data-conn");
  EXPECT_TRUE(is_hidden(start_tag(dom, "id=\"banner\""))) << start_tag(dom, "id=\"banner\"");
  EXPECT_EQ(text_of(dom, "mode"), "throughput");
  EXPECT_NE(start_tag(dom, "id=\"mode\"").find("data-mode=\"throughput\""), std::string::npos);
  EXPECT_TRUE(is_hidden(start_tag(dom, "id=\"switching\"")));
  EXPECT_NE(start_tag(dom, "data-mode-button=\"throughput\"").find("aria-pressed=\"true\""),
            std::string::npos);
  EXPECT_NE(start_tag(dom, "data-mode-button=\"latency\"").find("aria-pressed=\"false\""),
            std::string::npos);

  const char* states[] = {"ready", "ready", "starting", "restarting", "draining", "stopped"};
  for (int i = 0; i < 6; ++i) {
    const std::string row = start_tag(dom, "data-replica=\"r" + std::to_string(i) + "\"");
    ASSERT_FALSE(row.empty()) << "no row for r" << i;
    EXPECT_NE(row.find(std::string("data-state=\"") + states[i] + "\""), std::string::npos) << row;
  }
  EXPECT_EQ(text_of(dom, "replica-summary"), "· 2 of 6 ready");
  EXPECT_NE(dom.find("cpu · tp 2<"), std::string::npos) << "r0's shape is not shown";
  EXPECT_NE(dom.find("cpu · tp 1<"), std::string::npos);
  // r1's KV host tier (in use), nobody else's (none, or not yet).
  EXPECT_NE(dom.find(" + host 8,192<"), std::string::npos) << "r1's host tier is not shown";
  EXPECT_EQ(dom.find(" + host 0<"), std::string::npos);

  EXPECT_EQ(text_of(dom, "tok-per-s"), "50.0");
  EXPECT_EQ(text_of(dom, "ttft-p50"), "41 ms");
  EXPECT_EQ(text_of(dom, "ttft-p90"), "113 ms");
  EXPECT_EQ(text_of(dom, "ttft-p99"), "1.27 s");
  EXPECT_EQ(text_of(dom, "itl-p50"), "9 µs");
  EXPECT_EQ(text_of(dom, "itl-p90"), "14 ms");
  EXPECT_EQ(text_of(dom, "itl-p99"), "31 ms");
  EXPECT_EQ(text_of(dom, "queue-interactive"), "1");
  EXPECT_EQ(text_of(dom, "queue-standard"), "7");
  EXPECT_EQ(text_of(dom, "queue-batch"), "42");
  EXPECT_EQ(text_of(dom, "in-flight"), "5");
  EXPECT_EQ(text_of(dom, "prefix-hit-rate"), "57.5%");
  EXPECT_EQ(counter_text(dom, "completed"), "120");
  EXPECT_EQ(counter_text(dom, "failed"), "2");
  EXPECT_EQ(counter_text(dom, "cancelled"), "3");
  EXPECT_EQ(counter_text(dom, "rejected_queue_full"), "4");
  EXPECT_EQ(counter_text(dom, "rejected_no_replica"), "1");
  EXPECT_EQ(text_of(dom, "restarts-total"), "6");  // 0+1+2+0+1+2
  EXPECT_EQ(text_of(dom, "router"), "prefix");
  EXPECT_NE(text_of(dom, "last-switch").find("latency → throughput"), std::string::npos)
      << text_of(dom, "last-switch");
  EXPECT_NE(text_of(dom, "last-switch").find("took 40.0 s"), std::string::npos)
      << text_of(dom, "last-switch");
  // The event stream's frames reached the log.
  EXPECT_NE(dom.find("following /admin/events"), std::string::npos);
  EXPECT_NE(dom.find("r1 → ready (pid 4001), 1 restart"), std::string::npos);
  EXPECT_NE(dom.find("now throughput, switch took 40.0 s"), std::string::npos);
}

TEST(DashboardPage, ShowsEachGpuOnce) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({"ready", "ready", "ready"});
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_EQ(count_of(dom, "<tr data-gpu="), 2);
  const std::string a = "data-gpu=\"GPU-aaaa\"", b = "data-gpu=\"GPU-bbbb\"";
  EXPECT_EQ(cell_text(dom, a, "gpu"), "NVIDIA H200 · 0");
  EXPECT_EQ(cell_text(dom, a, "power"), "412 W / 700 W");
  EXPECT_EQ(cell_text(dom, a, "memory"), "70.0 / 140.4 GiB");
  EXPECT_EQ(cell_text(dom, a, "utilization"), "87%");
  EXPECT_EQ(cell_text(dom, a, "temperature"), "63 °C");
  EXPECT_EQ(cell_text(dom, a, "replicas"), "r0, r1");
  EXPECT_EQ(cell_text(dom, b, "power"), "— / 650 W") << "no power sensor";
  EXPECT_EQ(cell_text(dom, b, "utilization"), "—");
  EXPECT_EQ(cell_text(dom, b, "temperature"), "—");
  EXPECT_EQ(text_of(dom, "gpu-summary"), "· 2 GPUs, drawing 412 W");
  EXPECT_EQ(dom.find("id=\"no-gpus\""), std::string::npos) << "the empty row is gone";
  EXPECT_FALSE(is_hidden(start_tag(dom, "id=\"power-stagger\"")));
  EXPECT_EQ(text_of(dom, "power-stagger"),
            "Power-aware stagger: at most 1000 W, drawing 412 W; largest measured load spike 650 W; the next worker waits for power.");
}

TEST(DashboardPage, DrawsHistoryCharts) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({"ready", "ready"});
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_GE(gw.history_polls(), 1) << "the page should fetch /admin/history";
  expect_charts_drawn(dom, 150);  // the hit rate: 100 and 180 points either side of its gap
  // The hit rate's null stretch breaks its line in two; power: the fleet and each GPU.
  EXPECT_EQ(polylines(chart_of(dom, "hit-rate")).size(), 2u);
  std::set<std::string> power;
  for (const Polyline& l : polylines(chart_of(dom, "power"))) power.insert(l.series);
  EXPECT_EQ(power, (std::set<std::string>{"fleet", "GPU-aaaa", "GPU-bbbb"}));
  // tok/s swings between 250 and 550 on a 0-based scale: its line moves.
  double low = 100, high = 0;
  for (const auto& [x, y] : polylines(chart_of(dom, "tok-s"))[0].points) low = std::min(low, y), high = std::max(high, y);
  EXPECT_GT(high - low, 30) << "the tok/s line is flat";
  // Each event is marked on every chart, at its time (x = 600 · (1 + t / 300)).
  for (const char* id : {"tok-s", "queues", "power"}) {
    const std::string chart = chart_of(dom, id);
    for (const char* kind : {"mode", "restart", "start", "ready"})
      EXPECT_NE(chart.find(std::string("data-event=\"") + kind + "\""), std::string::npos) << id << " has no " << kind << " mark";
    EXPECT_NE(chart.find("x1=\"200.0\""), std::string::npos) << id << ": the mode switch 200 s ago sits at a third";
  }
  EXPECT_EQ(text_of(dom, "history-span"), "· last 5 min");
  check_screenshot(gw.dashboard_url(), SY_TEST_OUTPUT_DIR "/dashboard-history-canned.png", 1280, 1400);
}

TEST(DashboardPage, ShowsAnEmptyFleet) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({});
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_EQ(dom.find("data-replica="), std::string::npos);
  EXPECT_NE(dom.find("No replicas: the fleet is stopped or has not started yet."),
            std::string::npos);
  EXPECT_EQ(text_of(dom, "mode"), "throughput");
  EXPECT_TRUE(is_hidden(start_tag(dom, "id=\"banner\"")));
}

TEST(DashboardPage, ShowsFortyReplicas) {
  REQUIRE_CHROMIUM();
  std::vector<std::string> states(40, "ready");
  states[7] = "restarting";
  FakeGateway gw(states);
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_EQ(count_of(dom, "<tr data-replica="), 40);
  for (int i = 0; i < 40; ++i)
    EXPECT_FALSE(start_tag(dom, "data-replica=\"r" + std::to_string(i) + "\"").empty()) << "r" << i;
  EXPECT_NE(start_tag(dom, "data-replica=\"r7\"").find("data-state=\"restarting\""),
            std::string::npos);
  EXPECT_EQ(text_of(dom, "replica-summary"), "· 39 of 40 ready");
  check_screenshot(gw.dashboard_url(), SY_TEST_OUTPUT_DIR "/dashboard-40-replicas.png");
}

TEST(DashboardPage, ShowsADisconnectedBannerWhenStatusFails) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({"ready"}, 503);
  const std::string dom = dump_dom(gw.dashboard_url());
  const std::string banner = start_tag(dom, "id=\"banner\"");
  EXPECT_FALSE(is_hidden(banner)) << banner;
  EXPECT_NE(text_of(dom, "banner").find("Disconnected from the gateway (HTTP 503)"),
            std::string::npos)
      << text_of(dom, "banner");
  EXPECT_EQ(start_tag(dom, "data-conn=\"down\"").rfind("<body", 0), 0u);
  EXPECT_EQ(text_of(dom, "conn"), "disconnected");
  EXPECT_EQ(text_of(dom, "mode"), "—");
}

TEST(DashboardPage, AsksForTheAdminKeyWhenRefused) {
  REQUIRE_CHROMIUM();
  FakeGateway gw({"ready"}, 401);
  const std::string dom = dump_dom(gw.dashboard_url());
  EXPECT_FALSE(is_hidden(start_tag(dom, "id=\"banner\"")));
  EXPECT_NE(text_of(dom, "banner").find("admin key"), std::string::npos) << text_of(dom, "banner");
  EXPECT_EQ(text_of(dom, "conn"), "unauthorized");
}

}  // namespace
}  // namespace sy::testing
