// The "nccl" communicator: one process drives a group of GPUs, one rank per device
// (ncclCommInitAll), each rank called from its own thread. Built with SWITCHYARD_CUDA
// when NCCL is found (SY_HAVE_NCCL).
//
// NVLink multicast (NVLS) must stay off on the lent machines: the caller's environment
// keeps NCCL_NVLS_ENABLE=0 or leaves it unset (make_nccl_group then sets it to 0 before
// NCCL reads it; a value other than 0 is kept, with a warning on stderr).
#pragma once

#include <vector>

#include "worker/parallel/communicator.h"

namespace sy::parallel {

// One communicator per entry of `devices` (CUDA ordinals, distinct), rank r bound to
// devices[r]. The communicators share the NCCL group: it is destroyed with the last of
// them, so destroy any CUDA graph that captured their collectives first. Throws
// CommunicatorError when a device does not exist or NCCL's init fails.
CommunicatorGroup make_nccl_group(const std::vector<int>& devices);

}  // namespace sy::parallel
