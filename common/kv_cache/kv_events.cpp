#include "common/kv_cache/kv_events.h"

namespace sy {

void KvEventHub::publish(KvEvent::Type type, std::vector<uint64_t> hashes) {
  if (hashes.empty()) return;
  std::vector<std::function<void()>> to_notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t h : hashes) {
      if (type == KvEvent::Type::kStored)
        cached_.insert(h);
      else
        cached_.erase(h);
    }
    KvEvent e{++seq_, type, std::move(hashes)};
    for (KvSubscription* s : subs_) {
      if (s->overflowed_) continue;
      if (s->pending_.size() >= max_backlog_) {
        s->overflowed_ = true;
        s->pending_.clear();
      } else {
        s->pending_.push_back(e);
      }
      to_notify.push_back(s->notify_);
    }
  }
  for (auto& n : to_notify)
    if (n) n();
}

std::shared_ptr<KvSubscription> KvEventHub::subscribe(std::function<void()> notify) {
  std::shared_ptr<KvSubscription> s(new KvSubscription(this, std::move(notify)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    KvEvent snapshot{seq_, KvEvent::Type::kStored, std::vector<uint64_t>(cached_.begin(), cached_.end())};
    s->pending_.push_back(std::move(snapshot));
    subs_.push_back(s.get());
  }
  if (s->notify_) s->notify_();
  return s;
}

void KvEventHub::unsubscribe(KvSubscription* s) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(subs_, s);
}

uint64_t KvEventHub::last_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

size_t KvEventHub::cached_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_.size();
}

KvSubscription::~KvSubscription() { hub_->unsubscribe(this); }

std::vector<KvEvent> KvSubscription::drain() {
  std::lock_guard<std::mutex> lock(hub_->mu_);
  std::vector<KvEvent> out(pending_.begin(), pending_.end());
  pending_.clear();
  return out;
}

bool KvSubscription::overflowed() const {
  std::lock_guard<std::mutex> lock(hub_->mu_);
  return overflowed_;
}

}  // namespace sy
