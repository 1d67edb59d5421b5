#include "worker/backend/step_profile.h"

#include "worker/backend/cpu_backend.h"

#ifdef SY_HAVE_CUDA
#include "worker/backend/cuda_backend.h"
#endif

namespace sy {

StepProfile profile_step(Backend& backend, const BatchPlan& plan, int repeats) {
#ifdef SY_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) return cuda->profile_step(plan, repeats);
#endif
  if (auto* cpu = dynamic_cast<CpuBackend*>(&backend)) return cpu->profile_step(plan, repeats);
  return {};
}

}  // namespace sy
