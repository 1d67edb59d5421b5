// The gateway's core: admission queues, the router and the fleet's routing state, on
// one strand. Requests enter already parsed and tokenized; the core queues them by
// priority and releases each when a replica has room (in flight below its capacity),
// choosing the replica with the configured policy. A request's own work (the upstream
// call and relaying its tokens) runs on its client connection's strand; it and the core
// talk by messages (a post each way), and the resources a request holds here, its queue
// seat and its replica slots, are guards that give themselves back once.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <memory>
#include <deque>
#include <unordered_map>
#include <utility>

#include "common/config/fleet_config.h"
#include "common/metrics.h"
#include "common/protocol/openai.h"
#include "gateway/fleet.h"
#include "gateway/replica_slot.h"
#include "policy/admission_queue.h"
#include "policy/clock.h"
#include "policy/failure_events.h"
#include "policy/hedge_budget.h"
#include "policy/router.h"

namespace sy::gateway {

class ProxyRequest;

// The latest latency samples, for the dashboard's percentiles.
class LatencyWindow {
 public:
  explicit LatencyWindow(size_t capacity = 2048) : capacity_(capacity) {}
  void add(double v) {
    if (samples_.size() == capacity_) samples_.pop_front();
    samples_.push_back(v);
  }
  double percentile(double p) const;  // 0 when empty
  size_t size() const { return samples_.size(); }

 private:
  size_t capacity_;
  std::deque<double> samples_;
};

struct GatewayCounters {
  int64_t requests_total = 0;
  int64_t rejected_queue_full = 0;
  int64_t rejected_no_replica = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t cancelled = 0;
  int64_t retries = 0;           // attempts after the first (failover)
  int64_t retries_denied = 0;    // failures the retry budget (or max_attempts) did not pay a retry for
  int64_t failure_events = 0;    // replica failures budgeted once for the retries of what it held
  int64_t hedges = 0;            // second attempts sent before a first token
  int64_t hedges_won = 0;        // ... that produced the first token
  int64_t hedges_denied = 0;     // hedges the budget refused
  int64_t hedges_deferred = 0;   // hedges put off: no other replica predicted a sooner first token
  int64_t stalls = 0;            // attempts failed over for silence (stall or no first token)
  int64_t preempted = 0;         // workers' notices that an attempt was preempted (recomputing)
  int64_t output_tokens = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  // At each request's first dispatch: its prompt tokens, and how many of them the replica
  // holding most of the prompt had cached (Fleet::best_matched_blocks): the oracle hit rate
  // is oracle_cached_tokens / oracle_prompt_tokens.
  int64_t oracle_prompt_tokens = 0;
  int64_t oracle_cached_tokens = 0;
  int64_t queue_seats_taken = 0;  // each given back once (QueueSeat)
  int64_t queue_seats_released = 0;
};

// When an attempt's silence ends it, computed on the core strand at dispatch from recent
// latencies and the resilience config (seconds; hedge_delay 0: no hedge).
struct AttemptTimeouts {
  double hedge_delay = 0;
  double first_token = 120;
  double stall = 30;
};

// An attempt that failed with no sibling to carry on. It still holds its replica slot
// until the core's retry decision has counted what the replica held.
struct FailedAttempt {
  uint64_t incarnation = 0;  // which worker process of the replica (its boot id, hashed)
  bool first_token = false;
  ReplicaSlot slot;
};

class GatewayCore : public SlotReturn, public std::enable_shared_from_this<GatewayCore> {
 public:
  // `clock` times queue aging, ejections and failure events; `random` feeds the router.
  GatewayCore(boost::asio::any_io_executor core, const FleetConfig& config, std::shared_ptr<const policy::Clock> clock,
              std::shared_ptr<policy::Random> random);

  boost::asio::any_io_executor executor() const { return core_; }
  const std::shared_ptr<const policy::Clock>& clock() const { return clock_; }
  Fleet& fleet() { return *fleet_; }
  const Fleet& fleet() const { return *fleet_; }
  policy::AdmissionQueue& queue() { return queue_; }
  const policy::AdmissionQueue& queue() const { return queue_; }
  const GatewayCounters& counters() const { return counters_; }
  const char* router_name() const { return router_->name(); }

  // On the core strand, as every call below. Queues the request (taking a queue seat) or
  // answers it at once (429 full, 503 when no replica exists to wait for).
  void submit(std::shared_ptr<ProxyRequest> r);
  // `failed` was r's only attempt: if max_attempts and the retry budget allow (the
  // replica's failure event, else the bucket), sends r again (to another replica when one
  // has room, else through the queue); else tells r retry_refused(). Either way the
  // failed attempt's slot goes back here, after the replica's requests were counted.
  void retry(std::shared_ptr<ProxyRequest> r, FailedAttempt failed, int32_t attempts);
  // r's attempt on `busy_replica` has no first token `waited_s` after it was sent (the
  // hedge delay or later): if another replica with room predicts r's first token within
  // waited_s and the budget allows, sends a second attempt; if none does, tells r to ask
  // again once the attempt has waited as long as the soonest prediction.
  void hedge(std::shared_ptr<ProxyRequest> r, size_t busy_replica, int32_t attempts, double waited_s);
  void hedge_won() { ++counters_.hedges_won; }
  void stalled() { ++counters_.stalls; }
  void preempted() { ++counters_.preempted; }
  // An attempt's first token came `s` seconds after it was sent (the hedge delay's input).
  void observe_attempt_ttft(double s) { attempt_ttft_.add(s); }
  // The client of r left: if r still holds a queue seat, gives it up and tells r
  // withdrawn(); else r is dispatched (a message on its way) and ends itself.
  void withdraw(const std::shared_ptr<ProxyRequest>& r);
  // A request is over (any outcome); its slots went back by themselves.
  void request_done(bool ok, bool cancelled);
  // Answers every queued request with `error` (shutdown).
  void reject_queued(const ApiError& error);
  // The drain grace is over and the workers are stopping: retries are refused from now
  // on and whatever is queued is answered with `error`, so that no request waits in the
  // queue (holding the core) for a replica that will not come back.
  void close(const ApiError& error);
  // Stops releasing queued requests (mode switch drain) or resumes.
  void set_paused(bool paused);
  bool paused() const { return paused_; }
  int64_t in_flight() const;
  // Observations from the relays (client-side view: gateway arrival to first token).
  void observe_ttft(double s) { ttft_.add(s); }
  void observe_itl(double s) { itl_.add(s); }
  // Output tokens count as they stream (so rates move smoothly), prompt and cached
  // tokens when a request finishes.
  void count_output(int64_t tokens) { counters_.output_tokens += tokens; }
  void count_usage(const Usage& u) {
    counters_.prompt_tokens += u.prompt_tokens;
    counters_.cached_tokens += u.cached_tokens;
  }
  const LatencyWindow& ttft() const { return ttft_; }
  const LatencyWindow& itl() const { return itl_; }
  // Releases queued requests while replicas have room.
  void dispatch();
  // The silence limits an attempt of this class gets now, from recent latencies. A hedge
  // also waits `expected_prefill_s`, the prefill its replica is expected to need for it
  // (its uncached tokens and those queued ahead there).
  AttemptTimeouts timeouts_for(PriorityClass priority, double expected_prefill_s = 0) const;

  // SlotReturn: from any thread; counted on the core strand (at once when already there).
  void give_back(size_t replica, uint64_t fleet_generation, int64_t uncached_tokens, uint64_t session_key,
                 const SlotUse& use) override;

 private:
  // A request's place in the admission queue, held while it waits: dropping it (the
  // request dispatched, withdrawn or rejected) leaves the queue, once.
  class QueueSeat {
   public:
    QueueSeat(GatewayCore& core, uint64_t id) : core_(&core), id_(id) { ++core.counters_.queue_seats_taken; }
    QueueSeat(QueueSeat&& o) noexcept : core_(std::exchange(o.core_, nullptr)), id_(o.id_) {}
    QueueSeat& operator=(QueueSeat&&) = delete;
    ~QueueSeat();

   private:
    GatewayCore* core_;
    uint64_t id_;
  };
  struct Waiting {
    std::shared_ptr<ProxyRequest> request;
    QueueSeat seat;
  };

  // Queues r (a seat) or answers 429; false when refused.
  bool enqueue(std::shared_ptr<ProxyRequest> r);
  // Takes r's seat away, or nullptr when r holds none.
  std::shared_ptr<ProxyRequest> unseat(uint64_t id);

  boost::asio::any_io_executor core_;
  std::shared_ptr<const policy::Clock> clock_;
  std::shared_ptr<policy::Random> random_;
  std::unique_ptr<policy::Router> router_;
  policy::AdmissionQueue queue_;
  std::shared_ptr<Fleet> fleet_;
  std::unordered_map<uint64_t, Waiting> queued_;
  GatewayCounters counters_;
  bool paused_ = false;
  bool closing_ = false;
  LatencyWindow ttft_, itl_, attempt_ttft_;
  ResilienceConfig resilience_;
  policy::HedgeBudget budget_;           // hedges, and retries no failure event pays for
  policy::FailureEvents failure_events_;  // spends budget_: declared after it
  boost::asio::steady_timer redispatch_;  // wakes dispatch() when an ejection ends
  // Sends r to the best replica with room. `exclude`: not that one when another has room
  // (strict: never that one); returns false when no replica has room (then r is queued
  // again unless strict).
  bool route(std::shared_ptr<ProxyRequest> r, std::optional<size_t> exclude, bool strict = false, bool hedge = false);
  // The fleet's KV block size in tokens (16 before any replica is known).
  int32_t block_size() const { return fleet_->size() > 0 ? fleet_->info(0).block_size : 16; }
};

}  // namespace sy::gateway
