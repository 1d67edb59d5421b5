// Starts reading a weight into L2 while latency-bound kernels (norms, RoPE, attention at
// short contexts) leave DRAM idle, so that the GEMV after them finds its first rows in
// L2 instead of ramping up from DRAM. A kernel of its own in the step's chain: once the
// kernel ahead has finished it issues Hopper's bulk L2 prefetches
// (cp.async.bulk.prefetch.L2), which do not hold it up, and ends.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace sy::cuda {

// Prefetches bytes [p, p + bytes) into L2; p 16-byte aligned, bytes a multiple of 16 (the
// bulk copy's granule; a shorter tail is left out). Changes no values: reads only.
cudaError_t prefetch_l2(const void* p, size_t bytes, cudaStream_t stream);

}  // namespace sy::cuda
