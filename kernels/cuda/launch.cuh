// Programmatic dependent launch (Hopper): a kernel launched with launch_kernel() while a
// ProgrammaticLaunch scope is active on the calling thread may be scheduled before the
// kernel ahead of it in the stream has finished, so its launch and its first weight
// loads overlap that kernel's tail. Such a kernel calls pdl_wait() before it reads or
// writes anything an earlier kernel may touch (only weights, and the step's plan that the
// host uploaded before the step's first kernel, may be read before), then pdl_release()
// so that the kernel after it may be scheduled in turn. Outside a scope,
// or for kernels launched with <<<>>>, launches are ordered as usual and both calls are
// no-ops. Captured into a CUDA graph, the order becomes programmatic edges.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_utils.cuh"

namespace sy::cuda {

#ifdef __CUDACC__
// Waits until every kernel ahead in the stream has finished and its writes are visible.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream be scheduled once every CTA of this one has called
// this or exited (it still waits for this kernel to finish in its own pdl_wait()).
__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif  // __CUDACC__

// While alive, launch_kernel() on this thread launches with programmatic stream
// serialization when `on`; restores the previous setting when it ends.
class ProgrammaticLaunch {
 public:
  explicit ProgrammaticLaunch(bool on) : previous_(flag()) { flag() = on; }
  ~ProgrammaticLaunch() { flag() = previous_; }
  ProgrammaticLaunch(const ProgrammaticLaunch&) = delete;
  ProgrammaticLaunch& operator=(const ProgrammaticLaunch&) = delete;

  static bool active() { return flag(); }

 private:
  static bool& flag() {
    thread_local bool on = false;
    return on;
  }
  bool previous_;
};

// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization
// inside an active ProgrammaticLaunch scope; returns the launch's error.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = ProgrammaticLaunch::active() ? 1 : 0;
  cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  return launch_status();
}

}  // namespace sy::cuda
