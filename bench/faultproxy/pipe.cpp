#include "bench/faultproxy/pipe.h"

#include <algorithm>
#include <boost/asio/write.hpp>
#include <cmath>

#include "bench/faultproxy/connection.h"

namespace sy::faultproxy {

namespace net = boost::asio;
using boost::system::error_code;

namespace {
constexpr size_t kReadChunk = 16 * 1024;
// A bandwidth-limited pipe writes slices of this much time's worth of bytes, so that the
// rate holds over short spans too.
constexpr int64_t kSlicesPerSecond = 50;
}  // namespace

Pipe::Pipe(Connection& owner, unsigned direction, tcp::socket& src, tcp::socket& dst,
           size_t max_queue, std::mt19937_64& rng)
    : owner_(owner),
      direction_(direction),
      src_(src),
      dst_(dst),
      max_queue_(max_queue),
      rng_(rng),
      timer_(src.get_executor()) {}

void Pipe::start() {
  read_buf_.resize(kReadChunk);
  do_read();
}

void Pipe::skip() {
  // Nothing will ever come from the source: the pipe counts as finished.
  fin_sent_ = true;
}

void Pipe::set_faults(const PipeFaults& faults) {
  if (faults.rate == 0) paid_ = 0;
  faults_ = faults;
  if (!closed_) pump();
}

void Pipe::close() {
  closed_ = true;
  ++timer_gen_;
  timer_.cancel();
  queue_.clear();
  queued_ = 0;
}

void Pipe::do_read() {
  if (closed_ || reading_ || eof_ || fin_sent_ || queued_ >= max_queue_) return;
  reading_ = true;
  src_.async_read_some(net::buffer(read_buf_), [this, self = owner_.shared_from_this()](
                                                   error_code ec, size_t n) { on_read(ec, n); });
}

void Pipe::on_read(error_code ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec == net::error::eof) {
    eof_ = true;
    if (faults_.blackhole) {
      // Nothing was forwarded, so no FIN is either: the other side hears nothing.
      fin_sent_ = true;
      return owner_.pipe_finished();
    }
    eof_release_ = std::max(Clock::now() + faults_.latency, last_release_);
    return pump();
  }
  if (ec) return owner_.pipe_failed(*this, "read", ec);
  owner_.pipe_read(direction_, n, faults_.blackhole);
  if (!faults_.blackhole) {
    auto delay = std::chrono::duration_cast<std::chrono::microseconds>(faults_.latency);
    if (faults_.jitter.count() > 0) {
      const int64_t j = std::chrono::microseconds(faults_.jitter).count();
      delay += std::chrono::microseconds(std::uniform_int_distribution<int64_t>(-j, j)(rng_));
      delay = std::max(delay, std::chrono::microseconds(0));
    }
    // Jitter never reorders: a chunk leaves no earlier than the one before it.
    const auto release = std::max(Clock::now() + delay, last_release_);
    last_release_ = release;
    queue_.push_back(Chunk{std::string(read_buf_.data(), n), 0, release});
    queued_ += n;
    pump();
  }
  do_read();
}

bool Pipe::stalled(Clock::time_point now) const {
  return (faults_.stall_at_bytes && forwarded_ >= *faults_.stall_at_bytes) ||
         (faults_.stall_at && now >= *faults_.stall_at);
}

void Pipe::pump() {
  if (closed_ || writing_ || fin_sent_ || fin_pending_) return;
  const auto now = Clock::now();
  // A stalled pipe holds its FIN too; set_faults() pumps again when the stall goes.
  if (stalled(now)) return;
  if (queue_.empty()) {
    if (!eof_) return;
    if (eof_release_ > now) return arm(eof_release_);
    return send_fin();
  }
  Chunk& c = queue_.front();
  if (c.release > now) return arm(c.release);
  size_t n = c.data.size() - c.offset;
  if (faults_.stall_at_bytes) n = std::min<uint64_t>(n, *faults_.stall_at_bytes - forwarded_);
  if (faults_.reset_at_bytes && *faults_.reset_at_bytes > forwarded_)
    n = std::min<uint64_t>(n, *faults_.reset_at_bytes - forwarded_);
  if (faults_.rate > 0) {
    // Bytes leave the link once their transmission time has passed: N bytes take at
    // least N / rate seconds, the first slice included.
    if (paid_ == 0) {
      paid_ = std::min<size_t>(n, std::max<int64_t>(1, faults_.rate / kSlicesPerSecond));
      const auto cost = std::chrono::nanoseconds(static_cast<int64_t>(
          std::ceil(static_cast<double>(paid_) * 1e9 / static_cast<double>(faults_.rate))));
      link_free_ = std::max(link_free_, now) + cost;
    }
    if (link_free_ > now) return arm(link_free_);
    n = std::min(n, paid_);
  }
  writing_ = true;
  net::async_write(dst_, net::buffer(c.data.data() + c.offset, n),
                   [this, self = owner_.shared_from_this()](error_code ec, size_t written) {
                     on_write(ec, written);
                   });
}

void Pipe::arm(Clock::time_point when) {
  const uint64_t gen = ++timer_gen_;
  timer_.expires_at(when);
  timer_.async_wait([this, self = owner_.shared_from_this(), gen](error_code) {
    if (closed_ || gen != timer_gen_) return;
    if (fin_pending_) {
      fin_pending_ = false;
      return shutdown_dst();
    }
    pump();
  });
}

void Pipe::on_write(error_code ec, size_t n) {
  writing_ = false;
  if (closed_) return;
  if (ec) return owner_.pipe_failed(*this, "write", ec);
  forwarded_ += n;
  owner_.pipe_forwarded(direction_, n);
  paid_ -= std::min(paid_, n);
  Chunk& c = queue_.front();
  c.offset += n;
  queued_ -= n;
  if (c.offset == c.data.size()) queue_.pop_front();
  if (faults_.reset_at_bytes && forwarded_ >= *faults_.reset_at_bytes)
    return owner_.pipe_reset_point();
  do_read();
  pump();
}

void Pipe::send_fin() {
  if (faults_.slow_close && faults_.slow_close->count() > 0) {
    fin_pending_ = true;
    return arm(Clock::now() + *faults_.slow_close);
  }
  shutdown_dst();
}

void Pipe::shutdown_dst() {
  error_code ec;
  dst_.shutdown(tcp::socket::shutdown_send, ec);
  fin_sent_ = true;
  owner_.pipe_finished();
}

}  // namespace sy::faultproxy
