#include "gateway/replica_slot.h"

namespace sy::gateway {

ReplicaSlot& ReplicaSlot::operator=(ReplicaSlot&& o) noexcept {
  if (this == &o) return *this;
  release();
  to_ = std::move(o.to_);
  o.to_.reset();
  replica_ = o.replica_;
  generation_ = o.generation_;
  uncached_tokens_ = o.uncached_tokens_;
  work_ahead_tokens_ = o.work_ahead_tokens_;
  session_key_ = o.session_key_;
  return *this;
}

void ReplicaSlot::release(const SlotUse& use) {
  if (!to_) return;
  // Taken out first: give_back may drop the last owner of what holds this slot.
  const std::shared_ptr<SlotReturn> to = std::move(to_);
  to_.reset();
  to->give_back(replica_, generation_, uncached_tokens_, session_key_, use);
}

}  // namespace sy::gateway
