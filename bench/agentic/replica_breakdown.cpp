#include "bench/agentic/replica_breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bench/loadgen/stats.h"

namespace sy::bench {

using nlohmann::json;

namespace {

struct ReplicaTally {
  int64_t sessions = 0, turns = 0;
  double in_flight_s = 0, ttft_s = 0, prompt_tokens = 0, computed_tokens = 0;
  std::vector<double> itl;
};

}  // namespace

json replica_breakdown(const std::vector<TurnResult>& turns, double wall_s) {
  std::map<std::string, ReplicaTally> by_name;
  for (const TurnResult& t : turns) {
    const RequestRecord& r = t.record;
    if (!r.ok() || r.replica.empty()) continue;
    ReplicaTally& a = by_name[r.replica];
    if (t.turn == 0) ++a.sessions;
    ++a.turns;
    a.in_flight_s += std::chrono::duration<double>(r.done - r.issued).count();
    a.ttft_s += r.ttft_s();
    a.prompt_tokens += static_cast<double>(std::max<int64_t>(r.prompt_tokens, 0));
    a.computed_tokens += static_cast<double>(std::max<int64_t>(r.prompt_tokens - std::max<int64_t>(r.cached_tokens, 0), 0));
    for (double g : r.itl_s()) a.itl.push_back(g);
  }
  json rows = json::array();
  double most = 0, least = std::numeric_limits<double>::infinity();
  for (const auto& [name, a] : by_name) {
    most = std::max(most, a.in_flight_s);
    least = std::min(least, a.in_flight_s);
    const double n = static_cast<double>(a.turns);
    rows.push_back({{"replica", name},
                    {"sessions_started", a.sessions},
                    {"turns", a.turns},
                    {"in_flight_s", a.in_flight_s},
                    {"mean_in_flight", wall_s > 0 ? json(a.in_flight_s / wall_s) : json(nullptr)},
                    {"mean_turn_s", a.in_flight_s / n},
                    {"mean_ttft_s", a.ttft_s / n},
                    {"mean_prompt_tokens", a.prompt_tokens / n},
                    {"computed_tokens", a.computed_tokens},
                    {"itl_ms_p50", a.itl.empty() ? json(nullptr) : json(1e3 * percentile(a.itl, 50))}});
  }
  return {{"replicas", rows},
          {"busiest_over_least", rows.size() > 1 && least > 0 ? json(most / least) : json(nullptr)}};
}

}  // namespace sy::bench
