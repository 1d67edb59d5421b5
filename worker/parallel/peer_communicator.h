// Two communicators of CUDA ranks in one process, each rank driven from its own thread on
// its own stream, both reading the other ranks' buffers directly (peer memory) and
// summing in rank order, so every rank gets the same bits and a run repeats bit-for-bit.
// Built with SWITCHYARD_CUDA.
//
// "peer": one GPU per rank (NVLink P2P); each collective is one kernel that meets its
// peers through flags in device memory (kernels/cuda/peer_collective.cuh): a few peer
// round trips instead of a ring's 2·(ranks − 1) steps, captured in CUDA graphs. Small
// messages are where it beats NCCL (bench/allreduce_bench.cpp); each rank reads every
// peer's whole buffer, so large ones cost size× the bytes (split_communicator.h routes
// them to NCCL).
//
// "local": ranks that share a GPU (tests of tensor parallelism on a one-GPU machine).
// Kernels that spin waiting for each other need to run at once, which CUDA promises only
// across GPUs (four ranks on one H200 deadlocked in about a third of the runs), so this
// kind orders the ranks' streams with events and meets on the host in every call: not
// capturable (capturable() is false; the backend then runs without decode graphs).
#pragma once

#include <cstddef>
#include <vector>

#include "worker/parallel/communicator.h"

namespace sy::parallel {

// Rank r on devices[r] (CUDA ordinals; distinct for peer, repeats allowed for local).
// Each rank gets a staging buffer of `staging_floats` floats on its device; larger
// collectives run in pieces of that size. Distinct devices must have peer access to each
// other. Throws CommunicatorError for a missing or (peer) repeated device, a pair without
// peer access, more than 8 ranks or a failed allocation.
CommunicatorGroup make_peer_group(const std::vector<int>& devices, size_t staging_floats = size_t{4} << 20);
CommunicatorGroup make_local_group(const std::vector<int>& devices, size_t staging_floats = size_t{4} << 20);

}  // namespace sy::parallel
