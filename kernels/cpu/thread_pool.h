// A fixed pool of worker threads for data-parallel CPU kernels. One pool per process:
// OpenBLAS keeps its own threads for GEMMs, and the two never run at the same time
// because every parallel_for returns only when all its chunks are done.
//
// A decode step of a small model is hundreds of parallel_for calls of tens of
// microseconds each, so a call must cost a few microseconds, not a futex wake-up per
// worker (measured on the 16-core Xeon of the GPU host: a 4 MB bf16 GEMV took 90 µs with
// a mutex and condition variable per call, most of it waking sleeping workers). Workers
// therefore spin on the call word for a while after each call (kSpin) before they sleep,
// unless a yield shows that another thread wanted the core (then they sleep at once),
// and chunks are claimed with one compare-and-swap on a word that holds the call's
// generation beside the next index, so a late worker can never claim a chunk of a call
// other than the one whose function it read.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sy::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(i) for every i in [0, n), spread over the pool and the calling thread;
  // returns when all calls have returned. Callers on several threads (two engines in one
  // process, a tensor-parallel rank and a loader) take turns: one call runs at a time.
  // Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

  // The process-wide pool, sized to the hardware threads (or SWITCHYARD_THREADS).
  static ThreadPool& global();

 private:
  void worker_loop();
  // Claims and runs chunks of the call whose word was `seen`; returns when none is left.
  void run_chunks(uint64_t seen);
  // Waits until the call word's generation differs from that of `seen` (or stop);
  // returns the new word.
  uint64_t await_call(uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // held by the caller for a whole parallel_for
  // The call word: generation in the high 32 bits, the next unclaimed index in the low
  // 32 (kClosed once the call's chunks are all done, before fn_ and n_ change).
  std::atomic<uint64_t> call_{0};
  std::atomic<const std::function<void(int64_t)>*> fn_{nullptr};
  std::atomic<int64_t> n_{0};
  std::atomic<int64_t> finished_{0};
  // Sleeping workers wait on wake_ (a futex word); the caller bumps it only when one sleeps.
  std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace sy::cpu
