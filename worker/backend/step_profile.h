// Where one step's time goes (switchyard-engine-bench --profile): a measurement for
// benchmarks, kept off the Backend interface: a single cuda device (device time per op)
// or a single cpu rank (wall time per op).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "worker/backend/backend.h"

namespace sy {

// Milliseconds; medians over the repeats.
struct StepProfile {
  struct Op {
    std::string name;    // a decoder op ("QKV projection", "attention", ...) or "LM head"
    int32_t calls = 0;   // launches of this op in one step (one per layer for most)
    double ms = 0;       // device time of all of them, run back to back without a graph
    double bytes = 0;    // weight bytes (projections) or KV bytes (attention) they read
  };
  std::vector<Op> ops;         // in first-launch order; empty where unsupported
  bool queued_ahead = false;   // the host queued the whole step before the device began
  double ops_ms = 0;           // sum of ops
  double graph_ms = 0;         // device time of the step replayed from its graph (0: none)
  double forward_ms = 0;       // forward(): host wall time, fp32 logits back to the host
  double logits_copy_ms = 0;   // of which the copy of the logits alone
  double greedy_ms = 0;        // forward_sample(), every row argmax: wall time
  double sampled_ms = 0;       // forward_sample(), every row temperature 1, top-p 0.9
};

// The median of a profile's repeats (0 for none).
inline double profile_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `plan` (its KV writes included) `repeats` times per measurement on `backend` and
// reports where the time goes: a single cuda device (CudaBackend::profile_step) or cpu
// rank (CpuBackend::profile_step); a group gives an empty profile.
StepProfile profile_step(Backend& backend, const BatchPlan& plan, int repeats);

}  // namespace sy
