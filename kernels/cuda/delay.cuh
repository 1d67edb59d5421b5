// Holds a stream for a while: work queued behind this kernel starts only when it ends,
// so a profiler can queue a whole step first and time its kernels back to back, free of
// the host's launch gaps.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

// One thread spins on the global timer for `ns` nanoseconds.
cudaError_t delay(uint64_t ns, cudaStream_t stream);

}  // namespace sy::cuda
