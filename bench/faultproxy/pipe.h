// One direction of a proxied connection: reads from one socket, delays, paces or holds
// the chunks as the connection's toxics say, and writes them to the other socket in
// order. At most `max_queue` bytes wait in a pipe: beyond that it stops reading, so a
// peer that stops reading pushes back on the sender instead of growing the proxy.
//
// A pipe lives inside its Connection and runs on the proxy's single io_context thread.
// Every pending operation holds the connection alive; after close() no handler touches
// the sockets again.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace sy::faultproxy {

class Connection;
using Clock = std::chrono::steady_clock;

// What the toxics that apply to a connection do to one of its directions.
struct PipeFaults {
  std::chrono::milliseconds latency{0};                 // added to each chunk
  std::chrono::milliseconds jitter{0};                  // ± uniformly around `latency`
  int64_t rate = 0;                                     // bytes/s; 0: unlimited
  std::optional<uint64_t> stall_at_bytes;               // forwarding stops at this count
  std::optional<Clock::time_point> stall_at;            // ... or at this time
  std::optional<uint64_t> reset_at_bytes;               // the connection is reset at this count
  bool blackhole = false;                               // read and discard
  std::optional<std::chrono::milliseconds> slow_close;  // FIN held this long
};

class Pipe {
 public:
  using tcp = boost::asio::ip::tcp;

  // `src` and `dst` belong to `owner` and outlive the pipe's operations.
  Pipe(Connection& owner, unsigned direction, tcp::socket& src, tcp::socket& dst, size_t max_queue,
       std::mt19937_64& rng);

  void start();
  // For a pipe whose source is never connected (a blackholed client's upstream side).
  void skip();
  // Replaces the faults; takes effect for chunks read from now on (latency, jitter) and
  // for what is still queued (rate, stall, reset).
  void set_faults(const PipeFaults& faults);
  // No more reads or writes; pending handlers find the pipe closed.
  void close();

  unsigned direction() const { return direction_; }
  uint64_t forwarded() const { return forwarded_; }  // bytes written to dst
  // The source has closed and everything (FIN included) is delivered.
  bool finished() const { return fin_sent_; }

 private:
  struct Chunk {
    std::string data;
    size_t offset = 0;  // bytes already written
    Clock::time_point release;
  };

  void do_read();
  void on_read(boost::system::error_code ec, size_t n);
  // Starts the next write, or arms the timer for when one may start.
  void pump();
  bool stalled(Clock::time_point now) const;
  void arm(Clock::time_point when);
  void on_write(boost::system::error_code ec, size_t n);
  void send_fin();  // now, or after the slow close delay
  void shutdown_dst();

  Connection& owner_;
  const unsigned direction_;
  tcp::socket& src_;
  tcp::socket& dst_;
  const size_t max_queue_;
  std::mt19937_64& rng_;
  boost::asio::steady_timer timer_;
  uint64_t timer_gen_ = 0;  // a wait whose generation is stale does nothing

  PipeFaults faults_;
  std::deque<Chunk> queue_;
  size_t queued_ = 0;
  std::string read_buf_;
  Clock::time_point last_release_{};  // releases never go backwards: order is kept
  Clock::time_point link_free_{};     // bandwidth: when the paid-for bytes have passed
  size_t paid_ = 0;                   // bytes of the front chunk already paced
  uint64_t forwarded_ = 0;
  bool reading_ = false;
  bool writing_ = false;
  bool eof_ = false;
  Clock::time_point eof_release_{};
  bool fin_pending_ = false;  // slow close: waiting to send the FIN
  bool fin_sent_ = false;
  bool closed_ = false;
};

}  // namespace sy::faultproxy
