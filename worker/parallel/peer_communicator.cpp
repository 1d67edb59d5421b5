#include "worker/parallel/peer_communicator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <memory>
#include <string>

#include "kernels/cuda/peer_collective.cuh"
#include "worker/parallel/thread_communicator.h"

namespace sy::parallel {
namespace {

// The device memory of a group: per rank a staging buffer, a flag array and the
// per-CTA launch counters, each on the rank's device.
class PeerGroup {
 public:
  PeerGroup(std::vector<int> devices, size_t staging_floats) : devices_(std::move(devices)), capacity_(staging_floats) {}

  ~PeerGroup() {
    int current = 0;
    cudaGetDevice(&current);
    for (size_t r = 0; r < devices_.size(); ++r) {
      cudaSetDevice(devices_[r]);
      for (void* p : {static_cast<void*>(staging_[r]), static_cast<void*>(flags_[r]), static_cast<void*>(counters_[r])})
        if (p) cudaFree(p);
      for (cudaEvent_t e : {ready_[r], done_[r]})
        if (e) cudaEventDestroy(e);
    }
    cudaSetDevice(current);
  }

  // Allocates and zeroes every rank's memory; the error of the first call that failed.
  cudaError_t allocate() {
    const size_t n = devices_.size();
    staging_.assign(n, nullptr);
    flags_.assign(n, nullptr);
    counters_.assign(n, nullptr);
    ready_.assign(n, nullptr);
    done_.assign(n, nullptr);
    int current = 0;
    cudaGetDevice(&current);
    cudaError_t e = cudaSuccess;
    for (size_t r = 0; r < n && e == cudaSuccess; ++r) {
      e = cudaSetDevice(devices_[r]);
      if (e == cudaSuccess) e = cudaMalloc(&staging_[r], std::max<size_t>(capacity_, 1) * sizeof(float));
      if (e == cudaSuccess) e = cudaMalloc(&flags_[r], cuda::kPeerFlagWords * sizeof(uint32_t));
      if (e == cudaSuccess) e = cudaMemset(flags_[r], 0, cuda::kPeerFlagWords * sizeof(uint32_t));
      if (e == cudaSuccess) e = cudaMalloc(&counters_[r], cuda::kPeerMaxBlocks * sizeof(uint32_t));
      if (e == cudaSuccess) e = cudaMemset(counters_[r], 0, cuda::kPeerMaxBlocks * sizeof(uint32_t));
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ready_[r], cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&done_[r], cudaEventDisableTiming);
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaSetDevice(current);
    return e;
  }

  // The kernel arguments of rank `rank`, without the call's own fields.
  cuda::PeerCollectiveArgs args(int rank) const {
    cuda::PeerCollectiveArgs a;
    a.rank = rank;
    a.size = size();
    for (int j = 0; j < a.size; ++j) {
      a.staging[j] = staging_[static_cast<size_t>(j)];
      a.flags[j] = flags_[static_cast<size_t>(j)];
    }
    a.counters = counters_[static_cast<size_t>(rank)];
    return a;
  }

  // The events of the local kind: rank r's input is staged (ready) / rank r has read
  // every staging buffer (done).
  cudaEvent_t ready(int rank) const { return ready_[static_cast<size_t>(rank)]; }
  cudaEvent_t done(int rank) const { return done_[static_cast<size_t>(rank)]; }
  float* staging(int rank) const { return staging_[static_cast<size_t>(rank)]; }
  int size() const { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_[static_cast<size_t>(rank)]; }
  size_t capacity() const { return capacity_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  void abort() { aborted_.store(true, std::memory_order_release); }

 private:
  std::vector<int> devices_;
  size_t capacity_;
  std::vector<float*> staging_;
  std::vector<uint32_t*> flags_, counters_;
  std::vector<cudaEvent_t> ready_, done_;
  std::atomic<bool> aborted_{false};
};

// Both kinds: the calls, their checks and the split into pieces of the staging size;
// each kind moves one piece its own way.
class StagedCommunicator : public Communicator {
 public:
  StagedCommunicator(std::shared_ptr<PeerGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  MemoryKind memory() const override { return MemoryKind::kDevice; }
  int device() const override { return group_->device(rank_); }

  CommStatus all_reduce_sum(float* data, size_t n, Stream stream) override {
    return run("all_reduce_sum", cuda::PeerOp::kSum, data, data, n, 0, 0, stream);
  }

  CommStatus all_gather(const float* send, size_t n, float* recv, Stream stream) override {
    if (send == nullptr && n > 0) return {CommCode::kInvalidArgument, "all_gather: null send buffer"};
    return run("all_gather", cuda::PeerOp::kGather, send, recv, n, n, 0, stream);
  }

  CommStatus broadcast(float* data, size_t n, int root, Stream stream) override {
    if (root < 0 || root >= size())
      return {CommCode::kInvalidArgument,
              "broadcast: root " + std::to_string(root) + " is not a rank of a group of " + std::to_string(size())};
    return run("broadcast", cuda::PeerOp::kBroadcast, data, data, n, 0, root, stream);
  }

  CommStatus barrier(Stream stream) override {
    return run("barrier", cuda::PeerOp::kSum, nullptr, nullptr, 0, 0, 0, stream);
  }

 protected:
  // Moves one piece: `a` has everything but the staging of this rank's input.
  virtual CommStatus piece(const char* op, cuda::PeerCollectiveArgs& a, cudaStream_t stream) = 0;

  std::shared_ptr<PeerGroup> group_;
  const int rank_;

 private:
  CommStatus run(const char* op, cuda::PeerOp kind, const float* in, float* out, size_t n, size_t rank_stride,
                 int root, Stream stream) {
    if (group_->aborted()) return {CommCode::kAborted, std::string(op) + ": the group was aborted"};
    if (n > 0 && out == nullptr) return {CommCode::kInvalidArgument, std::string(op) + ": null buffer with n = " + std::to_string(n)};
    cuda::PeerCollectiveArgs a = group_->args(rank_);
    a.op = kind;
    a.root = root;
    const size_t capacity = group_->capacity();
    size_t done = 0;
    do {
      const size_t len = std::min(capacity, n - done);
      a.in = in ? in + done : nullptr;
      a.out = out ? out + done : nullptr;
      a.n = static_cast<int64_t>(len);
      a.out_rank_stride = static_cast<int64_t>(rank_stride);
      if (CommStatus s = piece(op, a, static_cast<cudaStream_t>(stream)); !s.ok()) return s;
      done += len;
    } while (done < n);
    return CommStatus::success();
  }
};

// "peer": one launch per piece; the kernel stages the input and meets its peers through
// the flags (one GPU per rank).
class PeerCommunicator final : public StagedCommunicator {
 public:
  using StagedCommunicator::StagedCommunicator;
  std::string_view kind() const override { return "peer"; }
  // Later calls fail at once. A kernel already waiting for a rank that will never come
  // cannot be called back: it traps after kPeerTimeoutSeconds.
  void abort() override { group_->abort(); }

 private:
  CommStatus piece(const char* op, cuda::PeerCollectiveArgs& a, cudaStream_t stream) override {
    if (cudaError_t e = cuda::peer_collective(a, stream); e != cudaSuccess)
      return {CommCode::kBackend, std::string(op) + ": " + cudaGetErrorString(e)};
    return CommStatus::success();
  }
};

// "local": ranks that share a GPU. Per piece: wait until every peer has read this rank's
// staging buffer (their last "done" events), stage the input, meet on the host, wait
// for every peer's "ready" event, combine (the staged kernel), record "done". Everything
// a stream waits for was enqueued before the host meeting, so no call, whatever it
// synchronizes, can wait for work not yet enqueued.
class LocalCommunicator final : public StagedCommunicator {
 public:
  LocalCommunicator(std::shared_ptr<PeerGroup> group, int rank, std::unique_ptr<Communicator> host)
      : StagedCommunicator(std::move(group), rank), host_(std::move(host)) {}
  std::string_view kind() const override { return "local"; }
  bool capturable() const override { return false; }
  void abort() override {
    group_->abort();
    host_->abort();
  }

 private:
  CommStatus piece(const char* op, cuda::PeerCollectiveArgs& a, cudaStream_t stream) override {
    auto failed = [&](cudaError_t e) { return CommStatus{CommCode::kBackend, std::string(op) + ": " + cudaGetErrorString(e)}; };
    if (CommStatus s = meet(op); !s.ok()) return s;  // every peer's last "done" is recorded
    for (int j = 0; j < a.size; ++j)
      if (cudaError_t e = cudaStreamWaitEvent(stream, group_->done(j), 0); e != cudaSuccess) return failed(e);
    if (a.n > 0 && (a.op != cuda::PeerOp::kBroadcast || a.rank == a.root))
      if (cudaError_t e = cudaMemcpyAsync(group_->staging(rank_), a.in, static_cast<size_t>(a.n) * sizeof(float),
                                          cudaMemcpyDeviceToDevice, stream);
          e != cudaSuccess)
        return failed(e);
    if (cudaError_t e = cudaEventRecord(group_->ready(rank_), stream); e != cudaSuccess) return failed(e);
    if (CommStatus s = meet(op); !s.ok()) return s;  // every peer's "ready" is recorded
    for (int j = 0; j < a.size; ++j)
      if (cudaError_t e = cudaStreamWaitEvent(stream, group_->ready(j), 0); e != cudaSuccess) return failed(e);
    if (a.n > 0) {
      a.staged = true;
      if (cudaError_t e = cuda::peer_collective(a, stream); e != cudaSuccess) return failed(e);
    }
    if (cudaError_t e = cudaEventRecord(group_->done(rank_), stream); e != cudaSuccess) return failed(e);
    return CommStatus::success();
  }

  CommStatus meet(const char* op) {
    CommStatus s = host_->barrier();
    if (!s.ok()) s.message = std::string(op) + ": " + s.message;
    return s;
  }

  std::unique_ptr<Communicator> host_;  // this rank's end of a threads group
};

}  // namespace

namespace {

std::shared_ptr<PeerGroup> make_group(const char* kind, const std::vector<int>& devices, size_t staging_floats) {
  const std::string what = std::string(kind) + " communicator: ";
  if (devices.empty() || devices.size() > static_cast<size_t>(cuda::kPeerMaxRanks))
    throw CommunicatorError(what + std::to_string(devices.size()) + " ranks (1 to " + std::to_string(cuda::kPeerMaxRanks) + ")");
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    throw CommunicatorError(what + "no CUDA devices: " + cudaGetErrorString(e));
  for (int d : devices)
    if (d < 0 || d >= count)
      throw CommunicatorError(what + "device " + std::to_string(d) + " does not exist (" + std::to_string(count) + " CUDA devices)");
  int current = 0;
  cudaGetDevice(&current);
  for (int a : devices) {
    for (int b : devices) {
      if (a == b) continue;
      int can = 0;
      cudaDeviceCanAccessPeer(&can, a, b);
      if (!can)
        throw CommunicatorError(what + "device " + std::to_string(a) + " cannot access device " + std::to_string(b) +
                                "'s memory (no P2P)");
      cudaSetDevice(a);
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // "already enabled" is not an error here
      } else if (e != cudaSuccess) {
        cudaSetDevice(current);
        throw CommunicatorError(what + "enabling peer access: " + cudaGetErrorString(e));
      }
    }
  }
  cudaSetDevice(current);
  auto group = std::make_shared<PeerGroup>(devices, staging_floats);
  if (cudaError_t e = group->allocate(); e != cudaSuccess)
    throw CommunicatorError(what + "allocating staging buffers: " + cudaGetErrorString(e));
  return group;
}

}  // namespace

CommunicatorGroup make_peer_group(const std::vector<int>& devices, size_t staging_floats) {
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw CommunicatorError(
        "peer communicator: a GPU is listed twice; ranks that share a GPU cannot wait for each other inside "
        "kernels (CUDA does not promise to run them at once): use the local communicator");
  auto group = make_group("peer", devices, staging_floats);
  CommunicatorGroup out;
  for (int r = 0; r < group->size(); ++r) out.push_back(std::make_unique<PeerCommunicator>(group, r));
  return out;
}

CommunicatorGroup make_local_group(const std::vector<int>& devices, size_t staging_floats) {
  auto group = make_group("local", devices, staging_floats);
  // The host meetings: a threads group (a rank that fails aborts it, releasing the rest).
  CommunicatorGroup host = make_thread_group(group->size(), std::chrono::seconds(60));
  CommunicatorGroup out;
  for (int r = 0; r < group->size(); ++r)
    out.push_back(std::make_unique<LocalCommunicator>(group, r, std::move(host[static_cast<size_t>(r)])));
  return out;
}

}  // namespace sy::parallel
