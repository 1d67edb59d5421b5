// Decode under contention: replicas that share a GPU wait on each other's steps
// (docs/PERFORMANCE.md, "Why per-user tok/s is lower with prefix routing on one GPU").
// For each validated turn with two content events or more, its decode span (first to
// last content event), its time per token over that span (1 / RequestRecord::
// decode_tok_s) and how many replicas had a turn in its decode span at once, averaged
// over the turn's own span; the turns grouped by that count (rounded), with each group's
// ms per token p50. A routing policy that spreads sessions keeps more replicas decoding
// at once; on one GPU without MPS that is what slows each of them.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "bench/agentic/agentic_runner.h"

namespace sy::bench {

// {"turns", "mean_replicas_decoding" (null without turns), "by_replicas_decoding":
// [{"replicas", "turns", "ms_per_token_p50"}, ...] in increasing count}.
nlohmann::json decode_contention(const std::vector<TurnResult>& turns);

}  // namespace sy::bench
