#include "gateway/core.h"

#include "gateway/proxy_request.h"

#include <algorithm>
#include <memory>
#include <random>
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

GatewayCore::GatewayCore(boost::asio::any_io_executor core, const FleetConfig& config)
    : core_(core),
      random_(std::random_device{}()),
      router_(policy::make_router(config.routing.policy, {.load_bound = config.routing.load_bound}, random_)),
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
          clock_),
      fleet_(std::make_shared<Fleet>(core, config.routing.approx_index_capacity)),
      resilience_(config.resilience),
      budget_(config.resilience.budget_ratio),
      // An event stays open for the longest silence the watchdog allows an attempt (the
      // stall limit's upper bound, or the first-token timeout for attempts still waiting
      // for their first token), so every attempt a failed replica held has failed within
      // it; a killed replica's attempts fail within milliseconds anyway.
      failure_events_(clock_, budget_, std::max(config.resilience.stall_max_s, config.resilience.first_token_timeout_s)),
      redispatch_(core) {}

AttemptTimeouts GatewayCore::timeouts_for(const ProxyRequest& r) const {
  const ResilienceConfig& x = resilience_;
  AttemptTimeouts t;
  // Without samples yet, the bounds' upper ends: wait long rather than hedge blindly.
  auto bounded = [](double v, double lo, double hi) { return std::clamp(v, lo, hi); };
  const PriorityClass most = priority_class(parse_priority_name(x.hedge_max_priority).value_or(kPriorityStandard));
  const bool hedgeable = x.hedge && static_cast<int>(r.priority_class()) <= static_cast<int>(most);
  if (hedgeable)
    t.hedge_delay = attempt_ttft_.size() < 8 ? x.hedge_delay_max_s
                                             : bounded(x.hedge_delay_factor * attempt_ttft_.percentile(x.hedge_delay_quantile), x.hedge_delay_min_s, x.hedge_delay_max_s);
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
  policy::QueuedRequest q;
  q.id = r->id();
  q.priority = r->priority_class();
  q.api_key = r->api_key();
  q.cost = r->cost_tokens();
  if (!queue_.push(q)) {
    ++counters_.rejected_queue_full;
    return r->reject(ApiError::too_many_requests(std::string("the ") + priority_class_name(q.priority) + " queue is full"), 1);
  }
  queued_[q.id] = std::move(r);
  dispatch();
}

bool GatewayCore::withdraw(uint64_t id) {
  if (!queue_.remove(id)) return false;
  queued_.erase(id);
  ++counters_.cancelled;
  return true;
}

void GatewayCore::dispatch() {
  while (!paused_ && queue_.size() > 0 && fleet_->any_with_room()) {
    auto next = queue_.pop();
    auto it = queued_.find(next->id);
    if (it == queued_.end()) continue;
    std::shared_ptr<ProxyRequest> r = std::move(it->second);
    queued_.erase(it);
    route(std::move(r), std::nullopt);
  }
  // Work waits while every replica with room is ejected: come back when one returns.
  if (!paused_ && queue_.size() > 0)
    if (auto t = fleet_->next_ejection_end()) {
      redispatch_.expires_at(*t + std::chrono::milliseconds(1));
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
  rr.block_size = fleet_->size() > 0 ? fleet_->info(0).block_size : 16;
  const auto choice = router_->choose(rr, states);
  if (!choice || paused_) {
    if (strict) return false;
    queue_.push({r->id(), r->priority_class(), r->api_key(), r->cost_tokens(), 0});
    queued_[r->id()] = std::move(r);
    return false;
  }
  const size_t i = *choice;
  const int64_t cached = std::min<int64_t>(static_cast<int64_t>(states[i].matched_blocks) * rr.block_size, rr.prompt_tokens);
  fleet_->dispatched(i, hashes, rr.prompt_tokens - cached);
  const AttemptTimeouts t = timeouts_for(*r);
  r->dispatch(i, fleet_->info(i), rr.prompt_tokens - cached, t, hedge);
  return true;
}

bool GatewayCore::retry(std::shared_ptr<ProxyRequest> r, const FailedAttempt& failed, int32_t attempts) {
  const size_t i = failed.replica;
  // What the replica held when this attempt failed: every request still on it, this one
  // included. Each failed attempt gives its slot back only here, after this count, so the
  // first failure of a dead replica counts all its requests however their failures are
  // interleaved on this strand.
  const int32_t held = fleet_->load(i).in_flight;
  fleet_->finished(i, failed.first_token, failed.uncached_tokens, 0, 0);
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
    return false;
  }
  if (payer == Payer::kNewEvent) ++counters_.failure_events;
  ++counters_.retries;
  route(std::move(r), i);
  return true;
}

void GatewayCore::hedge(std::shared_ptr<ProxyRequest> r, size_t busy_replica, int32_t attempts) {
  if (paused_ || attempts >= resilience_.max_attempts) return;
  // A replica with room must exist before the budget pays for the hedge.
  bool other = false;
  const auto states = fleet_->states({}, /*with_room=*/true);
  for (size_t i = 0; i < states.size(); ++i) other = other || (i != busy_replica && states[i].available);
  if (!other) return;
  if (!budget_.try_spend()) {
    ++counters_.hedges_denied;
    return;
  }
  ++counters_.hedges;
  route(std::move(r), busy_replica, /*strict=*/true, /*hedge=*/true);
}

void GatewayCore::request_done(ProxyRequest& r, bool ok, bool cancelled) {
  if (cancelled) ++counters_.cancelled;
  else if (ok) ++counters_.completed;
  else ++counters_.failed;
  dispatch();
}

void GatewayCore::reject_queued(const ApiError& error) {
  while (auto q = queue_.pop()) {
    auto it = queued_.find(q->id);
    if (it == queued_.end()) continue;
    it->second->reject(error);
    queued_.erase(it);
  }
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
