// GET /internal/kv-events on the HTTP server: each subscriber gets the KvEventHub's
// snapshot, then every later event as it is published, one SSE `data:` line per event
// (docs/PROTOCOL.md), a `: ping` comment every 15 s so that either side notices a dead
// peer, and an `event: error` (kv_events_overflow) when it falls too far behind.
//
// Shared by the worker and the simulated worker. Thread-safe: the hub may publish from
// any thread; each stream drains on its connection's strand.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common/http/server.h"
#include "common/kv_cache/kv_events.h"

namespace sy::http {

class KvEventStreams {
 public:
  // `hub` must outlive every stream served.
  explicit KvEventStreams(KvEventHub& hub) : hub_(hub) {}

  // Answers `ex` with the event stream; 503 (shutting_down) after close_all().
  void serve(std::shared_ptr<Exchange> ex);
  // Ends every open stream and refuses new ones (shutdown).
  void close_all();

  class Stream;

 private:
  KvEventHub& hub_;
  std::mutex mu_;
  bool closed_ = false;
  std::vector<std::weak_ptr<Stream>> streams_;
};

}  // namespace sy::http
