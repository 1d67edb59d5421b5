// Prefix-aware routing: the replica with the lowest predicted time to first token,
// (queued prefill work + this prompt's uncached tokens) × its prefill cost per token,
// among replicas under the load bound. Equal predictions are broken by rendezvous
// hashing of the prompt's first block, so a prefix keeps landing on the same replica
// and losing a replica moves only the prefixes it held.
#include <cmath>
#include <limits>
#include <vector>

#include "policy/router.h"

namespace sy::policy {
namespace {

class PrefixRouter : public Router {
 public:
  PrefixRouter(const RouterOptions& o, const char* name) : options_(o), name_(name) {}
  const char* name() const override { return name_; }

  std::optional<size_t> choose(const RouteRequest& req, std::span<const ReplicaState> replicas) override {
    int64_t total_in_flight = 0;
    int available = 0;
    for (const auto& r : replicas)
      if (r.available) {
        total_in_flight += r.in_flight;
        ++available;
      }
    if (available == 0) return std::nullopt;
    // Consistent hashing with bounded loads: nobody takes more than load_bound × the
    // mean (counting this request), rounded up.
    const auto bound = static_cast<int64_t>(std::ceil(options_.load_bound * static_cast<double>(total_in_flight + 1) / available));
    auto pick = [&](bool bounded) -> std::optional<size_t> {
      std::vector<double> cost(replicas.size(), std::numeric_limits<double>::infinity());
      double min_cost = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < replicas.size(); ++i) {
        const ReplicaState& r = replicas[i];
        if (!r.available || (bounded && r.in_flight + 1 > bound)) continue;
        const int64_t cached = std::min<int64_t>(static_cast<int64_t>(r.matched_blocks) * req.block_size, req.prompt_tokens);
        cost[i] = static_cast<double>(r.pending_prefill_tokens + req.prompt_tokens - cached) * r.prefill_s_per_token;
        min_cost = std::min(min_cost, cost[i]);
      }
      std::optional<size_t> best;
      uint64_t best_score = 0;
      for (size_t i = 0; i < replicas.size(); ++i) {
        if (!(cost[i] <= min_cost + options_.tie_tolerance_s)) continue;
        const uint64_t score = rendezvous_score(req.affinity_key, replicas[i].id_hash);
        if (!best || score > best_score) {
          best = i;
          best_score = score;
        }
      }
      return best;
    };
    // Everyone over the bound (a burst on few replicas): fall back to pure cost.
    auto best = pick(true);
    if (!best) best = pick(false);
    return best;
  }

 private:
  RouterOptions options_;
  const char* name_;
};

}  // namespace

std::unique_ptr<Router> make_prefix_router(const RouterOptions& o, const char* name) { return std::make_unique<PrefixRouter>(o, name); }

}  // namespace sy::policy
