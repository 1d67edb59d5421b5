#include "policy/admission_queue.h"

#include <algorithm>

namespace sy::policy {

bool AdmissionQueue::push(QueuedRequest r) {
  const int cls = static_cast<int>(r.priority);
  if (classes_[cls].count >= options_.capacity[cls]) return false;
  r.enqueued_at = clock_.now_s();
  r.cost = std::max<int64_t>(1, r.cost);
  enqueue(cls, std::move(r));
  return true;
}

void AdmissionQueue::enqueue(int cls, QueuedRequest r) {
  Class& c = classes_[cls];
  Key& k = c.keys[r.api_key];
  if (k.items.empty()) c.active.push_back(r.api_key);
  index_[r.id] = {cls, r.api_key};
  // Arrival order within a key, also for a request promoted by aging.
  auto pos = k.items.end();
  while (pos != k.items.begin() && std::prev(pos)->enqueued_at > r.enqueued_at) --pos;
  k.items.insert(pos, std::move(r));
  ++c.count;
}

QueuedRequest AdmissionQueue::dequeue_front(int cls, const std::string& key) {
  Class& c = classes_[cls];
  Key& k = c.keys[key];
  QueuedRequest r = std::move(k.items.front());
  k.items.pop_front();
  --c.count;
  index_.erase(r.id);
  if (k.items.empty()) {
    c.active.remove(key);
    c.keys.erase(key);
  }
  return r;
}

// Promotes requests that waited long enough: `aging_s` per class step above their own.
// Each key's queue is FIFO, so only its front can be the first to age.
void AdmissionQueue::age() {
  const double now = clock_.now_s();
  for (int cls = 2; cls >= 1; --cls) {  // batch first, so a request can climb two classes at once
    Class& c = classes_[cls];
    const std::list<std::string> keys = c.active;
    for (const std::string& key : keys) {
      while (c.keys.count(key) && !c.keys[key].items.empty()) {
        const QueuedRequest& front = c.keys[key].items.front();
        const int own = static_cast<int>(front.priority);
        if (now - front.enqueued_at < options_.aging_s * (own - (cls - 1))) break;
        enqueue(cls - 1, dequeue_front(cls, key));
      }
    }
  }
}

std::optional<QueuedRequest> AdmissionQueue::pop() {
  age();
  for (int cls = 0; cls < 3; ++cls) {
    Class& c = classes_[cls];
    if (c.count == 0) continue;
    // Deficit round-robin: the key at the front spends its deficit; when its next
    // request costs more than it has, it gets a quantum and goes to the back.
    for (;;) {
      const std::string key = c.active.front();
      Key& k = c.keys[key];
      if (k.deficit >= k.items.front().cost) {  // the key keeps its place while its deficit lasts
        k.deficit -= k.items.front().cost;
        return dequeue_front(cls, key);
      }
      k.deficit += options_.quantum;
      c.active.splice(c.active.end(), c.active, c.active.begin());
    }
  }
  return std::nullopt;
}

bool AdmissionQueue::remove(uint64_t id) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  const auto [cls, key] = it->second;
  Class& c = classes_[cls];
  Key& k = c.keys[key];
  auto pos = std::find_if(k.items.begin(), k.items.end(), [&](const QueuedRequest& r) { return r.id == id; });
  k.items.erase(pos);
  --c.count;
  index_.erase(id);
  if (k.items.empty()) {
    c.active.remove(key);
    c.keys.erase(key);
  }
  return true;
}

size_t AdmissionQueue::size(PriorityClass c) const { return classes_[static_cast<int>(c)].count; }

double AdmissionQueue::oldest_wait_s(PriorityClass pc) const {
  const Class& c = classes_[static_cast<int>(pc)];
  double oldest = clock_.now_s();
  for (const auto& [key, k] : c.keys)
    if (!k.items.empty()) oldest = std::min(oldest, k.items.front().enqueued_at);
  return clock_.now_s() - oldest;
}

}  // namespace sy::policy
