// Prefix-aware routing: the replica with the lowest predicted time to first token, its
// fixed latency + (queued prefill work + this prompt's uncached tokens) × its prefill
// cost per token (both fitted from real first tokens, policy/ttft_fit.h, so a slow
// replica costs more), among replicas
// under the in-flight bound (nobody takes more than load_bound × the mean, counting this
// request; a named session's later turns are exempt, see below). Equal predictions are broken by rendezvous hashing of the prompt's first
// block, so a prefix keeps landing on the same replica and losing a replica moves only
// the prefixes it held.
//
// Sessions: where clients name them (`user`), a session's first request goes to the
// replica whose live sessions would cost it least, (sessions + 1) × its prefill cost per
// token, and the cache decides only among those equally loaded; a replica without live
// sessions takes the next one whatever its cost, so every replica keeps measuring it.
// A live session has a turn in flight or ended one within session_idle_s: a finished
// session stops weighing on its replica soon after its last turn, not after the affinity
// TTL (in a run where sessions of 5 and of 30 turns start together, the TTL kept the
// replicas of the short ones looking full while they idled). A session's home is weighed
// by the per-token cost alone: a replica's fixed latency adds to each of its turns but
// not to its capacity. That keeps a multi-turn workload balanced: a session's later
// turns follow its cached context home, so where a session starts decides where its work
// lands for its whole life, and the shared system prompt a first turn matches would
// otherwise pull every session of an agent type onto one replica (measured on the agentic
// bench: busiest/least in flight 3.5). A slow replica (a high measured cost) is home to
// proportionally fewer sessions, but never to none while it is available.
//
// A known session's later turn counts the context it would recompute away from the
// replica holding it recompute_weight (100) times: it stays home unless that home is
// about a hundred recomputations behind. On four replicas sharing one H200 the plain
// prediction (weight 1) moved 18 % of later turns, which computed 43 % of all prompt
// tokens and doubled TTFT p90: a recomputation there slows every replica, which a
// per-replica prediction does not see. Requests without a session weigh it once. A later
// turn whose context is nowhere (no available replica holds half of the session's last
// prompt: its home evicted it, or its home is gone) is placed as a new session is, by
// live sessions, and lives there from then on (with lost_context_by_kv, among the
// replicas within one session of the least loaded, where the live contexts are smallest;
// new sessions too with new_session_by_kv).
//
// With session_rebalance, a session's new turn leaves a home that has become overloaded
// (its short sessions' neighbours ended elsewhere, say, after arrivals stopped): it is
// placed as a new session would be, paying one recomputation of its context, when its
// home's live-session load exceeds load_bound × (the least-loaded replica's with it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
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
    // Consistent hashing with bounded loads.
    const auto flight_bound = static_cast<int64_t>(
        std::ceil(options_.load_bound * static_cast<double>(total_in_flight + 1) / available));
    const bool new_session = req.session_key != 0 && is_new_session(req.session_key, req.now_s);
    auto cached_of = [&](const ReplicaState& r) {
      return std::min<int64_t>(static_cast<int64_t>(r.matched_blocks) * req.block_size, req.prompt_tokens);
    };
    Homes homes;  // empty unless this turn is placed as a new session's
    bool lost = false;
    if (new_session) {
      homes = homes_of(replicas, req.now_s);
    } else if (req.session_key != 0) {
      // (Live sessions are counted only where this turn may move: that walks them all.)
      const Session& s = sessions_.at(req.session_key);
      lost = context_lost(s, replicas, cached_of);
      if (lost || options_.session_rebalance) {
        homes = homes_of(replicas, req.now_s);
        if (lost || overloaded(s, replicas, homes))
          count_off(s, replicas, homes);
        else
          homes = {};
      }
    }
    // A lost context or a new session placed where the live contexts are smallest.
    const bool by_kv = (lost && options_.lost_context_by_kv) || (new_session && options_.new_session_by_kv);
    // A known session staying home; a moving one is placed as a new one.
    const bool known_session = req.session_key != 0 && !new_session && homes.count.empty();
    auto pick = [&](bool bounded) -> std::optional<size_t> {
      // A session's later turn is not held to the in-flight bound: moving it recomputes
      // its whole context (tens of thousands of tokens in an agent's late turns), which
      // its predicted cost already weighs against waiting at home.
      auto eligible = [&](const ReplicaState& r) {
        return r.available && (!bounded || known_session || r.in_flight + 1 <= flight_bound);
      };
      // A new session: only the replicas whose sessions would cost least.
      double min_home_load = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < homes.count.size(); ++i)
        if (eligible(replicas[i])) min_home_load = std::min(min_home_load, homes.placing(i));
      // by_kv: among the replicas within one session of the least loaded, those whose
      // live contexts are smallest (the KV its recomputation would displace).
      auto near_least = [&](size_t i) { return homes.placing(i) <= min_home_load + homes.weight[i] * (1 + 1e-9); };
      int64_t min_context = std::numeric_limits<int64_t>::max();
      if (by_kv)
        for (size_t i = 0; i < homes.count.size(); ++i)
          if (eligible(replicas[i]) && near_least(i)) min_context = std::min(min_context, homes.context[i]);
      auto placeable = [&](size_t i) {
        if (homes.count.empty()) return true;
        if (by_kv) return near_least(i) && homes.context[i] <= min_context;
        return homes.placing(i) <= min_home_load * (1 + 1e-9);
      };
      // The most of the prompt any eligible replica holds: for a known session's later
      // turn (its own context), recomputing it elsewhere weighs recompute_weight times.
      const double weight = known_session ? options_.recompute_weight : 1.0;
      int64_t most_cached = 0;
      for (const ReplicaState& r : replicas)
        if (eligible(r)) most_cached = std::max(most_cached, cached_of(r));
      std::vector<double> cost(replicas.size(), std::numeric_limits<double>::infinity());
      double min_cost = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < replicas.size(); ++i) {
        const ReplicaState& r = replicas[i];
        if (!eligible(r) || !placeable(i)) continue;
        const double recomputed = static_cast<double>(most_cached - cached_of(r)) * (weight - 1);
        cost[i] = predicted_first_token_s(r, req.prompt_tokens, req.block_size) + recomputed * r.prefill_s_per_token;
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
    // Everyone over a bound (a burst on few replicas): fall back to pure cost.
    auto best = pick(true);
    if (!best) best = pick(false);
    if (best && req.session_key != 0) {
      Session& s = sessions_[req.session_key];
      // A hedge leaves the home alone: counted on the hedge's replica (usually the least
      // loaded, where a first token comes soonest), the session made it look fuller until
      // its next turn went home, and a new session arriving meanwhile went to a replica
      // with more live sessions (seen in the time-sliced simulator, seed 3). Where the
      // next turn goes is the cost rule's: wherever the context is cached.
      if (!req.hedge || s.first_s < 0) s.replica_id_hash = replicas[*best].id_hash;
      if (s.in_flight == 0) s.busy_since_s = req.now_s;
      if (s.first_s < 0) s.first_s = req.now_s;
      s.last_s = req.now_s;
      s.prompt_tokens = req.prompt_tokens;
      ++s.in_flight;
    }
    return best;
  }

  void attempt_ended(uint64_t session_key, double now_s) override {
    auto it = sessions_.find(session_key);
    if (it == sessions_.end()) return;
    Session& s = it->second;
    if (s.in_flight > 0 && --s.in_flight == 0) s.busy_s += now_s - s.busy_since_s;
    s.last_s = now_s;
  }

 private:
  struct Session {
    uint64_t replica_id_hash = 0;
    double last_s = 0;      // when its last turn was sent or ended
    int32_t in_flight = 0;  // its attempts placed and not ended
    double first_s = -1;    // when its first turn was sent
    double busy_s = 0;      // how long it has had an attempt in flight, up to busy_since_s
    double busy_since_s = 0;  // when its current attempts began (in_flight > 0)
    int32_t prompt_tokens = 0;  // its last turn's: the context a replica holding it holds
    // Seconds with a turn in flight, in the `age` seconds since it began.
    double busy(double now_s) const { return busy_s + (in_flight > 0 ? now_s - busy_since_s : 0); }
    double age(double now_s) const { return now_s - first_s; }
    // A turn in flight, or one that ended within idle_s.
    bool live(double now_s, double idle_s) const { return in_flight > 0 || now_s - last_s <= idle_s; }
  };

  // A session's activity (the share of its life with a turn in flight) is its in-flight
  // seconds and this many seconds at the live sessions' mean activity, over its age
  // plus as many: a young session counts near the mean, an old one as measured.
  static constexpr double kActivityPriorS = 30;

  // Per replica: its live sessions, the units they weigh (one each; with
  // session_load_activity each its activity over the live sessions' mean, so a session
  // seldom in flight weighs less than one mostly in flight) and what a unit weighs there.
  struct Homes {
    std::vector<int64_t> count;
    std::vector<double> units;
    std::vector<double> weight;
    std::vector<int64_t> context;  // the live sessions' last prompt tokens
    bool by_activity = false;
    double mean_activity = 0.5;  // in-flight seconds over age, summed over live sessions
    double now_s = 0;
    // What session s weighs (a new one: one unit, the mean).
    double units_of(const Session& s) const {
      if (!by_activity) return 1.0;
      const double activity = (s.busy(now_s) + mean_activity * kActivityPriorS) / (s.age(now_s) + kActivityPriorS);
      return activity / mean_activity;
    }
    // The load of replica i's live sessions with `more` units more: a slow replica's weigh more.
    double load(size_t i, double more = 1) const { return (units[i] + more) * weight[i]; }
    // What placing a session on replica i weighs: its load, but nothing on a replica
    // without live sessions, whatever its cost. A replica's cost is fitted from its own
    // first tokens, so one that gets no session keeps a stale fit: measured on the
    // agentic bench, a replica behind a 500 ms proxy fitted 7.7× the others' cost and
    // held 0.02 requests in flight for the whole run. Each replica keeps at least one.
    double placing(size_t i) const { return count[i] == 0 ? 0 : load(i); }
  };

  // True when no available replica holds half of session s's last prompt: its context
  // (beyond what its agent type shares) is nowhere, its home having evicted it, or its
  // home is gone. Such a turn computes its context wherever it goes, so it is placed by
  // load as a new session is; by cost alone every replica predicted the same, and the
  // tie fell by the prompt's first block, the same replica for every session of an agent
  // type (measured in the time-sliced simulator: 62 moved turns over four seeds each
  // found at most 3,200 tokens of its 3,900-62,000-token prompt where it went, most
  // exactly the 2,992-token system prompt, and they went back and forth between the
  // same replicas). A context held twice (a hedge computed it too) is not lost.
  template <class CachedOf>
  static bool context_lost(const Session& s, std::span<const ReplicaState> replicas, const CachedOf& cached_of) {
    int64_t most = 0;
    for (const ReplicaState& r : replicas)
      if (r.available) most = std::max(most, cached_of(r));
    return 2 * most < s.prompt_tokens;
  }

  // True when session s should leave its home (session_rebalance): the home's load with
  // s exceeds load_bound × the least a replica elsewhere would carry with s.
  bool overloaded(const Session& s, std::span<const ReplicaState> replicas, const Homes& homes) const {
    std::optional<size_t> home;
    double elsewhere = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i].id_hash == s.replica_id_hash)
        home = i;
      else if (replicas[i].available)
        elsewhere = std::min(elsewhere, homes.load(i, homes.units_of(s)));
    }
    // A home that is gone or unavailable: the cost rule already sends the turn elsewhere.
    if (!home || !replicas[*home].available || homes.count[*home] < 1) return false;
    // Its home's load with s is that of the others there plus its own.
    return homes.load(*home, 0) > options_.load_bound * elsewhere;
  }

  // Session s, about to be placed again, no longer counts on its home in `homes` (where
  // it counted: it is live).
  void count_off(const Session& s, std::span<const ReplicaState> replicas, Homes& homes) const {
    if (!s.live(homes.now_s, options_.session_idle_s)) return;
    for (size_t i = 0; i < replicas.size(); ++i)
      if (replicas[i].id_hash == s.replica_id_hash && homes.count[i] > 0) {
        --homes.count[i];
        homes.units[i] -= homes.units_of(s);
        homes.context[i] -= s.prompt_tokens;
      }
  }

  // True when `key` is not remembered; forgets sessions idle for the TTL (swept at most
  // once a second, so the table holds the sessions of the last TTL).
  bool is_new_session(uint64_t key, double now_s) {
    if (now_s >= next_sweep_s_) {
      next_sweep_s_ = now_s + 1;
      std::erase_if(sessions_, [&](const auto& kv) {
        return kv.second.in_flight == 0 && now_s - kv.second.last_s > options_.session_ttl_s;
      });
    }
    return !sessions_.contains(key);
  }

  // Live sessions per replica (a turn in flight, or one that ended within the idle
  // window), each weighing the replica's fitted prefill cost per token, or the available
  // replicas' median where within session_cost_tolerance of it.
  Homes homes_of(std::span<const ReplicaState> replicas, double now_s) const {
    Homes homes;
    homes.by_activity = options_.session_load_activity;
    homes.now_s = now_s;
    std::vector<const Session*> live;
    double busy = 0, age = 0;
    for (const auto& [key, s] : sessions_)
      if (s.live(now_s, options_.session_idle_s)) {
        live.push_back(&s);
        busy += s.busy(now_s);
        age += s.age(now_s);
      }
    if (busy > 0 && age > 0) homes.mean_activity = busy / age;
    struct Held {
      int64_t sessions = 0;
      double units = 0;
      int64_t context = 0;
    };
    std::unordered_map<uint64_t, Held> by_id;
    for (const Session* s : live) {
      Held& h = by_id[s->replica_id_hash];
      ++h.sessions;
      h.units += homes.units_of(*s);
      h.context += s->prompt_tokens;
    }
    std::vector<double> fitted;
    for (const ReplicaState& r : replicas)
      if (r.available) fitted.push_back(r.prefill_s_per_token);
    const double mid = median(std::move(fitted));
    const double tol = options_.session_cost_tolerance;
    for (const ReplicaState& r : replicas) {
      const auto it = by_id.find(r.id_hash);
      const Held h = it == by_id.end() ? Held{} : it->second;
      homes.count.push_back(h.sessions);
      homes.units.push_back(h.units);
      homes.context.push_back(h.context);
      const double c = r.prefill_s_per_token;
      homes.weight.push_back(tol > 1 && c <= mid * tol && c * tol >= mid ? mid : c);
    }
    return homes;
  }

  RouterOptions options_;
  const char* name_;
  std::unordered_map<uint64_t, Session> sessions_;
  double next_sweep_s_ = 0;
};

}  // namespace

std::unique_ptr<Router> make_prefix_router(const RouterOptions& o, const char* name) { return std::make_unique<PrefixRouter>(o, name); }

}  // namespace sy::policy
