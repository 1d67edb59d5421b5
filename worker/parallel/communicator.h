// A communicator connects the ranks of a parallel group (DESIGN.md, "Parallel groups"):
// one object per rank, each called from that rank's own thread, all ranks calling the
// same collectives in the same order. Kinds are chosen by name, as lmdeploy's
// CreateDeviceCommunicator chooses its own: "threads" (CPU ranks as threads of one
// process over shared memory; host buffers), in builds with SWITCHYARD_CUDA and NCCL
// "nccl" (one process, one GPU per rank; device buffers) and in builds with
// SWITCHYARD_CUDA "peer" (one process, one-shot kernels over peer memory, one GPU per
// rank) and "local" (ranks that share a GPU, ordered by events and host rendezvous;
// worker/parallel/peer_communicator.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sy::parallel {

// What a collective returned. Errors are values: nothing on the data path throws.
enum class CommCode {
  kOk = 0,
  // The ranks disagreed on the call (different operation, count or root) or an argument
  // was invalid (null buffer with n > 0, root out of range). Every rank of the
  // collective gets this code; the group stays usable.
  kInvalidArgument,
  // This rank waited longer than the group's timeout for the others. The group is
  // broken from then on: every later call on any rank returns kAborted.
  kTimeout,
  // abort() was called on some rank, or another rank timed out. Permanent for the group.
  kAborted,
  // The library underneath failed (NCCL, CUDA); message says what it reported.
  kBackend,
};

struct [[nodiscard]] CommStatus {
  CommCode code = CommCode::kOk;
  std::string message;  // empty when ok

  bool ok() const { return code == CommCode::kOk; }
  static CommStatus success() { return {}; }
};

const char* to_string(CommCode code);

// Where a communicator's buffers live.
enum class MemoryKind { kHost, kDevice };

// One rank's end of a group. Buffers are float32, `n` counts elements (not bytes), and
// every rank passes the same `n` (and `root`) to the same call.
//
// Streams: `stream` is a cudaStream_t passed as void* (so this header needs no CUDA).
// nccl enqueues the collective on it and returns without waiting (the call can be
// captured in a CUDA graph; the buffers must stay valid until the stream passes it);
// null means the legacy default stream. threads ignores it and returns once the
// collective is complete on this rank.
//
// Failure: a collective waits for every rank. threads gives up after the group's
// timeout (CommunicatorOptions::timeout) and abort() on any rank releases all waiting
// ranks at once with kAborted; after either the group is broken and must be recreated.
// nccl: a rank that never enqueues its part leaves the other GPUs waiting inside the
// kernel; the owner calls abort() on every rank's communicator (ncclCommAbort), which
// ends those kernels, and recreates the group.
class Communicator {
 public:
  using Stream = void*;  // a cudaStream_t for nccl; ignored by threads

  virtual ~Communicator() = default;

  virtual std::string_view kind() const = 0;  // "threads" | "nccl" | "peer" | "local"
  virtual int rank() const = 0;               // 0 .. size()-1
  virtual int size() const = 0;
  virtual MemoryKind memory() const = 0;
  // nccl: the CUDA device this rank is bound to (the caller's thread must have it
  // current); threads: -1.
  virtual int device() const { return -1; }
  // Whether the collectives may be captured into a CUDA graph (the call enqueues
  // everything on `stream` and nothing on the host waits for another rank): nccl and
  // peer yes; local no (it meets the other ranks on the host in every call).
  virtual bool capturable() const { return true; }

  // data[0, n) on every rank becomes the elementwise sum over ranks, the same bits on
  // every rank. threads sums in rank order, (((r0 + r1) + r2) + ...), whatever the
  // timing, so results repeat bit-for-bit; nccl's order is NCCL's (ring/tree), fixed
  // for a given group, size and algorithm, not rank order.
  virtual CommStatus all_reduce_sum(float* data, size_t n, Stream stream = nullptr) = 0;

  // recv[r*n, (r+1)*n) = send[0, n) of rank r, for every r; recv holds size()*n floats.
  // send either lies outside recv or is exactly recv + rank()*n (in place).
  virtual CommStatus all_gather(const float* send, size_t n, float* recv,
                                Stream stream = nullptr) = 0;

  // data[0, n) of rank `root` is copied to data[0, n) of every other rank.
  virtual CommStatus broadcast(float* data, size_t n, int root, Stream stream = nullptr) = 0;

  // threads: returns when every rank has called it. nccl: enqueues a one-element
  // all-reduce on `stream`, which passes it once every rank's stream has; the host does
  // not wait (synchronize the stream for that).
  virtual CommStatus barrier(Stream stream = nullptr) = 0;

  // Breaks the group: collectives waiting on any rank, and every later one, return
  // kAborted (threads) or end with an NCCL error (nccl). Safe to call from any thread,
  // more than once. For the group's owner after a rank has failed.
  virtual void abort() = 0;
};

using CommunicatorGroup = std::vector<std::unique_ptr<Communicator>>;

struct CommunicatorOptions {
  // threads: the number of ranks (>= 1). nccl: ignored when `devices` is given, else the
  // devices are 0 .. size-1.
  int size = 0;
  // nccl, peer, local: one CUDA device ordinal per rank, in rank order (local: repeats
  // allowed).
  std::vector<int> devices;
  // threads: how long a rank waits for the others in one collective before the group is
  // declared broken. A backstop: an owner that sees a rank fail calls abort() at once.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// A configuration the factory cannot build (unknown kind, bad size, no such device,
// NCCL init failed). Startup only; collectives return CommStatus.
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The group's communicators, element r being rank r's: "threads" | "nccl" | "peer" |
// "local". Throws
// CommunicatorError naming the known kinds when `kind` is not one of them.
CommunicatorGroup create_communicators(const std::string& kind, const CommunicatorOptions& options);

// The kinds this build can create ("threads", and "nccl" with SWITCHYARD_CUDA + NCCL).
std::vector<std::string> communicator_kinds();

}  // namespace sy::parallel
