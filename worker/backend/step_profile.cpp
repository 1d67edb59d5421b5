#include "worker/backend/step_profile.h"

#ifdef SY_HAVE_CUDA
#include "worker/backend/cuda_backend.h"
#endif

namespace sy {

StepProfile profile_step(Backend& backend, const BatchPlan& plan, int repeats) {
#ifdef SY_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) return cuda->profile_step(plan, repeats);
#endif
  (void)backend, (void)plan, (void)repeats;
  return {};
}

}  // namespace sy
