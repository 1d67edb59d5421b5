// switchyard-bench: an OpenAI-compatible streaming load generator. Sends streaming
// completions at fixed concurrency levels (closed loop) or Poisson rates (open loop),
// checks that every response is exactly max_tokens tokens of valid text, and reports
// TTFT, inter-token latency, end-to-end latency and output token rates per level.
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/loadgen/options.h"
#include "bench/loadgen/report.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/stats.h"
#include "common/cli/args.h"

namespace {

using namespace sy::bench;

// The model to name in requests: --model, else the first the server lists.
std::string discover_model(net::io_context& ioc, const Target& target,
                           std::chrono::milliseconds timeout) {
  auto [status, body] = http_get(ioc, target, "/v1/models", timeout);
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (status != 200 || j.is_discarded() || !j.contains("data") || !j["data"].is_array() ||
      j["data"].empty() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    throw std::runtime_error("GET /v1/models gave " + std::to_string(status) +
                             " without a model id; pass --model");
  return j["data"][0]["id"].get<std::string>();
}

std::string describe_level(const LevelSpec& s) {
  char buf[128];
  if (s.mode == LevelSpec::Mode::kClosed)
    std::snprintf(buf, sizeof buf, "closed loop, concurrency %lld",
                  static_cast<long long>(s.concurrency));
  else
    std::snprintf(buf, sizeof buf, "open loop, %g requests/s", s.rate);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions opt;
  try {
    opt = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const sy::cli::UsageError& e) {
    std::fprintf(stderr, "switchyard-bench: %s\n%s", e.what(), kUsage);
    return 1;
  }
  if (opt.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    net::io_context ioc(1);
    const Target target = resolve_target(ioc, opt.url);
    opt.request.model =
        opt.model.empty() ? discover_model(ioc, target, opt.client.timeout) : opt.model;
    const Workload workload = opt.workload_path.empty()
                                  ? Workload::generated(opt.prompt_tokens, opt.endpoint)
                                  : Workload::from_file(opt.workload_path);

    RunInfo info;
    info.url = opt.url;
    info.model = opt.request.model;
    info.workload = opt.workload_path.empty()
                        ? "generated, ~" + std::to_string(opt.prompt_tokens) + " prompt tokens, " +
                              endpoint_path(opt.endpoint)
                        : opt.workload_path + " (" + std::to_string(workload.size()) + " entries)";
    if (opt.multi_turn.turns > 0)
      info.workload = "multi-turn chat, " + std::to_string(opt.multi_turn.turns) + " turns of ~" +
                      std::to_string(opt.multi_turn.turn_tokens) + " tokens, " +
                      std::to_string(opt.multi_turn.system_prompts) + " shared system prompts of ~" +
                      std::to_string(opt.multi_turn.system_tokens) + " tokens";
    info.max_tokens = opt.request.max_tokens;
    info.temperature = opt.request.temperature;
    info.warmup = opt.warmup;
    info.timeout_s = static_cast<double>(opt.client.timeout.count()) / 1e3;
    info.keep_alive = opt.client.keep_alive;

    Runner runner(ioc, target, workload, opt.request, opt.client, opt.multi_turn);
    std::vector<LevelStats> levels;
    for (const LevelSpec& spec : opt.levels()) {
      std::fprintf(stderr, "switchyard-bench: %s: %lld warmup + %s requests...\n",
                   describe_level(spec).c_str(), static_cast<long long>(spec.warmup),
                   spec.num_requests > 0
                       ? std::to_string(spec.num_requests).c_str()
                       : ("~" + std::to_string(spec.duration_s) + " s of").c_str());
      const LevelResult result = runner.run_level(spec);
      LevelStats s = summarize(result.measured, result.warmup);
      s.mode = spec.mode == LevelSpec::Mode::kClosed ? "closed" : "open";
      s.concurrency = spec.concurrency;
      s.rate = spec.rate;
      std::fprintf(stderr, "switchyard-bench:   %lld ok, %lld failed in %.2f s\n",
                   static_cast<long long>(s.ok), static_cast<long long>(s.errors), s.wall_s);
      levels.push_back(std::move(s));
    }

    const std::string table = format_table(info, levels);
    if (opt.json) {
      std::fputs(table.c_str(), stderr);
      std::cout << to_json(info, levels).dump(2) << std::endl;
    } else {
      std::fputs(table.c_str(), stdout);
    }
    for (const LevelStats& s : levels)
      if (!s.valid()) return 2;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard-bench: %s\n", e.what());
    return 1;
  }
}
