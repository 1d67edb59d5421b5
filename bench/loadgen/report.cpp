#include "bench/loadgen/report.h"

#include <cmath>
#include <cstdio>

namespace sy::bench {

namespace {

using ordered = nlohmann::ordered_json;  // keys in the order written

std::string level_name(const LevelStats& s) {
  char buf[64];
  if (s.mode == "closed")
    std::snprintf(buf, sizeof buf, "c=%lld", static_cast<long long>(s.concurrency));
  else
    std::snprintf(buf, sizeof buf, "rate=%g/s", s.rate);
  return buf;
}

// A number for the table; "-" where there is none.
std::string num(double v, int decimals) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

ordered null_if_nan(double v) {
  return std::isnan(v) ? ordered(nullptr) : ordered(v);
}

ordered scaled(const Distribution& d, double scale) {
  return {{"p50", null_if_nan(d.p50 * scale)}, {"p90", null_if_nan(d.p90 * scale)},
          {"p99", null_if_nan(d.p99 * scale)}, {"mean", null_if_nan(d.mean * scale)},
          {"max", null_if_nan(d.max * scale)}, {"count", d.count}};
}

}  // namespace

std::string format_table(const RunInfo& info, const std::vector<LevelStats>& levels) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "switchyard-bench  %s  model %s\n  workload: %s, max_tokens %lld, temperature %g, "
                "warmup %lld per level\n",
                info.url.c_str(), info.model.c_str(), info.workload.c_str(),
                static_cast<long long>(info.max_tokens), info.temperature,
                static_cast<long long>(info.warmup));
  out += line;
  std::snprintf(line, sizeof line,
                "%-12s %5s %5s %5s | %8s %8s %8s | %7s %7s %7s | %7s %7s | %9s %9s | %7s\n",
                "level", "reqs", "ok", "err", "TTFT p50", "p90", "p99", "ITL p50", "p90", "p99",
                "e2e p50", "p99", "user t/s", "agg t/s", "prompt");
  out += line;
  std::snprintf(line, sizeof line,
                "%-12s %5s %5s %5s | %8s %8s %8s | %7s %7s %7s | %7s %7s | %9s %9s | %7s\n", "", "",
                "", "", "ms", "ms", "ms", "ms", "ms", "ms", "s", "s", "median", "", "tokens");
  out += line;
  for (const LevelStats& s : levels) {
    std::snprintf(line, sizeof line,
                  "%-12s %5lld %5lld %5lld | %8s %8s %8s | %7s %7s %7s | %7s %7s | %9s %9s | %7s\n",
                  level_name(s).c_str(), static_cast<long long>(s.requests),
                  static_cast<long long>(s.ok), static_cast<long long>(s.errors),
                  num(s.ttft_s.p50 * 1e3, 1).c_str(), num(s.ttft_s.p90 * 1e3, 1).c_str(),
                  num(s.ttft_s.p99 * 1e3, 1).c_str(), num(s.itl_s.p50 * 1e3, 2).c_str(),
                  num(s.itl_s.p90 * 1e3, 2).c_str(), num(s.itl_s.p99 * 1e3, 2).c_str(),
                  num(s.e2e_s.p50, 2).c_str(), num(s.e2e_s.p99, 2).c_str(),
                  num(s.user_decode_tok_s, 1).c_str(), num(s.aggregate_tok_s, 1).c_str(),
                  num(s.prompt_tokens_mean, 0).c_str());
    out += line;
  }
  bool all_valid = true;
  for (const LevelStats& s : levels) {
    const std::string name = level_name(s);
    if (!s.valid()) all_valid = false;
    for (const auto& [kind, n] : s.errors_by_kind)
      out += "  " + name + ": " + std::to_string(n) + " failed (" + kind + ")\n";
    for (const std::string& e : s.error_samples) out += "    " + e + "\n";
    if (s.cached_tokens > 0)
      out += "  " + name + ": prefix cache served " + std::to_string(s.cached_tokens) + " of " +
             std::to_string(s.prompt_tokens) + " prompt tokens (" +
             num(100.0 * s.prefix_hit_rate(), 1) + " %)\n";
    if (s.warmup_errors > 0)
      out += "  " + name + ": " + std::to_string(s.warmup_errors) + " warmup requests failed\n";
    if (s.unattributed_tokens > 0)
      out += "  " + name + ": " + std::to_string(s.unattributed_tokens) +
             " tokens arrived several to an event without token ids or logprobs; their gaps are "
             "not in ITL\n";
    if (s.texts_with_replacement_char > 0)
      out += "  " + name + ": " + std::to_string(s.texts_with_replacement_char) +
             " responses contain U+FFFD\n";
  }
  if (!all_valid)
    out +=
        "INVALID: some requests failed or were not the requested length of valid text; latencies "
        "and rates count only "
        "the requests that succeeded.\n";
  return out;
}

ordered to_json(const RunInfo& info, const std::vector<LevelStats>& levels) {
  ordered doc = {{"tool", "switchyard-bench"},    {"url", info.url},
              {"model", info.model},           {"workload", info.workload},
              {"max_tokens", info.max_tokens}, {"temperature", info.temperature},
              {"warmup", info.warmup},         {"timeout_s", info.timeout_s},
              {"keep_alive", info.keep_alive}};
  bool all_valid = !levels.empty();
  ordered out_levels = ordered::array();
  for (const LevelStats& s : levels) {
    all_valid = all_valid && s.valid();
    ordered l = {{"mode", s.mode},
              {"requests", s.requests},
              {"ok", s.ok},
              {"errors", s.errors},
              {"errors_by_kind", s.errors_by_kind},
              {"error_samples", s.error_samples},
              {"warmup_requests", s.warmup_requests},
              {"warmup_errors", s.warmup_errors},
              {"valid", s.valid()},
              {"ttft_ms", scaled(s.ttft_s, 1e3)},
              {"itl_ms", scaled(s.itl_s, 1e3)},
              {"e2e_ms", scaled(s.e2e_s, 1e3)},
              {"per_user_output_tok_s", null_if_nan(s.user_decode_tok_s)},
              {"per_user_e2e_tok_s", null_if_nan(s.user_e2e_tok_s)},
              {"aggregate_output_tok_s", null_if_nan(s.aggregate_tok_s)},
              {"ok_requests_per_s", null_if_nan(s.ok_requests_per_s)},
              {"wall_s", s.wall_s},
              {"output_tokens", s.output_tokens},
              {"prompt_tokens_mean", null_if_nan(s.prompt_tokens_mean)},
              {"cached_tokens", s.cached_tokens},
              {"prompt_tokens", s.prompt_tokens},
              {"prefix_hit_rate", null_if_nan(s.prefix_hit_rate())},
              {"reused_connections", s.reused_connections},
              {"unattributed_tokens", s.unattributed_tokens},
              {"texts_with_replacement_char", s.texts_with_replacement_char}};
    if (s.mode == "closed")
      l["concurrency"] = s.concurrency;
    else
      l["rate"] = s.rate;
    out_levels.push_back(std::move(l));
  }
  doc["valid"] = all_valid;
  doc["levels"] = std::move(out_levels);
  return doc;
}

}  // namespace sy::bench
