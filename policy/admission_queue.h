// The gateway's priority queues: bounded per class (interactive, standard, batch),
// strict priority between classes with aging (a request that waits `aging_s` moves up
// one class, so batch work is never starved), and deficit round-robin across API keys
// inside a class (a key that sends many or large requests cannot crowd out another).
// Requests leave the queue when a replica has room; the caller decides when.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/protocol/sampling_params.h"
#include "policy/clock.h"

namespace sy::policy {

struct QueuedRequest {
  uint64_t id = 0;
  PriorityClass priority = PriorityClass::kStandard;
  std::string api_key;
  int64_t cost = 1;          // tokens it will cost (prompt + max_tokens), for fairness
  double enqueued_at = 0;    // set by push()
};

struct AdmissionQueueOptions {
  size_t capacity[3] = {256, 1024, 4096};  // per class: interactive, standard, batch
  double aging_s = 10.0;                   // waiting this long promotes one class
  int64_t quantum = 2048;                  // tokens a key may take per round
};

class AdmissionQueue {
 public:
  AdmissionQueue(AdmissionQueueOptions options, const Clock& clock) : options_(options), clock_(clock) {}

  // False when the request's class is full (the caller answers 429).
  bool push(QueuedRequest r);
  // The next request to release, or nullopt when empty.
  std::optional<QueuedRequest> pop();
  // Drops a queued request (its client left); false when it is not queued.
  bool remove(uint64_t id);

  size_t size() const { return index_.size(); }
  size_t size(PriorityClass c) const;  // by current (possibly aged) class
  // Seconds the oldest request of class c has waited (0 when none).
  double oldest_wait_s(PriorityClass c) const;

 private:
  struct Key {
    std::deque<QueuedRequest> items;
    int64_t deficit = 0;
  };
  struct Class {
    std::unordered_map<std::string, Key> keys;
    std::list<std::string> active;  // keys with items, in round-robin order
    size_t count = 0;
  };
  void age();
  void enqueue(int cls, QueuedRequest r);
  QueuedRequest dequeue_front(int cls, const std::string& key);

  AdmissionQueueOptions options_;
  const Clock& clock_;
  Class classes_[3];
  std::unordered_map<uint64_t, std::pair<int, std::string>> index_;  // id → (class, key)
};

}  // namespace sy::policy
