#include "kernels/cpu/thread_pool.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SY_CPU_RELAX() _mm_pause()
#else
#define SY_CPU_RELAX() std::this_thread::yield()
#endif

namespace sy::cpu {
namespace {

constexpr uint64_t kIndexMask = 0xffffffffull;
constexpr uint64_t kClosed = kIndexMask;  // no index is below a call's n
// How long an idle worker spins on the call word before it sleeps: longer than the gaps
// between the parallel calls of one decode step, short enough that an idle process
// gives its cores back soon.
constexpr auto kSpin = std::chrono::microseconds(300);
// A spinning worker yields every 64 pauses; a yield that took longer than this ran
// another thread, so the cores are oversubscribed (several worker processes on two
// cores in CI, each with its pool) and spinning would take their time: sleep at once.
// Measured in CI: real-worker failover tests took 2.4x as long with workers that spun.
constexpr auto kPreempted = std::chrono::microseconds(50);

uint64_t generation(uint64_t word) { return word >> 32; }

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  wake_.fetch_add(1);
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(uint64_t seen) {
  // fn and n are read after the word that announced the call (acquire); a claim below
  // succeeds only while the word still holds this call's generation with an open
  // index, so they are this call's: the caller closes the word before changing them.
  const auto* fn = fn_.load(std::memory_order_acquire);
  const int64_t n = n_.load(std::memory_order_acquire);
  uint64_t word = call_.load(std::memory_order_acquire);
  for (;;) {
    if (generation(word) != generation(seen) || static_cast<int64_t>(word & kIndexMask) >= n) return;
    if (!call_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    (*fn)(static_cast<int64_t>(word & kIndexMask));
    finished_.fetch_add(1, std::memory_order_release);
    word = call_.load(std::memory_order_acquire);
  }
}

uint64_t ThreadPool::await_call(uint64_t seen) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  for (int k = 0;; ++k) {
    const uint64_t word = call_.load(std::memory_order_acquire);
    if (generation(word) != generation(seen) || stop_.load(std::memory_order_relaxed)) return word;
    if ((k & 63) != 63) {
      SY_CPU_RELAX();
      continue;
    }
    const auto before = std::chrono::steady_clock::now();
    if (before < spin_until) {
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() - before < kPreempted) continue;
    }
    // Sleep. The wake word is read before this worker counts itself a sleeper and looks
    // at the call word once more: a caller that published after that look sees the
    // sleeper and bumps the wake word, so the wait returns at once.
    const uint32_t ticket = wake_.load();
    sleepers_.fetch_add(1);
    if (generation(call_.load()) == generation(seen) && !stop_.load()) wake_.wait(ticket);
    sleepers_.fetch_sub(1);
    k = 0;
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = call_.load(std::memory_order_acquire);
  for (;;) {
    seen = await_call(seen);
    if (stop_.load()) return;
    run_chunks(seen);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  const std::lock_guard<std::mutex> turn(call_mu_);
  if (n == 1 || workers_.empty()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  if (n >= static_cast<int64_t>(kClosed)) throw std::length_error("ThreadPool::parallel_for: too many chunks");
  const uint64_t next = (generation(call_.load()) + 1) << 32;
  fn_.store(&fn, std::memory_order_release);
  n_.store(n, std::memory_order_release);
  finished_.store(0, std::memory_order_relaxed);
  call_.store(next);  // the call is open: its generation and index 0
  if (sleepers_.load() > 0) {
    wake_.fetch_add(1);
    wake_.notify_all();
  }
  run_chunks(next);
  for (int k = 0; finished_.load(std::memory_order_acquire) != n; ++k) {
    if (k < 4096) {
      SY_CPU_RELAX();
    } else {
      std::this_thread::yield();  // a worker holding the last chunk was descheduled
    }
  }
  call_.store(next | kClosed);
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    if (const char* env = std::getenv("SWITCHYARD_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }());
  return pool;
}

}  // namespace sy::cpu
