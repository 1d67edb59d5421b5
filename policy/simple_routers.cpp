// Baseline routers for comparison: round-robin over available replicas, and
// least-loaded (fewest in-flight requests relative to capacity, random among equals); and
// the helpers every policy shares: rendezvous_score and median.
#include <algorithm>
#include <stdexcept>

#include "policy/router.h"

namespace sy::policy {
namespace {

class RoundRobinRouter : public Router {
 public:
  const char* name() const override { return "round_robin"; }
  std::optional<size_t> choose(const RouteRequest&, std::span<const ReplicaState> replicas) override {
    for (size_t k = 0; k < replicas.size(); ++k) {
      const size_t i = (next_ + k) % replicas.size();
      if (replicas[i].available) {
        next_ = i + 1;
        return i;
      }
    }
    return std::nullopt;
  }

 private:
  size_t next_ = 0;
};

class LeastLoadedRouter : public Router {
 public:
  explicit LeastLoadedRouter(Random& random) : random_(random) {}
  const char* name() const override { return "least_loaded"; }
  std::optional<size_t> choose(const RouteRequest&, std::span<const ReplicaState> replicas) override {
    std::optional<size_t> best;
    double best_load = 0;
    uint64_t ties = 0;
    for (size_t i = 0; i < replicas.size(); ++i) {
      const ReplicaState& r = replicas[i];
      if (!r.available) continue;
      const double load = static_cast<double>(r.in_flight) / std::max(1, r.capacity);
      if (!best || load < best_load) {
        best = i;
        best_load = load;
        ties = 1;
      } else if (load == best_load && random_.next() % ++ties == 0) {  // uniform among equals
        best = i;
      }
    }
    return best;
  }

 private:
  Random& random_;
};

}  // namespace

std::unique_ptr<Router> make_prefix_router(const RouterOptions& o, const char* name);
std::unique_ptr<Router> make_session_router();

uint64_t rendezvous_score(uint64_t key, uint64_t replica_id_hash) {
  uint64_t z = key ^ (replica_id_hash * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double predicted_first_token_s(const ReplicaState& r, int32_t prompt_tokens, int32_t block_size) {
  const int64_t cached = std::min<int64_t>(static_cast<int64_t>(r.matched_blocks) * block_size, prompt_tokens);
  return r.first_token_latency_s + static_cast<double>(r.pending_prefill_tokens + prompt_tokens - cached) * r.prefill_s_per_token;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t h = values.size() / 2;
  return values.size() % 2 ? values[h] : (values[h - 1] + values[h]) / 2;
}

std::unique_ptr<Router> make_router(const std::string& name, const RouterOptions& options, Random& random) {
  if (name == "prefix") return make_prefix_router(options, "prefix");
  if (name == "approximate") return make_prefix_router(options, "approximate");
  if (name == "session_affinity") return make_session_router();
  if (name == "round_robin") return std::make_unique<RoundRobinRouter>();
  if (name == "least_loaded") return std::make_unique<LeastLoadedRouter>(random);
  throw std::invalid_argument("unknown routing policy '" + name + "' (known: prefix, approximate, session_affinity, round_robin, least_loaded)");
}

}  // namespace sy::policy
