// switchyard-agentic: the agentic workload (session_plan.h) against an OpenAI endpoint,
// usually the gateway; the report as JSON (--json-out) and a text summary on stdout.
// Exit 0 when every turn was valid, 2 when any failed, 1 on bad flags or setup errors.
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>

#include "bench/agentic/agentic_report.h"

namespace {

using namespace sy::bench;

constexpr const char* kUsage =
    "usage: switchyard-agentic --url http://127.0.0.1:8000 [--admin-url URL] [--model NAME]\n"
    "  [--seed 1] [--agent-types 4] [--system-tokens 2000] [--task-tokens 200]\n"
    "  [--tool-tokens 200,2000] [--reply-tokens 64,256] [--turns 5,30] [--max-context 65536]\n"
    "  [--think-s 0.5,3] [--session-rate 0.5] [--duration 60] [--max-run-s 0]\n"
    "  [--timeout 300] [--sample-interval 0.25] [--label NAME] [--json-out FILE]\n"
    "  [--turns-out FILE (one CSV row per turn: where and when it ran)]\n";

std::pair<double, double> range(const std::string& v) {
  const size_t comma = v.find(',');
  if (comma == std::string::npos) return {std::stod(v), std::stod(v)};
  return {std::stod(v.substr(0, comma)), std::stod(v.substr(comma + 1))};
}

std::string first_model(net::io_context& ioc, const Target& target) {
  auto [status, body] = http_get(ioc, target, "/v1/models", std::chrono::seconds(30));
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (status != 200 || !j.contains("data") || j["data"].empty())
    throw std::runtime_error("GET /v1/models gave " + std::to_string(status));
  return j["data"][0].value("id", "");
}

std::optional<GatewayCounts> scrape_counters(const std::string& admin_url) {
  if (admin_url.empty()) return std::nullopt;
  try {
    net::io_context ioc;
    const Target admin = resolve_target(ioc, admin_url);
    auto [status, body] = http_get(ioc, admin, "/metrics", std::chrono::seconds(10));
    return status == 200 ? parse_gateway_counters(body) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> f = {{"url", "http://127.0.0.1:8000"}, {"label", "run"}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (a.rfind("--", 0) != 0 || i + 1 >= argc)
      return std::cerr << "bad argument '" << a << "'\n" << kUsage, 1;
    f[a.substr(2)] = argv[++i];
  }
  AgenticSpec spec;
  AgenticRunOptions options;
  try {
    auto take = [&](const char* k) -> std::optional<std::string> {
      auto it = f.find(k);
      if (it == f.end()) return std::nullopt;
      std::string v = it->second;
      f.erase(it);
      return v;
    };
    auto i64 = [](double d) { return static_cast<int64_t>(d); };
    if (auto v = take("seed")) spec.seed = std::stoull(*v);
    if (auto v = take("agent-types")) spec.agent_types = std::stoll(*v);
    if (auto v = take("system-tokens")) spec.system_tokens = std::stoll(*v);
    if (auto v = take("task-tokens")) spec.task_tokens = std::stoll(*v);
    if (auto v = take("tool-tokens"))
      std::tie(spec.tool_tokens_min, spec.tool_tokens_max) =
          std::pair(i64(range(*v).first), i64(range(*v).second));
    if (auto v = take("reply-tokens"))
      std::tie(spec.reply_tokens_min, spec.reply_tokens_max) =
          std::pair(i64(range(*v).first), i64(range(*v).second));
    if (auto v = take("turns"))
      std::tie(spec.turns_min, spec.turns_max) =
          std::pair(i64(range(*v).first), i64(range(*v).second));
    if (auto v = take("think-s")) std::tie(spec.think_s_min, spec.think_s_max) = range(*v);
    if (auto v = take("max-context")) spec.max_context_tokens = std::stoll(*v);
    if (auto v = take("session-rate")) spec.session_rate = std::stod(*v);
    if (auto v = take("duration")) spec.duration_s = std::stod(*v);
    if (auto v = take("max-run-s")) options.max_run_s = std::stod(*v);
    if (auto v = take("timeout"))
      options.client.timeout =
          std::chrono::milliseconds(static_cast<int64_t>(std::stod(*v) * 1000));
    if (auto v = take("sample-interval")) options.sample_interval_s = std::stod(*v);
    if (auto v = take("admin-url")) options.admin_url = *v;
    if (auto v = take("model")) options.model = *v;
    const std::string url = *take("url"), label = *take("label");
    const std::optional<std::string> json_out = take("json-out"), turns_out = take("turns-out");
    if (!f.empty()) return std::cerr << "unknown flag --" << f.begin()->first << "\n" << kUsage, 1;

    const auto plan = plan_sessions(spec);
    net::io_context ioc;
    const Target target = resolve_target(ioc, url);
    if (options.model.empty()) options.model = first_model(ioc, target);
    const auto before = scrape_counters(options.admin_url);
    const AgenticRun run = run_agentic(target, spec, plan, options);
    const auto after = scrape_counters(options.admin_url);
    std::optional<GatewayCounts> counts;
    if (before && after) counts = *after - *before;
    const nlohmann::json report = agentic_report(run, spec, label, counts);
    if (json_out) {
      std::ofstream out(*json_out);
      out << report.dump(1) << "\n";
      if (!out) throw std::runtime_error("cannot write " + *json_out);
    }
    if (turns_out) {
      std::ofstream out(*turns_out);
      out << agentic_turns_csv(run);
      if (!out) throw std::runtime_error("cannot write " + *turns_out);
    }
    std::cout << agentic_summary(report) << std::flush;
    return report["valid"].get<bool>() ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "switchyard-agentic: " << e.what() << "\n";
    return 1;
  }
}
