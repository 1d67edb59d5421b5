// The agentic workload end to end, briefly: switchyard-agentic's runner against a real
// switchyard-gateway over simulated workers, prefix routing (the session id travels as
// `user` all the same). Checks that every turn was valid and the report's fields are sane;
// no timing is asserted.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "bench/agentic/agentic_report.h"
#include "fixture_util.h"
#include "gateway/gateway_process.h"
#include "worker/fixture_edit.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

constexpr int kReplicas = 3;

std::string write_config(const std::string& path) {
  std::ofstream(path)
      << "model: " << testing::fixture_path("qwen3-tiny-bf16.gguf") << "\n"
      << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
      << "modes:\n  throughput: {replicas: " << kReplicas << "}\n"
      << "worker:\n  binary: " << SY_BIN_DIR << "/switchyard-simworker\n"
      << "  kv_blocks: 1024\n  max_num_seqs: 8\n"
      << "  extra_args: [--ttft-ms, '2', --itl-ms, '1', --prefill-us-per-token, '5']\n"
      << "startup: {stagger_s: 0, ready_timeout_s: 30}\nrouting: {policy: prefix}\n";
  return path;
}

TEST(AgenticFleet, SessionsRunThroughTheGatewayAndTheReportIsSane) {
  const std::string config = write_config(testing::temp_path("agentic.yaml"));
  testing::GatewayProcess gw(std::string(SY_BIN_DIR) + "/switchyard-gateway", {"--config", config},
                             testing::temp_path("agentic.log"));
  bool ready = false;
  std::string last;
  for (int i = 0; i < 600 && !ready; ++i) {
    const auto r = testing::http_request(gw.admin_port(), "GET", "/admin/status");
    last = std::to_string(r.status) + " " + r.body.substr(0, 300);
    int n = 0;
    const nlohmann::json status = r.json();  // kept: a range-for over a temporary's member dangles
    if (r.status == 200 && status.contains("replicas"))
      for (const auto& rep : status["replicas"])
        n += rep["state"] == "ready" && rep["kv_events_connected"].get<bool>();
    ready = n == kReplicas;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ready) << last;

  bench::AgenticSpec spec;
  spec.seed = 3;
  spec.agent_types = 2;
  spec.system_tokens = 200;
  spec.task_tokens = 20;
  spec.tool_tokens_min = 20, spec.tool_tokens_max = 60;
  spec.reply_tokens_min = 4, spec.reply_tokens_max = 8;
  spec.turns_min = 2, spec.turns_max = 4;
  spec.think_s_min = 0, spec.think_s_max = 0.02;
  spec.max_context_tokens = 4096;
  spec.session_rate = 20;
  spec.duration_s = 0.5;
  const auto plan = bench::plan_sessions(spec);
  ASSERT_FALSE(plan.empty());
  bench::AgenticRunOptions options;
  options.admin_url = "http://127.0.0.1:" + std::to_string(gw.admin_port());
  options.sample_interval_s = 0.02;
  boost::asio::io_context ioc;
  const auto target = bench::resolve_target(ioc, "http://127.0.0.1:" + std::to_string(gw.port()));
  // options.model empty: the body says "model": "", which the gateway takes as its served model.
  const auto metrics = [&] {
    return bench::parse_gateway_counters(
        testing::http_request(gw.admin_port(), "GET", "/metrics").body);
  };
  const auto before = metrics();
  const auto run = bench::run_agentic(target, spec, plan, options);
  const auto after = metrics();
  // The oracle counters come with the gateway's /metrics lines for them (gateway.cpp);
  // without them the report's oracle is null and only the rest is checked.
  std::optional<bench::GatewayCounts> oracle;
  if (before && after) oracle = *after - *before;
  const auto report = bench::agentic_report(run, spec, "prefix", oracle);
  SCOPED_TRACE(report.dump(1));
  EXPECT_TRUE(report["valid"].get<bool>());
  EXPECT_EQ(report["sessions"]["started"], plan.size());
  EXPECT_EQ(report["sessions"]["failed"], 0);
  EXPECT_EQ(report["errors"], 0);
  EXPECT_GT(report["ok"].get<int64_t>(),
            static_cast<int64_t>(plan.size()));  // sessions have 2+ turns
  EXPECT_GT(report["ttft_ms"]["p50"].get<double>(), 0);
  EXPECT_GT(report["itl_ms"]["p50"].get<double>(), 0);
  EXPECT_GT(report["per_user_output_tok_s"]["p10"].get<double>(), 0);
  EXPECT_GT(report["aggregate_output_tok_s"].get<double>(), 0);
  EXPECT_EQ(report["ttft_ms_by_turn"][0]["turn"], 0);
  EXPECT_GE(report["ttft_ms_by_turn"].size(), 2u);
  // Later turns extend earlier ones on the session's replica: the workers report cached
  // prompt tokens, and the oracle (the best replica's cache) counts some too.
  const double hit = report["prefix_hit_rate"].get<double>();
  EXPECT_GT(hit, 0.2);
  EXPECT_LE(hit, 1.0);
  if (oracle) {
    EXPECT_GT(oracle->prompt_tokens, 0);
    EXPECT_GT(report["oracle_hit_rate"].get<double>(), 0.2);
    EXPECT_LE(report["oracle_hit_rate"].get<double>(), 1.0);
  } else {
    EXPECT_TRUE(report["oracle_hit_rate"].is_null());
  }
  // The gateway names each turn's replica, so a session's later turns are followed.
  EXPECT_GT(report["session_moves"]["later_turns"].get<int64_t>(), 0);
  // ... and the breakdown by replica accounts for every session and every turn.
  int64_t sessions = 0, turns = 0;
  for (const auto& r : report["by_replica"]["replicas"]) {
    sessions += r["sessions_started"].get<int64_t>();
    turns += r["turns"].get<int64_t>();
    EXPECT_GT(r["mean_turn_s"].get<double>(), 0);
  }
  EXPECT_EQ(sessions, static_cast<int64_t>(plan.size()));
  EXPECT_EQ(turns, report["ok"].get<int64_t>());
  EXPECT_GT(report["load"]["samples"].get<int64_t>(), 0);
  EXPECT_EQ(report["load"]["mean_in_flight_per_replica"].size(), static_cast<size_t>(kReplicas));
  gw.terminate();
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace sy
