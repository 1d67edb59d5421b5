#include "worker/parallel/communicator.h"

#include "worker/parallel/thread_communicator.h"
#ifdef SY_HAVE_NCCL
#include "worker/parallel/nccl_communicator.h"
#endif

namespace sy::parallel {

const char* to_string(CommCode code) {
  switch (code) {
    case CommCode::kOk:
      return "ok";
    case CommCode::kInvalidArgument:
      return "invalid argument";
    case CommCode::kTimeout:
      return "timeout";
    case CommCode::kAborted:
      return "aborted";
    case CommCode::kBackend:
      return "backend error";
  }
  return "?";
}

std::vector<std::string> communicator_kinds() {
#ifdef SY_HAVE_NCCL
  return {"threads", "nccl"};
#else
  return {"threads"};
#endif
}

CommunicatorGroup create_communicators(const std::string& kind,
                                       const CommunicatorOptions& options) {
  if (kind == "threads") return make_thread_group(options.size, options.timeout);
  if (kind == "nccl") {
#ifdef SY_HAVE_NCCL
    std::vector<int> devices = options.devices;
    for (int d = 0; devices.empty() && d < options.size; ++d) devices.push_back(d);
    return make_nccl_group(devices);
#else
    throw CommunicatorError(
        "communicator kind \"nccl\" is not in this build (it needs SWITCHYARD_CUDA and NCCL); "
        "this build has: threads");
#endif
  }
  std::string known;
  for (const std::string& k : communicator_kinds()) known += (known.empty() ? "" : ", ") + k;
  throw CommunicatorError("unknown communicator kind \"" + kind + "\" (known: " + known + ")");
}

}  // namespace sy::parallel
