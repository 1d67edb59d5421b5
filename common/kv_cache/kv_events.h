// The prefix cache's event stream: which block hashes a worker stores and removes. The
// engine thread publishes; HTTP sessions subscribe (/internal/kv-events). A new
// subscriber first receives a snapshot (every hash cached now, as one "stored" event),
// then every later event, so a gateway that reconnects rebuilds its view exactly.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace sy {

struct KvEvent {
  uint64_t seq = 0;  // increases by one per event; a snapshot carries the latest seq
  enum class Type { kStored, kRemoved } type = Type::kStored;
  std::vector<uint64_t> hashes;
};

class KvSubscription;

class KvEventHub {
 public:
  // Events a subscriber may fall behind by before it is cut off (it then reconnects
  // and starts again from a snapshot).
  explicit KvEventHub(size_t max_backlog = 65536) : max_backlog_(max_backlog) {}

  // Engine thread. Empty hash lists are dropped.
  void publish(KvEvent::Type type, std::vector<uint64_t> hashes);

  // Any thread. `notify` is called (from the publishing thread, without locks held)
  // when events are waiting; it must only schedule a drain.
  std::shared_ptr<KvSubscription> subscribe(std::function<void()> notify);

  uint64_t last_seq() const;
  size_t cached_count() const;

 private:
  friend class KvSubscription;
  void unsubscribe(KvSubscription* s);

  mutable std::mutex mu_;
  uint64_t seq_ = 0;
  std::unordered_set<uint64_t> cached_;
  std::vector<KvSubscription*> subs_;
  size_t max_backlog_;
};

class KvSubscription {
 public:
  ~KvSubscription();
  // Takes the waiting events (the snapshot first). Empty when none.
  std::vector<KvEvent> drain();
  // True once the subscriber fell more than max_backlog events behind; no more events
  // arrive and the stream should end.
  bool overflowed() const;

 private:
  friend class KvEventHub;
  KvSubscription(KvEventHub* hub, std::function<void()> notify) : hub_(hub), notify_(std::move(notify)) {}
  KvEventHub* hub_;
  std::function<void()> notify_;
  std::deque<KvEvent> pending_;  // guarded by hub_->mu_
  bool overflowed_ = false;      // guarded by hub_->mu_
};

}  // namespace sy
