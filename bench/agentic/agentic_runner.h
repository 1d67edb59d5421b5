// Runs a planned agentic workload (session_plan.h) against an OpenAI endpoint: one
// io_context thread runs every session (arrival timers, streaming turns, think-time
// timers); a second thread samples the gateway's /admin/status for per-replica in-flight
// counts. Turns are chat completions with stream, include_usage, ignore_eos and the
// session id as `user`, so a session-affinity router can use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/agentic/session_plan.h"
#include "bench/loadgen/http_client.h"

namespace sy::bench {

struct TurnResult {
  int64_t session = 0;
  int64_t agent_type = 0;
  int64_t turn = 0;
  RequestRecord record;  // validated by the client: real text of exactly max_tokens tokens
};

// One /admin/status sample: in-flight requests of each ready replica, in replica order.
struct LoadSample {
  double at_s = 0;  // from the run's start
  std::vector<int64_t> in_flight;
  // Each ready replica's own fitted prefill cost (s per uncached token, /admin/status;
  // the router weighs new sessions' homes by it, or by the mean of the replicas sharing
  // its GPU); NaN until its first sample
  // (prefill_cost_samples 0: /admin/status shows the default, the router the others' mean).
  std::vector<double> prefill_s_per_token;
};

struct AgenticRun {
  std::vector<TurnResult> turns;  // in completion order
  std::vector<LoadSample> load;
  int64_t sessions_planned = 0, sessions_started = 0;
  int64_t sessions_completed = 0;       // every planned turn ran
  int64_t sessions_context_capped = 0;  // ended where the next turn would pass the context cap
  int64_t sessions_time_capped = 0;     // ended by --max-run-s
  int64_t sessions_failed = 0;          // a turn failed (the session stops there)
  int64_t load_sample_errors = 0;
  Clock::time_point start, end;
};

struct AgenticRunOptions {
  std::string model;
  ClientOptions client;
  double max_run_s =
      0;  // after this long no turn or session starts (0: no limit); those in flight finish
  std::string admin_url;  // "" : no load sampling
  double sample_interval_s = 0.25;
};

AgenticRun run_agentic(const Target& target, const AgenticSpec& spec,
                       const std::vector<SessionPlan>& plan, const AgenticRunOptions& options);

// The request body of one turn.
std::string agentic_turn_body(const std::string& model, const nlohmann::json& messages,
                              int64_t max_tokens, const std::string& session_id);

// Parses /admin/status into one sample (ready replicas only); false when it is not one.
bool parse_load_sample(const std::string& status_json, LoadSample& out);

}  // namespace sy::bench
