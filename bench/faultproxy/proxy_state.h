// What the fault proxy's listener, its connections and its control API share. Everything
// here is used on the proxy's one io_context thread only, so nothing is locked;
// connections hold the state alive past the FaultProxy object.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>

#include "bench/faultproxy/toxic.h"

namespace sy::faultproxy {

class Connection;

struct ProxyOptions {
  boost::asio::ip::tcp::endpoint upstream;
  size_t max_queue_bytes = 1 << 20;  // per direction of a connection
  std::chrono::milliseconds connect_timeout{5000};
  uint64_t seed = 0;
};

struct ToxicEntry {
  Toxic toxic;
  uint64_t applied = 0;  // connections it applied to
};

struct ProxyStats {
  uint64_t accepted = 0;
  uint64_t open = 0;
  uint64_t refused = 0;            // closed at accept by a down toxic
  uint64_t reset_by_toxic = 0;     // reset by a reset toxic (at accept or later)
  uint64_t reset_by_request = 0;   // reset by POST /reset-all
  uint64_t upstream_failures = 0;  // upstream connect failed or timed out (client reset)
  uint64_t bytes_up = 0;           // forwarded client → upstream
  uint64_t bytes_down = 0;         // forwarded upstream → client
  uint64_t discarded_up = 0;       // read and dropped by a blackhole
  uint64_t discarded_down = 0;
  std::map<ToxicType, uint64_t> applied;  // by type, over every toxic ever added
};

struct ProxyState {
  explicit ProxyState(ProxyOptions o) : options(std::move(o)), rng(options.seed) {}

  ProxyOptions options;
  std::mt19937_64 rng;
  std::map<uint64_t, ToxicEntry> toxics;  // by id, in the order they were added
  uint64_t next_toxic_id = 1;
  ProxyStats stats;
  std::map<uint64_t, std::weak_ptr<Connection>> connections;  // open ones, by id
  uint64_t next_connection_id = 1;
};

}  // namespace sy::faultproxy
