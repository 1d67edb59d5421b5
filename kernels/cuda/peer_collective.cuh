// One-shot collectives over peer memory: the ranks of one process, each on its own
// stream (on distinct GPUs with peer access, or several on one GPU), exchange data
// through one another's staging buffers instead of a ring. Each rank's kernel copies
// its input into its own staging buffer, raises its flag in every rank's flag array,
// waits for every rank's flag, then reads all the staging buffers directly and writes
// its output; a second flag round keeps a rank from overwriting its staging buffer
// before every peer has read it. One launch, two flag rounds: the latency of a small
// all-reduce is a few peer round trips instead of 2·(ranks − 1) ring steps.
//
// The flags are sequence numbers kept per CTA index (each rank's CTA b counts its own
// launches in `counters`), so a kernel captured in a CUDA graph replays correctly and
// every rank must launch the same grids in the same order, which peer_collective()
// guarantees by deriving the grid from n alone. A peer that never arrives makes the
// waiting kernel trap after kPeerTimeoutSeconds (the context is lost; the worker exits
// and the gateway restarts it) rather than hang.
//
// The flag rounds need every rank's kernel resident at once. CUDA promises that only
// across GPUs: kernels of several streams on one GPU may run one after the other (NCCL
// refuses two ranks on one GPU for the same reason), and on the H200 four ranks on one
// GPU deadlocked in about one run in three. Ranks that share a GPU therefore use the
// staged form: the host orders the streams with events, every rank's input already in
// its staging buffer, and the kernel only combines (worker/parallel, kind "local").
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sy::cuda {

constexpr int kPeerMaxRanks = 8;
constexpr int kPeerMaxBlocks = 32;
constexpr int kPeerTimeoutSeconds = 20;
// uint32 elements of one rank's flag array: [2 rounds][kPeerMaxBlocks][kPeerMaxRanks].
constexpr size_t kPeerFlagWords = 2 * kPeerMaxBlocks * kPeerMaxRanks;

enum class PeerOp : int {
  kSum,        // out[i] = Σ_r in_r[i], summed in rank order (the same bits on every rank)
  kGather,     // out[r · out_rank_stride + i] = in_r[i]
  kBroadcast,  // out[i] = in_root[i]
};

struct PeerCollectiveArgs {
  PeerOp op = PeerOp::kSum;
  int rank = 0, size = 1, root = 0;
  // Rank j's staging buffer and flag array (device pointers usable on this rank's
  // device): staging holds at least n floats, flags kPeerFlagWords zeroed words.
  float* staging[kPeerMaxRanks] = {};
  uint32_t* flags[kPeerMaxRanks] = {};
  uint32_t* counters = nullptr;  // this rank's own kPeerMaxBlocks words, zeroed at creation
  const float* in = nullptr;     // this rank's n input floats (may equal out for kSum)
  float* out = nullptr;
  int64_t n = 0;                 // elements per rank; 0 only synchronizes the ranks
  int64_t out_rank_stride = 0;   // kGather: distance between ranks' parts of out
  // The staged form: every rank's input is in its staging buffer and this launch is
  // ordered after all of them; no copy, no flags (flags and counters may be null).
  bool staged = false;
};

// Enqueues the collective on `stream`. Every rank must make the same call (op, n, root)
// in the same order; n ≤ the staging capacity (the communicator splits larger ones).
cudaError_t peer_collective(const PeerCollectiveArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
