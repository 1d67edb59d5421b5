// A server program's main loop around an HttpServer: print the URL it listens on, serve
// on a few threads until SIGINT or SIGTERM, then shut down in order. Shared by
// `switchyard-worker serve` and the simulated worker.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "common/http/server.h"

namespace sy::http {

struct ServeLoopOptions {
  std::string program;  // first word of the listening line, e.g. "switchyard-worker"
  int threads = 2;      // threads running `ioc`
  std::chrono::milliseconds drain{5000};  // how long open connections may finish
};

// `server` must be started (bound) on `ioc`. Prints one line on stdout,
// "<program> listening on http://HOST:PORT" (with port 0 the OS chose the port, and this
// line is how a supervisor or a test learns it), runs `ioc` on `threads` threads until
// SIGINT or SIGTERM, then: stops accepting, calls `on_stop` (end event streams, abort
// requests in flight), lets connections drain up to `drain`, closes the rest and joins
// the threads. Returns the signal number.
int serve_until_signal(boost::asio::io_context& ioc, HttpServer& server,
                       const ServeLoopOptions& options, const std::function<void()>& on_stop);

}  // namespace sy::http
