// NCCL collectives enqueue on the caller's stream and return; nothing here synchronizes,
// so the calls can be captured in the decode CUDA graphs. Each rank is driven by its own
// thread (NCCL communicators are re-entrant, not thread-safe: one thread per comm), so
// no ncclGroupStart/End is needed around the collectives.
#include "worker/parallel/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sy::parallel {
namespace {

std::string nccl_error(ncclResult_t result, ncclComm_t comm) {
  std::string what = ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') what += std::string(" (") + last + ")";
  return what;
}

// NCCL reads its environment once, at the first init; this runs before it.
void keep_nvls_off() {
  const char* value = std::getenv("NCCL_NVLS_ENABLE");
  if (value == nullptr) {
    setenv("NCCL_NVLS_ENABLE", "0", 0);
  } else if (std::strcmp(value, "0") != 0) {
    std::fprintf(stderr,
                 "switchyard: NCCL_NVLS_ENABLE=%s: NVLink multicast is on; the lent machines "
                 "need NCCL_NVLS_ENABLE=0\n",
                 value);
  }
}

// The NCCL communicators of one group and what they share. Destroyed with the last
// rank's communicator, all comms together: one thread finalizing the comms one by one
// would wait in the first for ranks not yet finalized.
class NcclGroup {
 public:
  NcclGroup(std::vector<int> devices, std::vector<ncclComm_t> comms, std::vector<float*> scratch)
      : devices_(std::move(devices)), comms_(std::move(comms)), scratch_(std::move(scratch)) {}

  ~NcclGroup() {
    int current = 0;
    cudaGetDevice(&current);
    for (size_t r = 0; r < scratch_.size(); ++r) {
      cudaSetDevice(devices_[r]);
      cudaFree(scratch_[r]);
    }
    cudaSetDevice(current);
    const bool aborted = aborted_.load();
    ncclGroupStart();
    for (ncclComm_t comm : comms_) {
      if (aborted) {
        ncclCommAbort(comm);
      } else {
        ncclCommDestroy(comm);
      }
    }
    ncclGroupEnd();
  }

  ncclComm_t comm(int rank) const { return comms_[rank]; }
  int device(int rank) const { return devices_[rank]; }
  float* scratch(int rank) const { return scratch_[rank]; }
  int size() const { return static_cast<int>(comms_.size()); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // Later calls fail at once; in-flight ones are stopped where NCCL can (ncclCommRevoke,
  // in newer 2.28 releases; without it they run out), without freeing what another
  // rank's thread may still be using.
  void abort() {
    if (aborted_.exchange(true)) return;
#if defined(NCCL_REVOKE_DEFAULT)  // not in every 2.28 (the H200 image's lacks it)
    for (ncclComm_t comm : comms_) ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
#endif
  }

 private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<float*> scratch_;  // one float per rank, on its device: barrier()'s payload
  std::atomic<bool> aborted_{false};
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}

  std::string_view kind() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  MemoryKind memory() const override { return MemoryKind::kDevice; }
  int device() const override { return group_->device(rank_); }

  CommStatus all_reduce_sum(float* data, size_t n, Stream stream) override {
    if (CommStatus s = check("all_reduce_sum", data, n); !s.ok()) return s;
    return result("all_reduce_sum",
                  ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm(), cuda_stream(stream)));
  }

  CommStatus all_gather(const float* send, size_t n, float* recv, Stream stream) override {
    if (CommStatus s = check("all_gather", recv, n); !s.ok()) return s;
    if (send == nullptr && n > 0)
      return {CommCode::kInvalidArgument, "all_gather: null send buffer"};
    return result("all_gather",
                  ncclAllGather(send, recv, n, ncclFloat, comm(), cuda_stream(stream)));
  }

  CommStatus broadcast(float* data, size_t n, int root, Stream stream) override {
    if (CommStatus s = check("broadcast", data, n); !s.ok()) return s;
    if (root < 0 || root >= size()) {
      return {CommCode::kInvalidArgument, "broadcast: root " + std::to_string(root) +
                                              " is not a rank of a group of " +
                                              std::to_string(size())};
    }
    return result("broadcast",
                  ncclBroadcast(data, data, n, ncclFloat, root, comm(), cuda_stream(stream)));
  }

  CommStatus barrier(Stream stream) override {
    if (group_->aborted()) return {CommCode::kAborted, "barrier: the group was aborted"};
    float* one = group_->scratch(rank_);
    return result("barrier",
                  ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm(), cuda_stream(stream)));
  }

  void abort() override { group_->abort(); }

 private:
  ncclComm_t comm() const { return group_->comm(rank_); }
  static cudaStream_t cuda_stream(Stream stream) { return static_cast<cudaStream_t>(stream); }

  // A bad argument is refused before NCCL sees it. Unlike the threads kind, the other
  // ranks cannot know: they wait in their kernel until the owner aborts the group.
  CommStatus check(const char* op, const float* data, size_t n) const {
    if (group_->aborted()) return {CommCode::kAborted, std::string(op) + ": the group was aborted"};
    if (data == nullptr && n > 0) {
      return {CommCode::kInvalidArgument,
              std::string(op) + ": null buffer with n = " + std::to_string(n)};
    }
    return CommStatus::success();
  }

  CommStatus result(const char* op, ncclResult_t r) const {
    if (r == ncclSuccess) return CommStatus::success();
    const CommCode code = group_->aborted()          ? CommCode::kAborted
                          : r == ncclInvalidArgument ? CommCode::kInvalidArgument
                                                     : CommCode::kBackend;
    return {code, std::string(op) + ": " + nccl_error(r, comm())};
  }

  std::shared_ptr<NcclGroup> group_;
  const int rank_;
};

}  // namespace

CommunicatorGroup make_nccl_group(const std::vector<int>& devices) {
  if (devices.empty()) throw CommunicatorError("nccl communicator: no devices given");
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    throw CommunicatorError(std::string("nccl communicator: no CUDA devices: ") +
                            cudaGetErrorString(e));
  }
  for (size_t r = 0; r < devices.size(); ++r) {
    if (devices[r] < 0 || devices[r] >= count) {
      throw CommunicatorError("nccl communicator: rank " + std::to_string(r) + "'s device " +
                              std::to_string(devices[r]) + " does not exist (" +
                              std::to_string(count) + " CUDA devices)");
    }
    if (std::count(devices.begin(), devices.end(), devices[r]) > 1) {
      throw CommunicatorError("nccl communicator: device " + std::to_string(devices[r]) +
                              " is given twice; one rank per device");
    }
  }

  keep_nvls_off();
  const int size = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(size, nullptr);
  if (ncclResult_t r = ncclCommInitAll(comms.data(), size, devices.data()); r != ncclSuccess) {
    throw CommunicatorError("nccl communicator: ncclCommInitAll failed: " + nccl_error(r, nullptr));
  }

  int current = 0;
  cudaGetDevice(&current);
  std::vector<float*> scratch(size, nullptr);
  cudaError_t alloc_error = cudaSuccess;
  for (int r = 0; r < size && alloc_error == cudaSuccess; ++r) {
    cudaSetDevice(devices[r]);
    alloc_error = cudaMalloc(&scratch[r], sizeof(float));
    if (alloc_error == cudaSuccess) alloc_error = cudaMemset(scratch[r], 0, sizeof(float));
  }
  cudaSetDevice(current);
  // The group owns comms and scratch from here, so a failure below frees them.
  auto group = std::make_shared<NcclGroup>(devices, std::move(comms), std::move(scratch));
  if (alloc_error != cudaSuccess) {
    throw CommunicatorError(std::string("nccl communicator: cudaMalloc failed: ") +
                            cudaGetErrorString(alloc_error));
  }
  CommunicatorGroup out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<NcclCommunicator>(group, r));
  return out;
}

}  // namespace sy::parallel
