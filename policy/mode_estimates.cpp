#include "policy/mode_estimates.h"

#include <cmath>

namespace sy::policy {

const char* fleet_mode_name(FleetMode m) { return m == FleetMode::kThroughput ? "throughput" : "latency"; }

int ModeEstimates::bucket(double load) {
  if (!(load >= 1.5)) return 0;
  const int b = static_cast<int>(std::floor(std::log2(load / 1.5))) + 1;  // 1.5–3 → 1, 3–6 → 2, ...
  return b < kBuckets ? b : kBuckets - 1;
}

void ModeEstimates::observe(FleetMode mode, const ModeSample& s) {
  if (!(s.load >= 0.5)) return;
  ModeEstimate& e = table_[index(mode)][bucket(s.load)];
  const double w = e.samples == 0 ? 1.0 : kWeight;
  auto blend = [w](double& avg, double x) { avg += w * (x - avg); };
  blend(e.aggregate_tok_s, s.aggregate_tok_s);
  if (s.user_tok_s > 0) {
    if (e.user_tok_s <= 0) e.user_tok_s = s.user_tok_s;
    else blend(e.user_tok_s, s.user_tok_s);
  }
  blend(e.queued_fraction, s.queued > 0 ? 1.0 : 0.0);
  ++e.samples;
}

}  // namespace sy::policy
