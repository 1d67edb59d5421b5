// The "threads" communicator: CPU ranks as threads of one process, exchanging through
// shared memory. Its all-reduce sums in rank order, so a sharded model's results repeat
// bit-for-bit and CI can compare them with the unsharded model's.
#pragma once

#include <chrono>

#include "worker/parallel/communicator.h"

namespace sy::parallel {

// `size` communicators (element r is rank r's) sharing one rendezvous; each is driven by
// its own thread. A collective waits at most `timeout` for the other ranks (then the
// group is broken: see CommCode::kTimeout). Throws CommunicatorError if size < 1.
CommunicatorGroup make_thread_group(int size,
                                    std::chrono::milliseconds timeout = std::chrono::minutes(5));

}  // namespace sy::parallel
