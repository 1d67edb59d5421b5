// The fault-injecting TCP proxy: accepts on a listen address, forwards each connection to
// one upstream through the toxics configured at the time (see connection.h for when a
// toxic takes effect), and offers the operations of the control API.
//
// Threading: the proxy, its connections and the control server run on one io_context
// that exactly one thread runs; nothing is locked.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "bench/faultproxy/listener.h"
#include "bench/faultproxy/proxy_state.h"

namespace sy::faultproxy {

class FaultProxy {
 public:
  using tcp = boost::asio::ip::tcp;

  FaultProxy(boost::asio::io_context& ioc, ProxyOptions options);
  ~FaultProxy();  // resets open connections
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Binds (port 0: the OS chooses) and starts accepting: "" or why it could not.
  std::string listen(const tcp::endpoint& endpoint);
  uint16_t port() const { return listener_.port(); }
  // Stops accepting and resets every open connection.
  void stop();

  uint64_t add_toxic(const Toxic& toxic);  // its id
  bool remove_toxic(uint64_t id);          // false: no such toxic
  size_t clear_toxics();                   // how many there were
  size_t reset_all();                      // how many connections were reset

  // {"toxics": [{"id", "applied", <the toxic's fields>}...]}
  Json toxics_json() const;
  // Counters since start; see ProxyStats.
  Json stats_json() const;

 private:
  void toxics_changed();

  std::shared_ptr<ProxyState> state_;
  Listener listener_;
};

}  // namespace sy::faultproxy
