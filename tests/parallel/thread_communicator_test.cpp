// The threads communicator against references computed on one thread: all-reduce equal
// bit-for-bit to the rank-order sum on every rank, gather and broadcast exact, over
// hundreds of mixed collectives back to back with random delays, so that which thread
// runs late varies; and its failures (disagreeing calls, timeout, abort) as values.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "worker/parallel/communicator.h"
#include "worker/parallel/thread_communicator.h"

namespace sy::parallel {
namespace {

using namespace std::chrono_literals;

// Runs body(comm) on one thread per rank and waits for all.
void run_ranks(CommunicatorGroup& group, const std::function<void(Communicator&)>& body) {
  std::vector<std::thread> threads;
  for (auto& comm : group) threads.emplace_back([&body, c = comm.get()] { body(*c); });
  for (auto& t : threads) t.join();
}

// Values over twenty binades, so that the order of a sum changes its rounding.
std::vector<float> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

// ((in[0] + in[1]) + in[2]) + ...
std::vector<float> rank_order_sum(const std::vector<std::vector<float>>& in) {
  std::vector<float> sum = in[0];
  for (size_t r = 1; r < in.size(); ++r) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += in[r][i];
  }
  return sum;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void random_delay(std::mt19937_64& rng) {
  const int pick = static_cast<int>(rng() % 10);
  if (pick < 3) {
    std::this_thread::yield();
  } else if (pick < 5) {
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
  }
}

TEST(ThreadCommunicator, RankOrderMattersForTheseInputs) {
  // Guards the tests below: with these inputs another summation order gives other bits,
  // so comparing bit-for-bit with the rank-order sum can fail.
  std::mt19937_64 rng(7);
  std::vector<std::vector<float>> in;
  for (int r = 0; r < 4; ++r) in.push_back(random_values(rng, 4096));
  std::vector<std::vector<float>> reversed(in.rbegin(), in.rend());
  EXPECT_FALSE(same_bits(rank_order_sum(in), rank_order_sum(reversed)));
}

enum class Op { kAllReduce, kAllGather, kBroadcast, kBarrier };

// One collective of the stress sequence, with its inputs and expected outputs.
struct Step {
  Op op = Op::kAllReduce;
  size_t n = 0;
  int root = 0;
  std::vector<std::vector<float>> in;  // per rank
  std::vector<float> expected;         // the same on every rank
};

std::vector<Step> make_steps(int size, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t small_ns[] = {0, 1, 2, 3, 5, 7, 31, 64, 257, 1000, 1023, 1024, 1025, 4097, 20000};
  std::vector<Step> steps(count);
  for (int k = 0; k < count; ++k) {
    Step& s = steps[k];
    s.op = static_cast<Op>(rng() % 4);
    s.n = small_ns[rng() % std::size(small_ns)];
    // A few large messages: a 1M-float all-reduce and a 128K-float gather.
    if (k == count / 4 || k == 3 * count / 4) {
      s.op = Op::kAllReduce;
      s.n = size_t{1} << 20;
    }
    if (k == count / 2) {
      s.op = Op::kAllGather;
      s.n = size_t{1} << 17;
    }
    if (s.op == Op::kBarrier) s.n = 0;
    s.root = static_cast<int>(rng() % size);
    for (int r = 0; r < size; ++r) s.in.push_back(random_values(rng, s.n));
    switch (s.op) {
      case Op::kAllReduce:
        s.expected = rank_order_sum(s.in);
        break;
      case Op::kAllGather:
        for (int r = 0; r < size; ++r)
          s.expected.insert(s.expected.end(), s.in[r].begin(), s.in[r].end());
        break;
      case Op::kBroadcast:
        s.expected = s.in[s.root];
        break;
      case Op::kBarrier:
        break;
    }
  }
  return steps;
}

class ThreadCommunicatorSizes : public testing::TestWithParam<int> {};

TEST_P(ThreadCommunicatorSizes, CollectivesMatchReferenceUnderRandomTiming) {
  const int size = GetParam();
  const int count = 200;
  const std::vector<Step> steps = make_steps(size, count, 1000 + size);
  CommunicatorGroup group = make_thread_group(size);
  ASSERT_EQ(group.size(), static_cast<size_t>(size));
  std::vector<std::string> failure(size);  // each rank's first failure

  run_ranks(group, [&](Communicator& comm) {
    const int rank = comm.rank();
    std::mt19937_64 rng(rank * 7919 + size);
    std::vector<float> buf;
    for (int k = 0; k < count; ++k) {  // on after a failure: the other ranks wait for this one
      const Step& s = steps[k];
      random_delay(rng);
      CommStatus status;
      switch (s.op) {
        case Op::kAllReduce:
          buf = s.in[rank];
          status = comm.all_reduce_sum(buf.data(), s.n);
          break;
        case Op::kAllGather:
          buf.assign(s.n * size, std::numeric_limits<float>::quiet_NaN());  // poison
          status = comm.all_gather(s.in[rank].data(), s.n, buf.data());
          break;
        case Op::kBroadcast:
          buf = rank == s.root ? s.in[rank] : std::vector<float>(s.n, std::nanf(""));
          status = comm.broadcast(buf.data(), s.n, s.root);
          break;
        case Op::kBarrier:
          buf.clear();
          status = comm.barrier();
          break;
      }
      if (!failure[rank].empty()) continue;
      if (!status.ok()) {
        failure[rank] = "step " + std::to_string(k) + ": " + status.message;
      } else if (!same_bits(buf, s.expected)) {
        failure[rank] = "step " + std::to_string(k) + " (op " + std::to_string(int(s.op)) + ", n " +
                        std::to_string(s.n) + "): result differs from the reference";
      }
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(failure[r], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Sizes, ThreadCommunicatorSizes, testing::Values(1, 2, 3, 4, 8));

TEST(ThreadCommunicator, SumIsTheSameWhicheverRankIsLate) {
  const int size = 4;
  const size_t n = 10007;
  std::mt19937_64 rng(11);
  std::vector<std::vector<float>> in;
  for (int r = 0; r < size; ++r) in.push_back(random_values(rng, n));
  const std::vector<float> expected = rank_order_sum(in);
  CommunicatorGroup group = make_thread_group(size);
  for (int late = 0; late < size; ++late) {
    std::vector<std::vector<float>> out(size);
    run_ranks(group, [&](Communicator& comm) {
      out[comm.rank()] = in[comm.rank()];
      if (comm.rank() == late) std::this_thread::sleep_for(5ms);
      EXPECT_TRUE(comm.all_reduce_sum(out[comm.rank()].data(), n).ok());
    });
    for (int r = 0; r < size; ++r)
      EXPECT_TRUE(same_bits(out[r], expected)) << "late " << late << " rank " << r;
  }
}

TEST(ThreadCommunicator, AllGatherInPlace) {
  const int size = 3;
  const size_t n = 5;
  CommunicatorGroup group = make_thread_group(size);
  std::vector<std::vector<float>> recv(size, std::vector<float>(n * size, -1.0f));
  run_ranks(group, [&](Communicator& comm) {
    float* mine = recv[comm.rank()].data() + comm.rank() * n;
    for (size_t i = 0; i < n; ++i) mine[i] = float(comm.rank() * 100 + i);
    EXPECT_TRUE(comm.all_gather(mine, n, recv[comm.rank()].data()).ok());
  });
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < n * size; ++i) EXPECT_EQ(recv[r][i], float((i / n) * 100 + i % n));
  }
}

// Runs one collective per rank, call(rank, comm), and returns each rank's status.
std::vector<CommStatus> run_once(CommunicatorGroup& group,
                                 const std::function<CommStatus(Communicator&)>& call) {
  std::vector<CommStatus> statuses(group.size());
  run_ranks(group, [&](Communicator& comm) { statuses[comm.rank()] = call(comm); });
  return statuses;
}

void expect_all(const std::vector<CommStatus>& statuses, CommCode code) {
  for (size_t r = 0; r < statuses.size(); ++r) {
    EXPECT_EQ(statuses[r].code, code) << "rank " << r << ": " << statuses[r].message;
    if (code != CommCode::kOk) {
      EXPECT_FALSE(statuses[r].message.empty());
    }
  }
}

TEST(ThreadCommunicator, DisagreeingCallsFailOnEveryRankAndTheGroupGoesOn) {
  CommunicatorGroup group = make_thread_group(3);
  std::vector<std::vector<float>> buf(3, std::vector<float>(16, 1.0f));
  // Different counts.
  expect_all(run_once(group,
                      [&](Communicator& c) {
                        return c.all_reduce_sum(buf[c.rank()].data(), c.rank() == 2 ? 15 : 16);
                      }),
             CommCode::kInvalidArgument);
  // Different operations.
  expect_all(run_once(group,
                      [&](Communicator& c) {
                        return c.rank() == 1 ? c.broadcast(buf[1].data(), 16, 0)
                                             : c.all_reduce_sum(buf[c.rank()].data(), 16);
                      }),
             CommCode::kInvalidArgument);
  // A root outside the group; different roots.
  expect_all(
      run_once(group, [&](Communicator& c) { return c.broadcast(buf[c.rank()].data(), 16, 3); }),
      CommCode::kInvalidArgument);
  expect_all(
      run_once(group,
               [&](Communicator& c) { return c.broadcast(buf[c.rank()].data(), 16, c.rank()); }),
      CommCode::kInvalidArgument);
  // A null buffer on one rank; two ranks sharing one buffer.
  expect_all(run_once(group,
                      [&](Communicator& c) {
                        return c.all_reduce_sum(c.rank() == 0 ? nullptr : buf[c.rank()].data(), 16);
                      }),
             CommCode::kInvalidArgument);
  expect_all(run_once(group,
                      [&](Communicator& c) {
                        return c.all_reduce_sum(buf[c.rank() == 2 ? 1 : c.rank()].data(), 16);
                      }),
             CommCode::kInvalidArgument);
  // Nothing was written, and the group still works.
  for (auto& b : buf) EXPECT_EQ(b, std::vector<float>(16, 1.0f));
  expect_all(
      run_once(group, [&](Communicator& c) { return c.all_reduce_sum(buf[c.rank()].data(), 16); }),
      CommCode::kOk);
  for (auto& b : buf) EXPECT_EQ(b, std::vector<float>(16, 3.0f));
}

TEST(ThreadCommunicator, MissingRankTimesOutAndBreaksTheGroup) {
  CommunicatorGroup group = make_thread_group(2, 50ms);
  float x = 1.0f;
  const auto start = std::chrono::steady_clock::now();
  CommStatus status = group[0]->all_reduce_sum(&x, 1);
  EXPECT_EQ(status.code, CommCode::kTimeout) << status.message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  // The late rank, and every later call, find the group broken at once.
  EXPECT_EQ(group[1]->all_reduce_sum(&x, 1).code, CommCode::kAborted);
  EXPECT_EQ(group[0]->barrier().code, CommCode::kAborted);
  EXPECT_EQ(x, 1.0f);
}

TEST(ThreadCommunicator, AbortReleasesWaitingRanks) {
  CommunicatorGroup group = make_thread_group(3);  // default timeout: minutes
  std::vector<CommStatus> statuses(2);
  std::vector<std::thread> waiting;
  for (int r = 0; r < 2; ++r) {
    waiting.emplace_back([&, r] {
      float x = 1.0f;
      statuses[r] = group[r]->all_reduce_sum(&x, 1);
    });
  }
  std::this_thread::sleep_for(20ms);
  group[2]->abort();  // rank 2's owner gives up instead of calling
  for (auto& t : waiting) t.join();
  expect_all(statuses, CommCode::kAborted);
  EXPECT_EQ(group[2]->barrier().code, CommCode::kAborted);
  group[0]->abort();  // again: harmless
}

TEST(ThreadCommunicator, SingleRankGroup) {
  CommunicatorGroup group = make_thread_group(1);
  Communicator& c = *group[0];
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.kind(), "threads");
  EXPECT_EQ(c.memory(), MemoryKind::kHost);
  EXPECT_EQ(c.device(), -1);
  std::vector<float> v = {1.5f, -2.0f}, out(2, 0.0f);
  EXPECT_TRUE(c.all_reduce_sum(v.data(), 2).ok());
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_TRUE(c.all_gather(v.data(), 2, out.data()).ok());
  EXPECT_EQ(out, v);
  EXPECT_TRUE(c.broadcast(v.data(), 2, 0).ok());
  EXPECT_TRUE(c.barrier().ok());
}

TEST(CommunicatorFactory, ThreadsByName) {
  CommunicatorOptions options;
  options.size = 3;
  CommunicatorGroup group = create_communicators("threads", options);
  ASSERT_EQ(group.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(group[r]->rank(), r);
    EXPECT_EQ(group[r]->size(), 3);
    EXPECT_EQ(group[r]->kind(), "threads");
  }
}

TEST(CommunicatorFactory, RefusesUnknownKindsAndSizes) {
  CommunicatorOptions options;
  options.size = 2;
  try {
    create_communicators("mpi", options);
    FAIL() << "no error";
  } catch (const CommunicatorError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown communicator kind \"mpi\""), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
  }
  options.size = 0;
  EXPECT_THROW(create_communicators("threads", options), CommunicatorError);
  EXPECT_THROW(make_thread_group(-1), CommunicatorError);
  const std::vector<std::string> kinds = communicator_kinds();
  EXPECT_EQ(kinds.front(), "threads");
#ifndef SY_HAVE_NCCL
  options.size = 2;
  EXPECT_THROW(create_communicators("nccl", options), CommunicatorError);
#endif
}

}  // namespace
}  // namespace sy::parallel
