#include "policy/failure_events.h"

namespace sy::policy {

FailureEvents::FailureEvents(const Clock& clock, HedgeBudget& bucket, double window_s)
    : clock_(clock), bucket_(bucket), window_s_(window_s) {}

bool FailureEvents::open(size_t replica) const {
  return replica < events_.size() && clock_.now_s() < events_[replica].until_s;
}

int32_t FailureEvents::cover_left(size_t replica) const { return open(replica) ? events_[replica].left : 0; }

FailureEvents::Payer FailureEvents::pay_retry(size_t replica, uint64_t incarnation, int32_t held, std::span<const bool> usable) {
  if (replica >= events_.size()) events_.resize(replica + 1);
  Event& e = events_[replica];
  if (open(replica) && e.incarnation == incarnation) {
    if (e.left > 0) {
      --e.left;
      return Payer::kEvent;
    }
    // Used up: more failures than the process held (requests sent to it after it failed,
    // before it was ejected). Those pay one by one; a second event would let a replica
    // that fails everything sent to it draw a full cover every time.
    return bucket_.try_spend() ? Payer::kBucket : Payer::kNone;
  }
  bool elsewhere = false;  // a replica that can take the requests and is not failing itself
  for (size_t j = 0; j < usable.size(); ++j) elsewhere = elsewhere || (j != replica && usable[j] && !open(j));
  if (!elsewhere) {
    // No replica is left to take the work: the events open elsewhere assumed one was, so
    // they stop paying. A fleet-wide outage pays only the bucket from here on, as retries
    // there would only fail again (and wait in the queue for ejected replicas).
    for (size_t j = 0; j < events_.size(); ++j)
      if (j != replica) events_[j].left = 0;
    return bucket_.try_spend() ? Payer::kBucket : Payer::kNone;
  }
  if (!bucket_.try_spend()) return Payer::kNone;
  e.until_s = clock_.now_s() + window_s_;
  e.left = held > 1 ? held - 1 : 0;  // this retry is the first the event pays
  e.incarnation = incarnation;
  ++opened_;
  return Payer::kNewEvent;
}

}  // namespace sy::policy
