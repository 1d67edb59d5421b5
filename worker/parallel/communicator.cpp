#include "worker/parallel/communicator.h"

#include "worker/parallel/thread_communicator.h"
#ifdef SY_HAVE_NCCL
#include "worker/parallel/nccl_communicator.h"
#endif
#ifdef SY_HAVE_PEER_COMM
#include "worker/parallel/peer_communicator.h"
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
  std::vector<std::string> kinds{"threads"};
#ifdef SY_HAVE_NCCL
  kinds.push_back("nccl");
#endif
#ifdef SY_HAVE_PEER_COMM
  kinds.push_back("peer");
  kinds.push_back("local");
#endif
  return kinds;
}

#if defined(SY_HAVE_NCCL) || defined(SY_HAVE_PEER_COMM)
namespace {

std::vector<int> devices_of(const CommunicatorOptions& options) {
  std::vector<int> devices = options.devices;
  for (int d = 0; devices.empty() && d < options.size; ++d) devices.push_back(d);
  return devices;
}

}  // namespace
#endif

CommunicatorGroup create_communicators(const std::string& kind,
                                       const CommunicatorOptions& options) {
  if (kind == "threads") return make_thread_group(options.size, options.timeout);
  if (kind == "nccl") {
#ifdef SY_HAVE_NCCL
    return make_nccl_group(devices_of(options));
#endif
  }
  if (kind == "peer" || kind == "local") {
#ifdef SY_HAVE_PEER_COMM
    return kind == "peer" ? make_peer_group(devices_of(options)) : make_local_group(devices_of(options));
#endif
  }
  std::string known;
  const bool elsewhere = kind == "nccl" || kind == "peer" || kind == "local";
  for (const std::string& k : communicator_kinds()) known += (known.empty() ? "" : ", ") + k;
  if (elsewhere)
    throw CommunicatorError("communicator kind \"" + kind + "\" is not in this build (nccl needs SWITCHYARD_CUDA and NCCL, "
                            "peer and local SWITCHYARD_CUDA); this build has: " + known);
  throw CommunicatorError("unknown communicator kind \"" + kind + "\" (known: " + known + ")");
}

}  // namespace sy::parallel
