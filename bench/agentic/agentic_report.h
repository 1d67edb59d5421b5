// The agentic run's report (bench/README.md, "switchyard-agentic"): per-user output tok/s
// (p10, p50), TTFT p50/p90/p99 overall and by turn, ITL p50/p99, the prefix hit rate from
// usage.prompt_tokens_details.cached_tokens, the oracle hit rate and hedges from the
// gateway's counters, load imbalance from /admin/status samples, aggregate output tok/s,
// lost context (later turns over kLostContextMinTokens prompt tokens that found under half
// of them cached: what the fleet's KV no longer held), decode time per token by how many
// replicas decoded at once (decode_contention.h), sessions and errors. Rates count only turns the client validated (real text of the requested
// length); a run with any failed turn is marked invalid.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench/agentic/agentic_runner.h"

namespace sy::bench {

constexpr int64_t kLostContextMinTokens = 10000;

// The gateway's counters over the run (the difference of two /metrics scrapes): the
// oracle's (switchyard_gateway_oracle_{prompt,cached}_tokens_total) and its hedges
// (switchyard_gateway_hedges_total, _hedges_won_total: second attempts sent before a
// first token, and those that produced it — a won hedge serves a turn away from the
// replica its router chose; _hedges_deferred_total: hedges put off because no other
// replica predicted a sooner first token), the attempts it failed over for silence
// (switchyard_gateway_stalls_total) and the workers' notices of a preempted attempt
// (switchyard_gateway_preempted_total).
struct GatewayCounts {
  double prompt_tokens = 0;
  double cached_tokens = 0;
  double hedges = 0;
  double hedges_won = 0;
  double stalls = 0;
  double preempted = 0;
  double hedges_deferred = 0;
  GatewayCounts operator-(const GatewayCounts& o) const {
    return {prompt_tokens - o.prompt_tokens, cached_tokens - o.cached_tokens, hedges - o.hedges,
            hedges_won - o.hedges_won,       stalls - o.stalls,               preempted - o.preempted,
            hedges_deferred - o.hedges_deferred};
  }
};

// Reads the counters from Prometheus text; nullopt when the oracle's are not there (the
// others count 0 when missing).
std::optional<GatewayCounts> parse_gateway_counters(const std::string& metrics_text);

nlohmann::json agentic_report(const AgenticRun& run, const AgenticSpec& spec,
                              const std::string& label, const std::optional<GatewayCounts>& gateway);
std::string agentic_summary(const nlohmann::json& report);
// One CSV row per turn in completion order (a header first): session, agent type, turn,
// replica, ok, seconds from the run's start when it was issued, got its first token (-1:
// none) and finished, prompt, cached and completion tokens: where each session's turns
// ran when.
std::string agentic_turns_csv(const AgenticRun& run);

}  // namespace sy::bench
