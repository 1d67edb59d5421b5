// One proxied connection: the accepted client socket, the upstream socket, the two pipes
// between them and the toxics that apply to it.
//
// Which toxics apply is drawn once per toxic and connection, with the toxic's
// probability: at accept for every toxic there is, and when a latency, bandwidth or
// stall toxic is added while the connection is open. Deleting such a toxic lifts it at
// once (a stalled connection resumes); reset, blackhole, slow_close and down stay as
// decided at accept.
//
// Closing: a FIN from one side is passed on (after what is queued, and after any slow
// close delay) and the connection closes once both directions have ended; a read or
// write error (a reset, a peer gone) resets both sides, so faults propagate.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <set>
#include <vector>

#include "bench/faultproxy/pipe.h"
#include "bench/faultproxy/proxy_state.h"

namespace sy::faultproxy {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using tcp = boost::asio::ip::tcp;

  Connection(tcp::socket client, std::shared_ptr<ProxyState> state);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  uint64_t id() const { return id_; }
  // Draws the toxics, then refuses, resets or connects upstream as they say.
  void start();
  // The proxy's toxic list changed.
  void update_toxics();
  // Abortive close of both sides now (SO_LINGER 0: each peer sees ECONNRESET).
  void reset();

 private:
  friend class Pipe;
  struct Applied {
    uint64_t id;
    Toxic toxic;
    Clock::time_point met;
    uint64_t met_bytes[2];  // bytes forwarded up / down when the toxic met the connection
  };

  // Draws the toxic's probability; true (and counted) when it applies.
  bool meet(uint64_t id, ToxicEntry& entry);
  void apply_faults();
  void on_connect(boost::system::error_code ec);
  // Marks the connection closed and stops its pipes and timers; false if it already was.
  bool begin_close();
  void close_gracefully();

  // From the pipes.
  void pipe_failed(Pipe& pipe, const char* what, boost::system::error_code ec);
  void pipe_reset_point();
  void pipe_finished();
  void pipe_read(unsigned direction, size_t n, bool discarded);
  void pipe_forwarded(unsigned direction, size_t n);

  std::shared_ptr<ProxyState> state_;
  const uint64_t id_;
  tcp::socket client_;
  tcp::socket upstream_;
  Pipe up_;
  Pipe down_;
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer reset_timer_;
  std::vector<Applied> applied_;
  std::set<uint64_t> seen_;  // toxic ids whose probability was drawn
  bool connected_ = false;   // to the upstream
  bool closed_ = false;
};

}  // namespace sy::faultproxy
