// The CPU kernels' thread pool with callers on several threads at once (two engines in one
// process, tensor-parallel ranks beside a loader): every call runs each of its indices
// exactly once with its own function, whatever the interleaving. Run under ASan in CI,
// where concurrent callers once freed a step's buffer while another call's chunk read it.
#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace sy
