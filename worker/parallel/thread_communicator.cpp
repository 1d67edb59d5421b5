// Every collective is two rendezvous. Each rank publishes its call (operation, count,
// buffers) and arrives; after the first rendezvous every rank sees every rank's buffers,
// checks that the calls agree, and does its share of the work directly on the other
// ranks' memory; the second rendezvous keeps any rank from returning (and reusing its
// buffers or its slot) while another still reads or writes them.
//
// The all-reduce splits the vector into `size` disjoint slices; rank r sums slice r over
// all ranks in rank order and writes the sum into every rank's buffer. Each element is
// therefore summed once, by one thread, in one order, whoever arrives first.
#include "worker/parallel/thread_communicator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace sy::parallel {
namespace {

enum class Op { kAllReduce, kAllGather, kBroadcast, kBarrier };

const char* op_name(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "all_reduce_sum";
    case Op::kAllGather:
      return "all_gather";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kBarrier:
      return "barrier";
  }
  return "?";
}

// One rank's call, as the other ranks see it.
struct Call {
  Op op = Op::kBarrier;
  size_t n = 0;
  int root = 0;
  const float* send = nullptr;  // all_gather's input
  float* data = nullptr;        // all_reduce/broadcast's buffer, all_gather's output
};

struct Range {
  uintptr_t begin, end;
};

bool overlaps(const Range& a, const Range& b) {
  return a.begin < b.end && b.begin < a.end;
}

Range range_of(const float* p, size_t n) {
  auto begin = reinterpret_cast<uintptr_t>(p);
  return {begin, begin + n * sizeof(float)};
}

// The state one group's ranks share.
class Rendezvous {
 public:
  Rendezvous(int size, std::chrono::milliseconds timeout)
      // A year stands for "forever" without overflowing now() + timeout.
      : size_(size),
        timeout_(std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365))),
        calls_(size) {}

  int size() const { return size_; }
  Call& call(int rank) { return calls_[rank]; }
  const std::vector<Call>& calls() const { return calls_; }

  // Returns once all ranks have arrived (kOk), or the group broke (kAborted), or this
  // rank waited `timeout_` (kTimeout; the group is then broken for everyone).
  CommCode arrive_and_wait() {
    std::unique_lock lock(mu_);
    if (broken_) return CommCode::kAborted;
    const uint64_t generation = generation_.load(std::memory_order_relaxed);
    if (++arrived_ == size_) {
      arrived_ = 0;
      generation_.store(generation + 1, std::memory_order_release);
      lock.unlock();
      cv_.notify_all();
      return CommCode::kOk;
    }
    lock.unlock();
    for (int spin = 0; spin < kSpins; ++spin) {
      if (generation_.load(std::memory_order_acquire) != generation) return CommCode::kOk;
      std::this_thread::yield();
    }
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (generation_ == generation && !broken_) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == generation &&
          !broken_) {
        // The arrival count now includes a rank that left; no later rendezvous of this
        // group could be trusted, so it is broken for all.
        broken_ = true;
        lock.unlock();
        cv_.notify_all();
        return CommCode::kTimeout;
      }
    }
    return generation_ != generation ? CommCode::kOk : CommCode::kAborted;
  }

  void abort() {
    {
      std::lock_guard lock(mu_);
      broken_ = true;
    }
    cv_.notify_all();
  }

 private:
  // Yields before sleeping on the condition variable: the ranks of a step arrive within
  // microseconds of each other, and a wake-up through the futex costs tens of them (8 KB
  // all-reduce, 4 ranks on 2 cores: 46 us sleeping at once, 23 us after 200 yields).
  static constexpr int kSpins = 200;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::atomic<uint64_t> generation_{0};
  bool broken_ = false;
  // calls_[r] is written by rank r only before its first rendezvous of a collective
  // and read by all only between the two: the rendezvous order those accesses.
  std::vector<Call> calls_;
};

CommStatus status_of(CommCode code, Op op) {
  if (code == CommCode::kOk) return CommStatus::success();
  std::string what = std::string(op_name(op)) + ": ";
  if (code == CommCode::kTimeout) what += "timed out waiting for the other ranks; group broken";
  if (code == CommCode::kAborted) what += "the group was aborted";
  return {code, what};
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Rendezvous> rendezvous, int rank)
      : rendezvous_(std::move(rendezvous)), rank_(rank) {}

  std::string_view kind() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return rendezvous_->size(); }
  MemoryKind memory() const override { return MemoryKind::kHost; }

  CommStatus all_reduce_sum(float* data, size_t n, Stream) override {
    return run({Op::kAllReduce, n, 0, nullptr, data});
  }
  CommStatus all_gather(const float* send, size_t n, float* recv, Stream) override {
    return run({Op::kAllGather, n, 0, send, recv});
  }
  CommStatus broadcast(float* data, size_t n, int root, Stream) override {
    return run({Op::kBroadcast, n, root, nullptr, data});
  }
  CommStatus barrier(Stream) override { return run({Op::kBarrier, 0, 0, nullptr, nullptr}); }
  void abort() override { rendezvous_->abort(); }

 private:
  CommStatus run(const Call& call) {
    rendezvous_->call(rank_) = call;
    CommCode code = rendezvous_->arrive_and_wait();
    if (code != CommCode::kOk) return status_of(code, call.op);
    // Every rank reaches the same verdict from the same published calls.
    std::string error = check_calls();
    if (error.empty()) work(call);
    code = rendezvous_->arrive_and_wait();
    if (code != CommCode::kOk) return status_of(code, call.op);
    if (!error.empty())
      return {CommCode::kInvalidArgument, std::string(op_name(call.op)) + ": " + error};
    return CommStatus::success();
  }

  // Empty when the ranks' calls agree and their buffers are usable.
  std::string check_calls() const {
    const std::vector<Call>& calls = rendezvous_->calls();
    const Call& first = calls[0];
    const int size = static_cast<int>(calls.size());
    for (int r = 1; r < size; ++r) {
      const Call& c = calls[r];
      if (c.op != first.op) {
        return "rank 0 called " + std::string(op_name(first.op)) + " but rank " +
               std::to_string(r) + " called " + op_name(c.op);
      }
      if (c.n != first.n) {
        return "rank 0 passed n = " + std::to_string(first.n) + " but rank " + std::to_string(r) +
               " passed n = " + std::to_string(c.n);
      }
      if (c.root != first.root) {
        return "rank 0 passed root " + std::to_string(first.root) + " but rank " +
               std::to_string(r) + " passed root " + std::to_string(c.root);
      }
    }
    if (first.op == Op::kBarrier || first.n == 0) return {};
    if (first.op == Op::kBroadcast && (first.root < 0 || first.root >= size)) {
      return "root " + std::to_string(first.root) + " is not a rank of a group of " +
             std::to_string(size);
    }
    // Written ranges: every rank's data (all_gather: size*n floats); read ranges: the
    // sends. No written range may overlap another rank's written range or any send,
    // or the result would depend on timing.
    std::vector<Range> written, read;
    for (int r = 0; r < size; ++r) {
      const Call& c = calls[r];
      if (c.data == nullptr || (c.op == Op::kAllGather && c.send == nullptr)) {
        return "rank " + std::to_string(r) +
               " passed a null buffer with n = " + std::to_string(c.n);
      }
      written.push_back(range_of(c.data, c.op == Op::kAllGather ? c.n * size : c.n));
      if (c.op == Op::kAllGather) read.push_back(range_of(c.send, c.n));
    }
    for (int a = 0; a < size; ++a) {
      for (int b = a + 1; b < size; ++b) {
        if (overlaps(written[a], written[b])) {
          return "the buffers of ranks " + std::to_string(a) + " and " + std::to_string(b) +
                 " overlap";
        }
      }
      for (int b = 0; b < static_cast<int>(read.size()); ++b) {
        // In place, as NCCL allows: rank a's send is its own slot of its recv.
        const bool in_place = a == b && calls[a].send == calls[a].data + a * first.n;
        if (!in_place && overlaps(written[a], read[b])) {
          return "rank " + std::to_string(a) + "'s recv overlaps rank " + std::to_string(b) +
                 "'s send";
        }
      }
    }
    return {};
  }

  void work(const Call& call) {
    const std::vector<Call>& calls = rendezvous_->calls();
    const int size = static_cast<int>(calls.size());
    const size_t n = call.n;
    switch (call.op) {
      case Op::kAllReduce: {
        const size_t begin = n * rank_ / size;
        const size_t end = n * (rank_ + 1) / size;
        reduce_slice(calls, begin, end);
        break;
      }
      case Op::kAllGather:
        for (int r = 0; r < size; ++r) {
          if (n > 0 && call.data + r * n != calls[r].send) {
            std::memcpy(call.data + r * n, calls[r].send, n * sizeof(float));
          }
        }
        break;
      case Op::kBroadcast:
        if (rank_ != call.root && n > 0) {
          std::memcpy(call.data, calls[call.root].data, n * sizeof(float));
        }
        break;
      case Op::kBarrier:
        break;
    }
  }

  // Sums [begin, end) over the ranks in rank order, ((r0 + r1) + r2) + ..., and stores
  // the sum in every rank's buffer. Blocks of kBlock elements keep the partial sums in
  // cache and let the adds vectorize across elements; each element's order is fixed.
  static void reduce_slice(const std::vector<Call>& calls, size_t begin, size_t end) {
    constexpr size_t kBlock = 1024;
    alignas(64) float sum[kBlock];
    const size_t size = calls.size();
    for (size_t lo = begin; lo < end; lo += kBlock) {
      const size_t len = std::min(kBlock, end - lo);
      std::memcpy(sum, calls[0].data + lo, len * sizeof(float));
      for (size_t r = 1; r < size; ++r) {
        const float* in = calls[r].data + lo;
        for (size_t i = 0; i < len; ++i) sum[i] += in[i];
      }
      for (size_t r = 0; r < size; ++r) std::memcpy(calls[r].data + lo, sum, len * sizeof(float));
    }
  }

  std::shared_ptr<Rendezvous> rendezvous_;
  const int rank_;
};

}  // namespace

CommunicatorGroup make_thread_group(int size, std::chrono::milliseconds timeout) {
  if (size < 1) {
    throw CommunicatorError("threads communicator: group size must be at least 1, got " +
                            std::to_string(size));
  }
  auto rendezvous = std::make_shared<Rendezvous>(size, timeout);
  CommunicatorGroup group;
  for (int r = 0; r < size; ++r)
    group.push_back(std::make_unique<ThreadCommunicator>(rendezvous, r));
  return group;
}

}  // namespace sy::parallel
