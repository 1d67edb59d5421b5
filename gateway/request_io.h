// What a ProxyRequest does to the world, behind three small interfaces so that its state
// machine runs the same over sockets and in unit tests: the client (the exchange and the
// OpenAI responder), the calls to workers, and the watchdog alarm on the injected clock.
// All of them run on the request's executor (its client connection's strand).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/openai_responder.h"
#include "common/http/server.h"
#include "common/protocol/openai.h"
#include "gateway/upstream_call.h"
#include "policy/clock.h"

namespace sy::gateway {

// The client's side of one request.
class ClientSide {
 public:
  virtual ~ClientSide() = default;
  virtual boost::asio::any_io_executor executor() const = 0;
  // `f` runs once, on the executor, if the client leaves before the response is complete.
  virtual void on_cancel(std::function<void()> f) = 0;
  virtual bool cancelled() const = 0;
  virtual void add_header(std::string name, std::string value) = 0;
  // A worker's own refusal (a 4xx JSON body), passed on as is.
  virtual void respond_json(int status, std::string body) = 0;
  virtual void tokens(const std::vector<http::ResponderToken>& tokens) = 0;
  virtual void finish(std::string_view finish_reason, std::string_view text, const Usage& usage) = 0;
  virtual void fail(const ApiError& error) = 0;
  virtual bool begun() const = 0;  // the response has started (headers sent)
};

// The client over a real exchange, answered by the shared OpenAI responder.
std::unique_ptr<ClientSide> exchange_client(std::shared_ptr<http::Exchange> exchange, const ResponseHeader& header,
                                            const Tokenizer& tokenizer, const OpenAiRequest& request);

// Starts a call to a worker; every handler runs on the request's executor.
using WorkerConnect = std::function<std::shared_ptr<CancellableCall>(UpstreamRequest, UpstreamHandlers)>;
WorkerConnect upstream_connect(boost::asio::any_io_executor ex);

// One pending wake-up at a time on the clock's time line.
class Alarm {
 public:
  virtual ~Alarm() = default;
  // Replaces any pending wake-up: `f` runs on the executor at `due_s` (clock seconds).
  virtual void set(double due_s, std::function<void()> f) = 0;
  virtual void cancel() = 0;
};

// An Alarm on an asio steady timer, due times read on `clock`.
std::unique_ptr<Alarm> steady_alarm(boost::asio::any_io_executor ex, std::shared_ptr<const policy::Clock> clock);

// What one request's I/O goes through.
struct RequestIo {
  std::unique_ptr<ClientSide> client;
  WorkerConnect connect;
  std::unique_ptr<Alarm> watchdog;
};

}  // namespace sy::gateway
