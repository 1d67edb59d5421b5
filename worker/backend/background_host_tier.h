// A KV host tier allocated on a thread of its own (BackendOptions::kv_host_in_background),
// so that the backend, and the worker with it, is ready without waiting for it: a tier of
// 16 GiB of pinned memory per replica went with start-ups of 38-49 s for four replicas
// on one H200 against 12-14 s without (docs/PERFORMANCE.md). The engine takes it into use
// between steps once allocated (Backend::take_host_tier). A tier wanted at once runs the
// same way, waited for and taken by create_backend before it returns. The ranks of a
// context-parallel group share one tier per tensor-parallel index: one allocation, a
// shared future, each rank taking it (share_host_tiers, group_backend.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <utility>

namespace sy {

// `Pool` owns the tier's memory (a shared pointer whose deleter frees it).
template <class Pool>
class BackgroundHostTier {
 public:
  // Starts allocating `blocks` slots with `allocate`, on a thread of its own.
  void start(int32_t blocks, std::function<Pool()> allocate) {
    start(blocks, std::async(std::launch::async, std::move(allocate)).share());
  }
  // The same with an allocation already started, shared with other ranks.
  void start(int32_t blocks, std::shared_future<Pool> allocation) {
    blocks_ = blocks;
    pending_ = std::move(allocation);
  }
  // Once allocated, and only once: sets `pool` to the memory, `blocks` to its slots, and
  // returns them. 0 (and both left as they are) while it is still being allocated, after
  // it was taken, or without one; an allocation's error is thrown here, once.
  int32_t take(Pool& pool, int32_t& blocks) {
    if (!ready()) return 0;
    const std::shared_future<Pool> done = std::move(pending_);
    pool = done.get();
    return blocks = blocks_;
  }
  // True once the allocation has ended and take() has not taken it yet.
  bool ready() const {
    return pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  // Blocks until the allocation has ended (it is then taken at the next take()).
  void wait() const {
    if (pending_.valid()) pending_.wait();
  }

 private:
  int32_t blocks_ = 0;
  // The last reference to an allocation waits for it as it goes, then frees an untaken pool.
  std::shared_future<Pool> pending_;
};

}  // namespace sy
