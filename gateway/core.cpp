#include "gateway/core.h"

#include "gateway/proxy_request.h"

#include <boost/asio/dispatch.hpp>

#include <algorithm>
#include <memory>
#include <span>

namespace sy::gateway {

double LatencyWindow::percentile(double p) const {
  if (samples_.empty()) return 0;
  std::vector<double> v(samples_.begin(), samples_.end());
  const double rank = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(rank);
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= v.size()) return a;
  const double b = *std::min_element(v.begin() + static_cast<ptrdiff_t>(lo) + 1, v.end());
  return a + (b - a) * (rank - static_cast<double>(lo));
}

GatewayCore::GatewayCore(boost::asio::any_io_executor core, const FleetConfig& config, std::shared_ptr<const policy::Clock> clock,
                         std::shared_ptr<policy::Random> random)
    : core_(core),
      clock_(std::move(clock)),
      random_(std::move(random)),
      router_(policy::make_router(config.routing.policy,
                                  {.load_bound = config.routing.load_bound,
                                   .session_rebalance = config.routing.session_rebalance,
                                   .session_cost_tolerance = config.routing.session_cost_tolerance,
                                   .recompute_weight = config.routing.recompute_weight,
                                   .session_load_activity = config.routing.session_load == "activity",
                                   .lost_context_by_kv = config.routing.lost_context == "kv",
                                   .new_session_by_kv = config.routing.new_session == "kv"},
                                  *random_)),
      queue_(
          [&] {
            policy::AdmissionQueueOptions o;
            o.capacity[0] = config.queues.interactive;
            o.capacity[1] = config.queues.standard;
            o.capacity[2] = config.queues.batch;
            o.aging_s = config.queues.aging_s;
            o.quantum = config.queues.quantum_tokens;
            return o;
          }(),
          *clock_),
      fleet_(std::make_shared<Fleet>(core, config.routing.approx_index_capacity, clock_)),
      resilience_(config.resilience),
      budget_(config.resilience.budget_ratio),
      // An event stays open for the longest silence the watchdog allows an attempt (the
      // stall limit's upper bound, or the first-token timeout for attempts still waiting
      // for their first token), so every attempt a failed replica held has failed within
      // it; a killed replica's attempts fail within milliseconds anyway.
      failure_events_(*clock_, budget_, std::max(config.resilience.stall_max_s, config.resilience.first_token_timeout_s)),
      redispatch_(core) {
  fleet_->set_approximate_only(config.routing.policy == "approximate");
}

GatewayCore::QueueSeat::~QueueSeat() {
  if (!core_) return;
  core_->queue_.remove(id_);  // nothing when dispatch() popped it
  ++core_->counters_.queue_seats_released;
}

AttemptTimeouts GatewayCore::timeouts_for(PriorityClass priority, double expected_prefill_s) const {
  const ResilienceConfig& x = resilience_;
  AttemptTimeouts t;
  // Without samples yet, the bounds' upper ends: wait long rather than hedge blindly.
  auto bounded = [](double v, double lo, double hi) { return std::clamp(v, lo, hi); };
  const PriorityClass most = priority_class(parse_priority_name(x.hedge_max_priority).value_or(kPriorityStandard));
  const bool hedgeable = x.hedge && static_cast<int>(priority) <= static_cast<int>(most);
  if (hedgeable)
    t.hedge_delay = attempt_ttft_.size() < 8 ? x.hedge_delay_max_s
                                             : bounded(x.hedge_delay_factor * attempt_ttft_.percentile(x.hedge_delay_quantile), x.hedge_delay_min_s, x.hedge_delay_max_s);
  // A long prompt's first token is late only past the prefill it needs: hedging it sooner
  // recomputes the whole context on another replica (measured on the agentic bench: most
  // hedges of long-context turns lost, and the work they added slowed the others).
  if (t.hedge_delay > 0) t.hedge_delay += std::max(0.0, expected_prefill_s);
  t.first_token = x.first_token_timeout_s;
  t.stall = itl_.size() < 8 ? x.stall_max_s : bounded(x.stall_factor * itl_.percentile(0.99), x.stall_min_s, x.stall_max_s);
  return t;
}

void GatewayCore::submit(std::shared_ptr<ProxyRequest> r) {
  ++counters_.requests_total;
  budget_.on_request();
  // While the fleet is switching shape nothing is alive, but something will be.
  if (!paused_ && !fleet_->any_alive()) {
    ++counters_.rejected_no_replica;
    return r->reject(ApiError::unavailable("no replica can serve this model", "no_replica"));
  }
  if (!enqueue(r)) {
    ++counters_.rejected_queue_full;
    return r->reject(ApiError::too_many_requests(std::string("the ") + priority_class_name(r->priority_class()) + " queue is full"), 1);
  }
  dispatch();
}

bool GatewayCore::enqueue(std::shared_ptr<ProxyRequest> r) {
  if (!queue_.push({r->id(), r->priority_class(), r->api_key(), r->cost_tokens(), 0})) return false;
  const uint64_t id = r->id();
  queued_.emplace(id, Waiting{std::move(r), QueueSeat(*this, id)});
  return true;
}

std::shared_ptr<ProxyRequest> GatewayCore::unseat(uint64_t id) {
  auto it = queued_.find(id);
  if (it == queued_.end()) return nullptr;
  std::shared_ptr<ProxyRequest> r = std::move(it->second.request);
  queued_.erase(it);  // the seat gives itself back
  return r;
}

void GatewayCore::withdraw(const std::shared_ptr<ProxyRequest>& r) {
  if (!unseat(r->id())) return;
  ++counters_.cancelled;
  r->withdrawn();
}

void GatewayCore::dispatch() {
  while (!paused_ && queue_.size() > 0 && fleet_->any_with_room()) {
    auto next = queue_.pop();
    if (auto r = unseat(next->id)) route(std::move(r), std::nullopt);
  }
  // Work waits while every replica with room is ejected: come back when one returns.
  if (!paused_ && queue_.size() > 0)
    if (auto t = fleet_->next_ejection_end()) {
      const std::chrono::duration<double> in(std::max(0.0, *t - clock_->now_s()) + 0.001);
      redispatch_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(in));
      redispatch_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->dispatch();
      });
    }
}

bool GatewayCore::route(std::shared_ptr<ProxyRequest> r, std::optional<size_t> exclude, bool strict, bool hedge) {
  const auto hashes = r->prefix_hashes();
  auto states = fleet_->states(hashes, /*with_room=*/true);
  if (exclude && *exclude < states.size()) {
    bool other = false;
    for (size_t i = 0; i < states.size(); ++i) other = other || (i != *exclude && states[i].available);
    if (other || strict) states[*exclude].available = false;
  }
  policy::RouteRequest rr;
  rr.affinity_key = hashes.empty() ? r->prompt_key() : hashes.front();
  rr.prompt_tokens = r->prompt_tokens();
  rr.block_size = block_size();
  rr.session_key = r->session_key();
  rr.now_s = clock_->now_s();
  rr.hedge = hedge;
  // Paused (a mode switch): nothing is placed, so the router records nothing either.
  const auto choice = paused_ ? std::nullopt : router_->choose(rr, states);
  if (!choice) {
    if (strict) return false;
    // Back in the queue; a full class answers 429 as at submission.
    if (!enqueue(r)) {
      ++counters_.rejected_queue_full;
      r->reject(ApiError::too_many_requests(std::string("the ") + priority_class_name(r->priority_class()) + " queue is full"), 1);
    }
    return false;
  }
  const size_t i = *choice;
  if (!exclude && !hedge) {  // a request's first dispatch (retries and hedges route again)
    counters_.oracle_prompt_tokens += rr.prompt_tokens;
    counters_.oracle_cached_tokens += std::min<int64_t>(static_cast<int64_t>(fleet_->best_matched_blocks(hashes)) * rr.block_size, rr.prompt_tokens);
  }
  const int64_t cached = std::min<int64_t>(static_cast<int64_t>(states[i].matched_blocks) * rr.block_size, rr.prompt_tokens);
  fleet_->dispatched(i, hashes, rr.prompt_tokens - cached);
  ReplicaSlot slot(shared_from_this(), i, fleet_->generation(), rr.prompt_tokens - cached, states[i].pending_prefill_tokens,
                   rr.session_key);
  // What its prefill should take there: its uncached tokens and those queued ahead, at the
  // median fitted cost per token (none until some replica has one). Not the replica's
  // own: a hedge is for a replica slower than the others, which its own fit would excuse.
  const double expected_prefill_s =
      static_cast<double>(states[i].pending_prefill_tokens + rr.prompt_tokens - cached) * fleet_->median_prefill_s_per_token();
  r->dispatch(std::move(slot), fleet_->info(i), timeouts_for(r->priority_class(), expected_prefill_s), hedge);
  return true;
}

void GatewayCore::retry(std::shared_ptr<ProxyRequest> r, FailedAttempt failed, int32_t attempts) {
  const size_t i = failed.slot.replica();
  // What the replica held when this attempt failed: every request still on it, this one
  // included. Each failed attempt gives its slot back only here, after this count, so the
  // first failure of a dead replica counts all its requests however their failures are
  // interleaved on this strand.
  const int32_t held = fleet_->load(i).in_flight;
  fleet_->attempt_failed(i);
  using Payer = policy::FailureEvents::Payer;
  Payer payer = Payer::kNone;
  if (!closing_ && attempts < resilience_.max_attempts) {
    const auto usable = std::make_unique<bool[]>(fleet_->size());
    for (size_t j = 0; j < fleet_->size(); ++j) usable[j] = fleet_->usable(j);
    payer = failure_events_.pay_retry(i, failed.incarnation, held, std::span<const bool>(usable.get(), fleet_->size()));
  }
  if (payer == Payer::kNone) {
    ++counters_.retries_denied;
    failed.slot.release({.first_token = failed.first_token});
    return r->retry_refused();
  }
  if (payer == Payer::kNewEvent) ++counters_.failure_events;
  ++counters_.retries;
  route(std::move(r), i);
  failed.slot.release({.first_token = failed.first_token});
}

void GatewayCore::hedge(std::shared_ptr<ProxyRequest> r, size_t busy_replica, int32_t attempts, double waited_s) {
  if (paused_ || attempts >= resilience_.max_attempts) return;
  // A replica with room must exist before the budget pays for the hedge, and it must
  // promise a first token sooner than the attempt has already waited: a late attempt is
  // as likely as not to take that long again, and a hedge predicted slower mostly adds
  // work (an agent's late turn recomputes tens of thousands of context tokens elsewhere;
  // on a GPU shared with the first attempt's replica, ahead of or behind its prefill).
  const auto states = fleet_->states(r->prefix_hashes(), /*with_room=*/true);
  std::optional<double> soonest;
  for (size_t i = 0; i < states.size(); ++i)
    if (i != busy_replica && states[i].available) {
      const double s = policy::predicted_first_token_s(states[i], r->prompt_tokens(), block_size());
      soonest = std::min(soonest.value_or(s), s);
    }
  if (!soonest) return;
  if (*soonest > waited_s) {
    ++counters_.hedges_deferred;
    return r->defer_hedge(*soonest);
  }
  if (!budget_.try_spend()) {
    ++counters_.hedges_denied;
    return;
  }
  ++counters_.hedges;
  route(std::move(r), busy_replica, /*strict=*/true, /*hedge=*/true);
}

void GatewayCore::give_back(size_t replica, uint64_t fleet_generation, int64_t uncached_tokens, uint64_t session_key,
                            const SlotUse& use) {
  boost::asio::dispatch(core_, [self = shared_from_this(), replica, fleet_generation, uncached_tokens, session_key, use] {
    if (session_key != 0) self->router_->attempt_ended(session_key, self->clock_->now_s());
    Fleet& fleet = *self->fleet_;
    if (fleet_generation != fleet.generation()) return;  // a slot of an older fleet shape
    fleet.finished(replica, use.first_token, uncached_tokens, use.prompt_tokens, use.cached_tokens);
    if (use.succeeded) fleet.attempt_succeeded(replica);
    self->dispatch();
  });
}

void GatewayCore::request_done(bool ok, bool cancelled) {
  if (cancelled) ++counters_.cancelled;
  else if (ok) ++counters_.completed;
  else ++counters_.failed;
  dispatch();
}

void GatewayCore::reject_queued(const ApiError& error) {
  while (auto q = queue_.pop())
    if (auto r = unseat(q->id)) r->reject(error);
}
void GatewayCore::close(const ApiError& error) {
  closing_ = true;
  reject_queued(error);
}

void GatewayCore::set_paused(bool paused) {
  paused_ = paused;
  if (!paused_) dispatch();
}

int64_t GatewayCore::in_flight() const {
  int64_t n = 0;
  for (size_t i = 0; i < fleet_->size(); ++i) n += fleet_->load(i).in_flight;
  return n;
}

}  // namespace sy::gateway
