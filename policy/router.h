// Choosing the replica for a request. Policies share one interface, one file each:
// prefix-aware (predicted TTFT with bounded load), session affinity, round-robin and
// least-loaded (for comparison). The caller fills each replica's state, including how many of the
// prompt's blocks it already holds (from the prefix indices).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "policy/clock.h"

namespace sy::policy {

struct ReplicaState {
  uint64_t id_hash = 0;        // stable identity of the replica (hash of its id)
  bool available = false;      // ready, not draining, not ejected
  int32_t in_flight = 0;       // requests sent to it and not finished
  int32_t capacity = 1;        // concurrent requests it accepts (its max_num_seqs)
  int64_t pending_prefill_tokens = 0;  // uncached prompt tokens sent and not yet prefilled,
                                       // to it and to replicas sharing a device with it
  double prefill_s_per_token = 1e-3;   // measured cost of one uncached prompt token
  double first_token_latency_s = 0;    // measured fixed part of its time to first token
  int32_t matched_blocks = 0;  // leading blocks of this prompt it holds
};

struct RouteRequest {
  uint64_t affinity_key = 0;   // the prompt's first full-block hash (or a hash of its start)
  int32_t prompt_tokens = 0;
  int32_t block_size = 16;
  uint64_t session_key = 0;    // a hash of the client's session id (`user`); 0: none given
  double now_s = 0;            // the caller's clock, for policies that remember sessions
  // A second attempt of a request still running on another replica (a hedge): it counts
  // as one of its session's attempts, but the session's home stays where the first went.
  bool hedge = false;
};

class Router {
 public:
  virtual ~Router() = default;
  virtual const char* name() const = 0;
  // Index into `replicas` of the chosen one, or nullopt when none is available.
  virtual std::optional<size_t> choose(const RouteRequest& req, std::span<const ReplicaState> replicas) = 0;
  // An attempt that choose() placed for this session (session_key != 0) has ended, however
  // it ended; a policy that weighs live sessions counts it off.
  virtual void attempt_ended(uint64_t /*session_key*/, double /*now_s*/) {}
};

struct RouterOptions {
  double load_bound = 1.25;      // a replica takes at most load_bound × the mean load (+1)
  double tie_tolerance_s = 0.002;  // predicted TTFTs this close count as equal
  // The prefix router remembers where each session (a request's session_key) went, for
  // this long after its last turn: a later turn within it goes home by cache cost.
  double session_ttl_s = 120;
  // A session counts as its home's load while a turn of it is in flight and for this long
  // after its last turn ended (the think time before the next one); past that it is
  // finished or idle and no longer keeps new sessions away from that replica.
  double session_idle_s = 15;
  // The prefix router moves a session whose home holds too many live sessions: at a new
  // turn, when its home's live-session load (sessions × per-token cost) exceeds
  // load_bound × what it would add to the least-loaded replica, the turn is placed as a
  // new session's would be, and the session lives there from then on (its context is
  // computed there once). Off: a session stays on its home for its life.
  bool session_rebalance = false;
  // New sessions' homes weigh each replica's live sessions by its fitted prefill cost per
  // token (a slow replica's sessions weigh more). Costs within this factor of the
  // available replicas' median count as the median: replicas of one kind then share new
  // sessions by count, not by their fits' noise. 1: every replica its own fitted cost.
  double session_cost_tolerance = 1.0;
  // For a known session's later turn, the prefix router's predicted cost of a replica
  // counts the prompt tokens it must compute although another available replica holds
  // them (the session's context away from its home) this many times: once for the turn's
  // own wait and the rest for the work queued behind that recomputation (on replicas
  // sharing a GPU, every replica's). 1: the turn's own wait alone. Requests without a
  // session always weigh it once.
  double recompute_weight = 100.0;
  // What a live session weighs on its home when new sessions are placed: false, one
  // each; true, its activity (the share of its life it has had a turn in flight, a young
  // one counted near the live sessions' mean) over that mean, so new sessions go where
  // the live ones are expected to keep the fewest turns in flight. A new one weighs one.
  bool session_load_activity = false;
  // Where a later turn whose context is nowhere goes (the prefix router places it by
  // live sessions, as a new session): false, the least loaded; true, among the replicas
  // within one session of the least loaded, where the live sessions' last prompts sum to
  // the fewest tokens (the KV its recomputation would push out). Off until measured on
  // the GPU (docs/PERFORMANCE.md, 2026-12-03: a lead in the simulator).
  bool lost_context_by_kv = false;
  // Where a new session goes: false, the replica whose live sessions weigh least; true,
  // among the replicas within one session of that, the one whose live sessions' last
  // prompts sum to the fewest tokens, so sessions' growing contexts spread over the
  // replicas' KV caches (placed by count alone, a replica already holding ~96K tokens of
  // live context took a new session beside one holding ~58K; docs/PERFORMANCE.md,
  // 2026-12-04). Off: lower p90 on 5 of 6 seeds in the simulator, no gain on the GPU
  // (seeds 1 and 3).
  bool new_session_by_kv = false;
};

// "prefix" (default), "approximate" (the prefix router; the caller fills matched_blocks
// from its approximate index only), "session_affinity", "round_robin", "least_loaded".
// Throws std::invalid_argument.
std::unique_ptr<Router> make_router(const std::string& name, const RouterOptions& options, Random& random);

// Rendezvous (highest-random-weight) score of a key on a replica: removing a replica
// moves only the keys whose highest score was on it.
uint64_t rendezvous_score(uint64_t key, uint64_t replica_id_hash);

// When replica r would give a prompt of `prompt_tokens` its first token, from now: its
// fixed latency plus its fitted cost of the prefill queued ahead (its GPU's) and of the
// prompt tokens it does not hold (seconds).
double predicted_first_token_s(const ReplicaState& r, int32_t prompt_tokens, int32_t block_size);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace sy::policy
