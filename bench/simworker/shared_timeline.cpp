#include "bench/simworker/shared_timeline.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace sy::sim {

SharedTimeline::SharedTimeline(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw std::runtime_error("--shared-prefill " + path + ": " + std::strerror(errno));
}

SharedTimeline::~SharedTimeline() {
  if (fd_ >= 0) ::close(fd_);
}

double SharedTimeline::queue(double ms) {
  using namespace std::chrono;
  ::flock(fd_, LOCK_EX);
  int64_t free_at_ns = 0;  // a new (empty) file reads as 0: free now
  if (::pread(fd_, &free_at_ns, sizeof free_at_ns, 0) != static_cast<ssize_t>(sizeof free_at_ns)) free_at_ns = 0;
  const int64_t now_ns = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  const int64_t done_ns = std::max(free_at_ns, now_ns) + static_cast<int64_t>(ms * 1e6);
  const bool written = ::pwrite(fd_, &done_ns, sizeof done_ns, 0) == static_cast<ssize_t>(sizeof done_ns);
  ::flock(fd_, LOCK_UN);
  if (!written) throw std::runtime_error(std::string("--shared-prefill: cannot write: ") + std::strerror(errno));
  return static_cast<double>(done_ns - now_ns) / 1e6;
}

}  // namespace sy::sim
