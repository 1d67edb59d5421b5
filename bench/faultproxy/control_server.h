// The control API's HTTP/1.1 listener: keep-alive, one request at a time per connection,
// a header and body limit (→ 400/413 with a JSON error), a 30 s timeout on every read
// and write. common/http's router matches exact paths only, and `DELETE /toxics/ID`
// carries a parameter in its path, so the control API has this small server of its own.
// Runs on the proxy's io_context (one thread).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <memory>
#include <string>

#include "bench/faultproxy/listener.h"

namespace sy::faultproxy {

using ControlRequest = boost::beast::http::request<boost::beast::http::string_body>;
using ControlResponse = boost::beast::http::response<boost::beast::http::string_body>;

class ControlServer {
 public:
  using tcp = boost::asio::ip::tcp;
  using Handler = std::function<ControlResponse(const ControlRequest&)>;

  ControlServer(boost::asio::io_context& ioc, Handler handler);

  std::string listen(const tcp::endpoint& endpoint);  // "" or why not
  uint16_t port() const { return listener_.port(); }
  void stop() { listener_.stop(); }  // no new connections

 private:
  std::shared_ptr<Handler> handler_;  // shared with the sessions
  Listener listener_;
};

// A JSON response with the request's HTTP version and keep-alive.
ControlResponse json_response(const ControlRequest& req, unsigned status, std::string body);

}  // namespace sy::faultproxy
