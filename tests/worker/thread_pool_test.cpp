// The CPU kernels' thread pool with callers on several threads at once (two engines in one
// process, tensor-parallel ranks beside a loader): every call runs each of its indices
// exactly once with its own function, whatever the interleaving. Run under ASan in CI,
// where concurrent callers once freed a step's buffer while another call's chunk read it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace sy {
namespace {

TEST(ThreadPool, ConcurrentCallersEachRunTheirOwnIndicesOnce) {
  cpu::ThreadPool pool(4);
  constexpr int kCallers = 3, kCalls = 300;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int k = 0; k < kCalls; ++k) {
        const int64_t n = 1 + (c * 7 + k) % 37;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1 + c); });
        for (const auto& h : hits)
          if (h.load() != 1 + c) ++wrong;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Workers spin for a while after a call, then sleep: calls that come after they slept
// must wake them (no lost wake-up: a hang here), and calls back to back, each claimed
// by whichever thread is fastest, must still run every index once.
TEST(ThreadPool, CallsAfterWorkersSleptAndCallsBackToBack) {
  for (int round = 0; round < 4; ++round) {
    cpu::ThreadPool pool(1 + round);
    for (int k = 0; k < 6; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(k % 2 == 0 ? 3 : 0));
      std::vector<std::atomic<int>> hits(64);
      pool.parallel_for(64, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
    std::atomic<int64_t> sum{0};
    for (int k = 0; k < 20000; ++k) pool.parallel_for(2 + k % 7, [&](int64_t i) { sum.fetch_add(i + 1); });
    int64_t want = 0;
    for (int k = 0; k < 20000; ++k) want += (2 + k % 7) * (3 + k % 7) / 2;
    EXPECT_EQ(sum.load(), want);
  }  // the pool's destructor stops workers that spin or sleep
}

}  // namespace
}  // namespace sy
