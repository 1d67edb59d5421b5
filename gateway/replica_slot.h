// One in-flight slot of a replica, taken when the core sends an attempt there and given
// back exactly once, whatever ends the attempt: release() with what the attempt did, or
// the destructor. The slot holds where it goes back (the core, which counts it on its
// strand), so no path of a request gives a slot back by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sy::gateway {

// What an attempt did with its slot, for the fleet's bookkeeping.
struct SlotUse {
  bool first_token = false;  // its pending prefill was already counted off
  bool succeeded = false;    // it finished the request (resets the replica's failure run)
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;
};

// Where slots go back: the core (on its strand); tests count.
class SlotReturn {
 public:
  virtual ~SlotReturn() = default;
  // `fleet_generation`: the fleet shape the slot was taken from (a slot of an older shape
  // counts for nothing); `session_key`: the request's session (0: none), whose attempt
  // the router counts off.
  virtual void give_back(size_t replica, uint64_t fleet_generation, int64_t uncached_tokens, uint64_t session_key,
                         const SlotUse& use) = 0;
};

class ReplicaSlot {
 public:
  ReplicaSlot() = default;
  // `work_ahead_tokens`: the prefill work queued on the replica when this request was
  // sent (its pending prefill tokens), which its first token also waited for.
  ReplicaSlot(std::shared_ptr<SlotReturn> to, size_t replica, uint64_t fleet_generation, int64_t uncached_tokens,
              int64_t work_ahead_tokens = 0, uint64_t session_key = 0)
      : to_(std::move(to)),
        replica_(replica),
        generation_(fleet_generation),
        uncached_tokens_(uncached_tokens),
        work_ahead_tokens_(work_ahead_tokens),
        session_key_(session_key) {}
  ReplicaSlot(ReplicaSlot&& o) noexcept { *this = std::move(o); }
  ReplicaSlot& operator=(ReplicaSlot&& o) noexcept;
  ReplicaSlot(const ReplicaSlot&) = delete;
  ReplicaSlot& operator=(const ReplicaSlot&) = delete;
  ~ReplicaSlot() { release(); }

  bool held() const { return to_ != nullptr; }
  size_t replica() const { return replica_; }
  int64_t uncached_tokens() const { return uncached_tokens_; }
  int64_t work_ahead_tokens() const { return work_ahead_tokens_; }
  // Gives the slot back; later calls (and the destructor) do nothing.
  void release(const SlotUse& use = {});

 private:
  std::shared_ptr<SlotReturn> to_;
  size_t replica_ = 0;
  uint64_t generation_ = 0;
  int64_t uncached_tokens_ = 0;
  int64_t work_ahead_tokens_ = 0;
  uint64_t session_key_ = 0;
};

}  // namespace sy::gateway
