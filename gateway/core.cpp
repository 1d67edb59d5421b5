#include "gateway/core.h"

#include "gateway/proxy_request.h"

#include <algorithm>
#include <random>

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
      fleet_(std::make_shared<Fleet>(core, config.routing.approx_index_capacity)) {}

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
}

// Sends r to the best replica with room (not `exclude` when another has room), or back
// into the queue when none has.
void GatewayCore::route(std::shared_ptr<ProxyRequest> r, std::optional<size_t> exclude) {
  const auto hashes = r->prefix_hashes();
  auto states = fleet_->states(hashes, /*with_room=*/true);
  if (exclude && *exclude < states.size()) {
    bool other = false;
    for (size_t i = 0; i < states.size(); ++i) other = other || (i != *exclude && states[i].available);
    if (other) states[*exclude].available = false;
  }
  policy::RouteRequest rr;
  rr.affinity_key = hashes.empty() ? r->prompt_key() : hashes.front();
  rr.prompt_tokens = r->prompt_tokens();
  rr.block_size = fleet_->size() > 0 ? fleet_->info(0).block_size : 16;
  const auto choice = router_->choose(rr, states);
  if (!choice || paused_) {
    queue_.push({r->id(), r->priority_class(), r->api_key(), r->cost_tokens(), 0});
    queued_[r->id()] = std::move(r);
    return;
  }
  const size_t i = *choice;
  const int64_t cached = std::min<int64_t>(static_cast<int64_t>(states[i].matched_blocks) * rr.block_size, rr.prompt_tokens);
  fleet_->dispatched(i, hashes, rr.prompt_tokens - cached);
  r->dispatch(i, fleet_->info(i), rr.prompt_tokens - cached);
}

bool GatewayCore::retry(std::shared_ptr<ProxyRequest> r, size_t failed_replica) {
  fleet_->attempt_failed(failed_replica);
  if (!budget_.try_spend()) {
    ++counters_.retries_denied;
    return false;
  }
  ++counters_.retries;
  route(std::move(r), failed_replica);
  return true;
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
