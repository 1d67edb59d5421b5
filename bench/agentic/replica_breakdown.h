// Where an agentic run's load came from, per replica that served turns (named by the
// gateway's x-switchyard-replica header): the sessions whose first turn it served, the
// turns it served, the seconds they were in flight (issued to done; over the run's wall
// time, its mean requests in flight: a second measure of the sampled imbalance), their
// mean TTFT and prompt tokens, the tokens it computed (not cached) and its ITL p50. It splits an
// imbalance into how many sessions a replica was given, how many turns they sent, and how
// long each turn took there.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "bench/agentic/agentic_runner.h"

namespace sy::bench {

// Only validated turns count. `wall_s` is the run's first issue to last done; replicas in
// name order. `busiest_over_least` is the largest over the smallest seconds in flight.
nlohmann::json replica_breakdown(const std::vector<TurnResult>& turns, double wall_s);

}  // namespace sy::bench
