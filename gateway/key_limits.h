// Per-API-key rate and concurrency limits (replicas.yaml `api_keys` entries that set
// requests_per_s, burst or max_concurrent), checked before a request is parsed and
// queued: policy::KeyLimiter behind a mutex, since requests arrive on every
// connection's strand. A refusal is a 429 with Retry-After; an admitted request holds
// its concurrency slot until its exchange is destroyed (after the response, or once the
// client has gone and the relay let go).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/config/fleet_config.h"
#include "common/http/server.h"
#include "common/metrics.h"
#include "policy/clock.h"
#include "policy/key_limiter.h"

namespace sy::gateway {

class KeyLimits : public std::enable_shared_from_this<KeyLimits> {
 public:
  explicit KeyLimits(const FleetConfig& config);

  // True when `ex` may go on; false after answering it 429.
  bool admit(const std::string& key, http::Exchange& ex);

  // switchyard_gateway_requests_rejected_total{reason="rate_limited"|"concurrency_limited"}.
  void register_metrics(MetricsRegistry& registry);

 private:
  void release(const std::string& key);

  policy::SteadyClock clock_;
  std::mutex mu_;
  policy::KeyLimiter limiter_;  // guarded by mu_
  std::atomic<uint64_t> rate_limited_{0};
  std::atomic<uint64_t> concurrency_limited_{0};
};

}  // namespace sy::gateway
