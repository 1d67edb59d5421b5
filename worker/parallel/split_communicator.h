// A communicator that sends each collective to one of two groups by its size: small
// messages to `small` (the one-shot peer kernels, whose latency is a few peer round
// trips) and the rest to `large` (NCCL's ring, whose bandwidth wins on big messages).
// The crossover is measured (bench/allreduce_bench, docs/PERFORMANCE.md). Both groups
// have the same ranks on the same devices; every rank routes the same call the same
// way, since the choice depends on n alone.
#pragma once

#include <cstddef>

#include "worker/parallel/communicator.h"

namespace sy::parallel {

// Element r routes collectives of at most `small_max_floats` floats (per rank) to
// small[r], larger ones to large[r]. Both groups: one size, one memory kind; throws
// CommunicatorError otherwise.
CommunicatorGroup make_split_group(CommunicatorGroup small, CommunicatorGroup large, size_t small_max_floats);

}  // namespace sy::parallel
