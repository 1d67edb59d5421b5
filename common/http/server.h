// An HTTP/1.1 server on Boost.Beast for the worker and the gateway: a listener on
// host:port (port 0: the OS chooses; port() reports it), one session per connection on
// its own strand, keep-alive, limits (header bytes → 431, body bytes → 413, header,
// body, idle and write timeouts, connections), a router, plain and streaming responses,
// and notice of a client that goes away while its request is being served.
//
// The server runs on an io_context the caller owns and runs (on any number of threads);
// it starts no threads of its own. Handlers run on the connection's strand and may
// complete from any thread: every Exchange method is thread-safe and hands the work to
// that strand.
//
// Limits protect the process from hostile or broken clients: a request's headers must
// arrive within header_timeout of the connection (or, on a kept-alive connection, of the
// request's first byte), however slowly they trickle; a response the client does not
// read is dropped once max_stream_queue bytes wait for it or one write stalls for
// write_timeout, and its handler sees the client gone. ServerStats counts each refusal.
//
// One request is served at a time per connection (HTTP/1.1 answers in order anyway).
// While a handler works, the session keeps waiting for the socket to become readable:
// EOF or a reset means the client is gone, and the exchange's cancel callback runs so
// the handler can stop the work. Bytes that arrive meanwhile (a pipelined request) are
// kept, up to ServerOptions::max_read_ahead, and served next.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol/api_error.h"

namespace sy::http {

namespace bhttp = boost::beast::http;

using Request = bhttp::request<bhttp::string_body>;
using Response = bhttp::response<bhttp::string_body>;
using Status = bhttp::status;
using Verb = bhttp::verb;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;                    // 0: chosen by the OS
  size_t header_limit = 16 * 1024;      // request line + headers; above: 431
  size_t body_limit = 4 * 1024 * 1024;  // above: 413
  // For a request's headers: from the connection's start (first request) or the
  // request's first byte (later ones) to the end of the headers (slowloris clients).
  std::chrono::milliseconds header_timeout{15'000};
  std::chrono::milliseconds body_timeout{30'000};
  // Between requests on a kept-alive connection (also before the first request).
  std::chrono::milliseconds idle_timeout{60'000};
  // One write to the client; a reader that stalls longer loses the connection.
  std::chrono::milliseconds write_timeout{30'000};
  size_t max_connections = 1024;  // beyond: 503 and close
  // Streamed bytes queued for a connection whose client reads slower than the response
  // is produced: a write made while more than this waits drops the connection (and
  // cancels the request). So a connection holds at most this plus one write.
  size_t max_stream_queue = 1024 * 1024;
  // The kernel's send buffer per connection (SO_SNDBUF; Linux doubles it), so that a
  // client that stops reading pins this much, not the autotuned megabytes; 0: the OS's.
  size_t send_buffer_bytes = 256 * 1024;
  // Bytes read ahead while a handler works (a pipelined request); beyond this the
  // session stops reading until the response is done.
  size_t max_read_ahead = 64 * 1024;
  std::string server_name = "switchyard";
  // Unexpected network errors (not EOF, resets or timeouts); null: silent.
  std::function<void(const std::string&)> log;
};

// What the server refused or cut off, for /metrics. Counters only grow.
struct ServerStats {
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_refused{0};  // beyond max_connections
  std::atomic<uint64_t> header_timeouts{0};      // slow or unfinished headers
  std::atomic<uint64_t> body_timeouts{0};
  std::atomic<uint64_t> idle_timeouts{0};        // kept-alive connections closed
  std::atomic<uint64_t> write_timeouts{0};       // a client that stopped reading
  std::atomic<uint64_t> streams_dropped{0};      // max_stream_queue exceeded
  std::atomic<uint64_t> rejected_400{0};         // malformed requests
  std::atomic<uint64_t> rejected_413{0};         // bodies over body_limit
  std::atomic<uint64_t> rejected_431{0};         // headers over header_limit
  std::atomic<uint64_t> rejected_501{0};         // a transfer coding other than chunked
};

class Session;

// One request and its response. Handlers receive it as a shared_ptr and keep it for as
// long as the response is being produced; dropping the last reference without a
// response sends 500. All methods are thread-safe.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Session> session, uint64_t seq, Request request);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  const Request& request() const { return request_; }
  std::string_view path() const;   // the target without its query
  std::string_view query() const;  // after '?', or empty
  // The connection's strand: timers and completions of this request's work may run there.
  boost::asio::any_io_executor executor() const;

  // Adds a header to the response, whichever kind it will be; call before responding.
  void add_header(std::string name, std::string value);

  // A complete response. Only the first respond() or start_stream() counts.
  void respond(Response response);
  void respond(Status status, std::string content_type, std::string body);
  void respond_json(Status status, std::string json_text);
  void respond_error(const ApiError& error);

  // A streamed response: the status and headers now, then each write() as it comes
  // (chunked transfer encoding), then finish(). For text/event-stream the server also
  // sets Cache-Control: no-cache.
  void start_stream(Status status = Status::ok, std::string content_type = "text/event-stream");
  // Queues bytes; false when they will never reach the client (gone, the stream's
  // queue overflowed, which drops the connection, or finish() was called).
  bool write(std::string data);
  void finish();

  // Keeps `resource` alive until the exchange is destroyed, which is when its handler
  // lets go of it after the response: a per-request lease (a concurrency slot) whose
  // destructor gives it back.
  void hold(std::shared_ptr<void> resource);

  // `on_cancel` runs once, on the connection's strand, if the client goes away before
  // the response is complete; at once if it already has. Never after the response is
  // complete.
  void on_cancel(std::function<void()> on_cancel);
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class Session;
  std::shared_ptr<Session> session_;
  const uint64_t seq_;  // which request of the connection this is
  Request request_;
  std::atomic<bool> answered_{false};
  std::mutex headers_mu_;
  std::vector<std::pair<std::string, std::string>> headers_;  // added by add_header()
  std::vector<std::shared_ptr<void>> held_;                   // by hold(); under headers_mu_
  std::atomic<bool> finished_{false};
  std::atomic<bool> cancelled_{false};
};

using Handler = std::function<void(std::shared_ptr<Exchange>)>;

// Method + exact path → handler. A known path with another method is 405, an unknown
// path 404, both with an OpenAI-style error body (none for HEAD: a HEAD request gets
// headers only). HEAD reaches a route registered for HEAD or, failing that, the GET
// route of the path, whose response loses its body (RFC 9110 §9.3.2). A path ending in
// '*' matches every longer path that starts with what precedes the '*'
// ("/v1/models/*": "/v1/models/tiny", not "/v1/models/").
class Router {
 public:
  void add(Verb method, std::string path, Handler handler);
  // The handler, or null with `status` set to 404 or 405.
  const Handler* find(Verb method, std::string_view path, Status& status) const;

 private:
  struct Route {
    Verb method;
    std::string path;
    Handler handler;
  };
  std::vector<Route> routes_;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& ioc, ServerOptions options, Router router);
  ~HttpServer();  // closes every connection
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. A bind failure is a startup error: its message, or ""
  // when listening.
  std::string start();
  uint16_t port() const { return port_; }
  const ServerOptions& options() const;

  // Graceful stop, from any thread: no new connections; idle connections close; a
  // request in progress completes and then its connection closes.
  void stop();
  // Closes every connection now (after stop(), once the drain time is over); requests
  // in progress see their client gone.
  void close_all();
  // Open connections.
  size_t connections() const;
  // Counters of this server, valid as long as the pointer is held (metrics read them).
  std::shared_ptr<const ServerStats> stats() const;

  // Serves an already connected socket as one more connection, without start(): for
  // tests and fuzzers that hand the server one end of a socketpair.
  void serve(boost::asio::ip::tcp::socket socket);

 private:
  struct State;
  class Listener;
  boost::asio::io_context& ioc_;
  std::shared_ptr<State> state_;
  std::shared_ptr<Listener> listener_;
  uint16_t port_ = 0;
};

}  // namespace sy::http
