#include "gateway/key_limits.h"

#include <algorithm>
#include <cmath>

namespace sy::gateway {
namespace {

std::map<std::string, policy::KeyLimit> key_limits_of(const FleetConfig& c) {
  std::map<std::string, policy::KeyLimit> out;
  for (const auto& [key, l] : c.key_limits) out[key] = {l.requests_per_s, l.burst, l.max_concurrent};
  return out;
}

}  // namespace

KeyLimits::KeyLimits(const FleetConfig& config) : limiter_(key_limits_of(config), clock_) {}

bool KeyLimits::admit(const std::string& key, http::Exchange& ex) {
  policy::KeyDecision d;
  bool holds_slot = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d = limiter_.admit(key);
    holds_slot = d.verdict == policy::KeyVerdict::kAdmitted && limiter_.in_progress(key) > 0;
  }
  if (d.verdict == policy::KeyVerdict::kAdmitted) {
    // The slot goes back when the exchange is destroyed; unlimited keys hold nothing.
    if (holds_slot)
      ex.hold(std::shared_ptr<void>(nullptr, [self = shared_from_this(), key](void*) { self->release(key); }));
    return true;
  }
  // Retry-After is whole seconds; round up so that a client obeying it is admitted.
  const int retry_s = std::max(1, static_cast<int>(std::ceil(d.retry_after_s)));
  ex.add_header("Retry-After", std::to_string(retry_s));
  if (d.verdict == policy::KeyVerdict::kRateLimited) {
    ++rate_limited_;
    ex.respond_error(ApiError::too_many_requests("this API key's request rate limit is exceeded", "rate_limited"));
  } else {
    ++concurrency_limited_;
    ex.respond_error(ApiError::too_many_requests("this API key has too many requests in progress", "concurrency_limited"));
  }
  return false;
}

void KeyLimits::release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  limiter_.release(key);
}

void KeyLimits::register_metrics(MetricsRegistry& registry) {
  // Counters, as the family's other series (queue_full, no_replica) are.
  const char* help = "Requests refused before routing";
  auto self = shared_from_this();
  registry.counter_fn("switchyard_gateway_requests_rejected_total", help, [self] { return static_cast<double>(self->rate_limited_.load()); },
                      {{"reason", "rate_limited"}});
  registry.counter_fn("switchyard_gateway_requests_rejected_total", help,
                    [self] { return static_cast<double>(self->concurrency_limited_.load()); }, {{"reason", "concurrency_limited"}});
}

}  // namespace sy::gateway
