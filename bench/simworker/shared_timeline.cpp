#include "bench/simworker/shared_timeline.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace sy::sim {

void share_elapsed(std::span<double> remaining, double elapsed_ms) {
  while (elapsed_ms > 0) {
    size_t pending = 0;
    double least = 0;
    for (double r : remaining)
      if (r > 0) least = pending++ == 0 ? r : std::min(least, r);
    if (pending == 0) return;
    // Until the shortest finishes every pending sharer runs at 1/pending of the speed.
    const double step = std::min(least, elapsed_ms / static_cast<double>(pending));
    for (double& r : remaining)
      if (r > 0) r = r - step <= 1e-9 ? 0 : r - step;
    elapsed_ms -= step * static_cast<double>(pending);
  }
}

double sliced_finish_ms(std::span<const double> remaining, size_t own) {
  double t = 0;
  for (double r : remaining) t += std::min(std::max(r, 0.0), remaining[own]);
  return t;
}

// The kSliced file: when the state was last advanced, then per sharer its pid, its
// queued milliseconds at full speed (0: idle, its slot free for any process) and the
// milliseconds it has served since the file began.
struct SharedTimeline::SlicedFile {
  int64_t at_ns = 0;
  std::array<int32_t, kMaxSharers> pid{};
  std::array<double, kMaxSharers> remaining_ms{};
  std::array<double, kMaxSharers> served_ms{};
  std::array<int32_t, kMaxSharers> decode_pid{};  // processes decoding (0: a free entry)
  std::array<int32_t, kMaxSharers> decoding{};    // their requests decoding
};

SharedTimeline::SharedTimeline(const std::string& path, Sharing sharing)
    : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)), sharing_(sharing) {
  if (fd_ < 0) throw std::runtime_error("prefill queue file " + path + ": " + std::strerror(errno));
}

SharedTimeline::~SharedTimeline() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

int64_t now_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// f(now_ns) under the file's exclusive lock.
template <typename F>
auto SharedTimeline::locked(F&& f) {
  ::flock(fd_, LOCK_EX);
  try {
    auto result = f(now_ns());
    ::flock(fd_, LOCK_UN);
    return result;
  } catch (...) {
    ::flock(fd_, LOCK_UN);
    throw;
  }
}

SharedTimeline::Queued SharedTimeline::queue(double ms) {
  return locked([&](int64_t now) { return sharing_ == Sharing::kFifo ? queue_fifo(ms, now) : queue_sliced(ms, now); });
}

double SharedTimeline::left_ms(const Queued& q) {
  if (sharing_ == Sharing::kFifo) return 0;
  return locked([&](int64_t now) {
    SlicedFile f;
    read_advanced(f, now);
    write(f);
    const double own = q.target_ms - f.served_ms[q.slot];
    if (own <= 1e-6) return 0.0;
    std::array<double, kMaxSharers> r = f.remaining_ms;
    r[q.slot] = own;  // the work queued behind q does not delay it
    return sliced_finish_ms(r, q.slot);
  });
}

// The file: the time the queue is free again (a new, empty file reads as 0: free now).
SharedTimeline::Queued SharedTimeline::queue_fifo(double ms, int64_t now) {
  int64_t free_at_ns = 0;
  if (::pread(fd_, &free_at_ns, sizeof free_at_ns, 0) != static_cast<ssize_t>(sizeof free_at_ns)) free_at_ns = 0;
  const int64_t done_ns = std::max(free_at_ns, now) + static_cast<int64_t>(ms * 1e6);
  if (::pwrite(fd_, &done_ns, sizeof done_ns, 0) != static_cast<ssize_t>(sizeof done_ns))
    throw std::runtime_error(std::string("--shared-prefill: cannot write: ") + std::strerror(errno));
  return {.done_in_ms = static_cast<double>(done_ns - now) / 1e6};
}

// The state as of `now`: a new file, or one from before the clock began (a reboot),
// has nothing pending.
void SharedTimeline::read_advanced(SlicedFile& f, int64_t now) {
  if (::pread(fd_, &f, sizeof f, 0) != static_cast<ssize_t>(sizeof f) || f.at_ns > now) f = SlicedFile{};
  const std::array<double, kMaxSharers> before = f.remaining_ms;
  share_elapsed(f.remaining_ms, f.at_ns > 0 ? static_cast<double>(now - f.at_ns) / 1e6 : 0);
  for (size_t i = 0; i < kMaxSharers; ++i) f.served_ms[i] += before[i] - f.remaining_ms[i];
  f.at_ns = now;
}

void SharedTimeline::write(const SlicedFile& f) {
  if (::pwrite(fd_, &f, sizeof f, 0) != static_cast<ssize_t>(sizeof f))
    throw std::runtime_error(std::string("--sliced-prefill: cannot write: ") + std::strerror(errno));
}

void SharedTimeline::set_decoding(int32_t n) {
  locked([&](int64_t now) {
    SlicedFile f;
    read_advanced(f, now);
    const int32_t self = static_cast<int32_t>(::getpid());
    size_t own = kMaxSharers;
    for (size_t i = 0; i < kMaxSharers && own == kMaxSharers; ++i)
      if (f.decode_pid[i] == self) own = i;
    for (size_t i = 0; i < kMaxSharers && own == kMaxSharers && n > 0; ++i)
      if (f.decode_pid[i] == 0 || ::kill(f.decode_pid[i], 0) != 0) own = i;  // free, or its process is gone
    if (own == kMaxSharers) {
      if (n > 0) throw std::runtime_error("--sliced-prefill: more than 64 processes decoding");
      return 0;
    }
    f.decode_pid[own] = n > 0 ? self : 0;
    f.decoding[own] = n;
    write(f);
    return 0;
  });
}

int32_t SharedTimeline::decoders() {
  return locked([&](int64_t) {
    SlicedFile f;
    if (::pread(fd_, &f, sizeof f, 0) != static_cast<ssize_t>(sizeof f)) return 0;
    int32_t n = 0;
    for (size_t i = 0; i < kMaxSharers; ++i) n += f.decode_pid[i] != 0 && f.decoding[i] > 0 && ::kill(f.decode_pid[i], 0) == 0;
    return n;
  });
}

SharedTimeline::Queued SharedTimeline::queue_sliced(double ms, int64_t now) {
  SlicedFile f;
  read_advanced(f, now);
  const int32_t self = static_cast<int32_t>(::getpid());
  size_t own = kMaxSharers;
  for (size_t i = 0; i < kMaxSharers && own == kMaxSharers; ++i)
    if (f.pid[i] == self && f.remaining_ms[i] > 0) own = i;
  for (size_t i = 0; i < kMaxSharers && own == kMaxSharers; ++i)
    if (f.remaining_ms[i] <= 0) own = i;
  if (own == kMaxSharers) throw std::runtime_error("--sliced-prefill: more than 64 processes with prefill pending");
  f.pid[own] = self;
  f.remaining_ms[own] += ms;
  const Queued q{.done_in_ms = sliced_finish_ms(f.remaining_ms, own), .slot = own,
                 .target_ms = f.served_ms[own] + f.remaining_ms[own]};
  write(f);
  return q;
}

}  // namespace sy::sim
