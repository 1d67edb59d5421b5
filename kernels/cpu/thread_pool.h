// A fixed pool of worker threads for data-parallel CPU kernels. One pool per process:
// OpenBLAS keeps its own threads for GEMMs, and the two never run at the same time
// because every parallel_for returns only when all its chunks are done.
#pragma once

#include <condition_variable>
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
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // held by the caller for a whole parallel_for
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t next_ = 0;
  int64_t finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace sy::cpu
