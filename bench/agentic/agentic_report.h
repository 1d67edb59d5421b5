// The agentic run's report (bench/README.md, "switchyard-agentic"): per-user output tok/s
// (p10, p50), TTFT p50/p90/p99 overall and by turn, ITL p50/p99, the prefix hit rate from
// usage.prompt_tokens_details.cached_tokens, the oracle hit rate from the gateway's
// counters, load imbalance from /admin/status samples, aggregate output tok/s, sessions
// and errors. Rates count only turns the client validated (real text of the requested
// length); a run with any failed turn is marked invalid.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench/agentic/agentic_runner.h"

namespace sy::bench {

// The gateway's oracle counters (switchyard_gateway_oracle_{prompt,cached}_tokens_total)
// over the run: the difference of two /metrics scrapes.
struct OracleCounts {
  double prompt_tokens = 0;
  double cached_tokens = 0;
};

// Reads the two counters from Prometheus text; nullopt when they are not there.
std::optional<OracleCounts> parse_oracle_counters(const std::string& metrics_text);

nlohmann::json agentic_report(const AgenticRun& run, const AgenticSpec& spec,
                              const std::string& label, const std::optional<OracleCounts>& oracle);
std::string agentic_summary(const nlohmann::json& report);

}  // namespace sy::bench
