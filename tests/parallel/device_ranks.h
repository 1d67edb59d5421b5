// What the device communicator tests share (nccl, peer, local): the device count, each
// rank's random values, one thread per rank, and the refusals every kind makes before it
// launches anything.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <barrier>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "worker/parallel/communicator.h"

namespace sy::parallel::testing {

inline int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

inline std::vector<float> rank_values(int rank, size_t n, int salt = 0) {
  std::mt19937 rng(1000 * salt + 100 + rank);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Runs body(rank's communicator, meet) on one thread per rank, its device current. Ranks
// finish their setup (cudaDeviceSynchronize) and call meet() before their first
// collective, and again before freeing anything: a call that waits for the whole device
// (cudaFree) must not wait for a peer's kernel that waits for this rank.
inline void run_ranks(CommunicatorGroup& group,
                      const std::function<void(Communicator&, const std::function<void()>&)>& body) {
  std::barrier sync(static_cast<std::ptrdiff_t>(group.size()));
  const std::function<void()> meet = [&sync] { sync.arrive_and_wait(); };
  std::vector<std::thread> threads;
  for (auto& comm : group)
    threads.emplace_back([&body, &meet, c = comm.get()] {
      cudaSetDevice(c->device());
      body(*c, meet);
    });
  for (auto& t : threads) t.join();
}

// A bad argument is refused before anything is launched, so the other rank is not left
// waiting; abort() on one rank fails the next call on another.
inline void expect_refusals_before_launch(CommunicatorGroup& group) {
  EXPECT_EQ(group[0]->all_reduce_sum(nullptr, 4).code, CommCode::kInvalidArgument);
  EXPECT_EQ(group[0]->broadcast(nullptr, 0, 5).code, CommCode::kInvalidArgument);
  group[0]->abort();
  float* unused = nullptr;
  EXPECT_EQ(group[1]->all_reduce_sum(unused, 0).code, CommCode::kAborted);
}

}  // namespace sy::parallel::testing
