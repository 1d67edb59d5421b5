// Session affinity, the policy users of other routers ask for: every request of a session
// (the same session id) goes to the same replica, chosen by rendezvous hashing of the
// session key, whatever each replica caches or how busy it is. A request without a session
// id hashes its first prompt block instead. When the session's replica is unavailable
// (full, ejected, gone) the next-highest score takes it, so losing a replica moves only
// its sessions.
#include "policy/router.h"

namespace sy::policy {
namespace {

class SessionAffinityRouter : public Router {
 public:
  const char* name() const override { return "session_affinity"; }
  std::optional<size_t> choose(const RouteRequest& req,
                               std::span<const ReplicaState> replicas) override {
    const uint64_t key = req.session_key != 0 ? req.session_key : req.affinity_key;
    std::optional<size_t> best;
    uint64_t best_score = 0;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (!replicas[i].available) continue;
      const uint64_t score = rendezvous_score(key, replicas[i].id_hash);
      if (!best || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }
};

}  // namespace

std::unique_ptr<Router> make_session_router() {
  return std::make_unique<SessionAffinityRouter>();
}

}  // namespace sy::policy
