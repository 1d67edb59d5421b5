// For fuzz targets of the HTTP server: one client connection to an HttpServer through a
// socketpair (no ports, no TIME_WAIT, microseconds per input), run on the caller's
// thread, and a check that the bytes the server wrote are well-formed HTTP responses.
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/server.h"

namespace sy::fuzz {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz check failed: %s\n%.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

// Sends `input` on a new connection to `server` (which runs on `ioc`), then, with
// `half_close`, closes the sending side (the server takes that as the client leaving, so a
// response in progress may be cut short), and returns everything the server wrote until
// it closed. A server that has not closed within `limit` is a bug (a hang): abort.
inline std::string run_connection(net::io_context& ioc, http::HttpServer& server, std::string_view input, bool half_close,
                                  std::chrono::seconds limit = std::chrono::seconds(10)) {
  int fds[2];
  check(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
  tcp::socket client(ioc), end(ioc);
  client.assign(tcp::v4(), fds[0]);
  end.assign(tcp::v4(), fds[1]);
  server.serve(std::move(end));
  std::string out;
  bool closed = false;
  std::vector<char> buf(16 * 1024);
  std::function<void()> read_more = [&] {
    client.async_read_some(net::buffer(buf), [&](beast::error_code ec, size_t n) {
      out.append(buf.data(), n);
      if (ec) {
        closed = true;
        return;
      }
      read_more();
    });
  };
  read_more();
  net::async_write(client, net::buffer(input.data(), input.size()), [&](beast::error_code, size_t) {
    beast::error_code ec;
    if (half_close) client.shutdown(tcp::socket::shutdown_send, ec);
  });
  ioc.restart();
  ioc.run_for(limit);
  if (!closed) fail("the server did not close the connection after the client did", input);
  return out;
}

// Parses `out` as consecutive HTTP/1.1 responses (each final one for a request of
// `methods`, in order: a HEAD's answer has no body); aborts on anything else. With
// `last_may_be_cut`, the last one may end inside its body (the client left). Returns the
// final responses, complete or not.
inline std::vector<bhttp::response<bhttp::string_body>> parse_responses(std::string_view out, const std::vector<bhttp::verb>& methods,
                                                                        bool last_may_be_cut = false) {
  std::vector<bhttp::response<bhttp::string_body>> responses;
  while (!out.empty()) {
    bhttp::response_parser<bhttp::string_body> p;
    p.eager(true);
    p.body_limit(64 << 20);
    p.header_limit(64 << 10);
    if (responses.size() < methods.size() && methods[responses.size()] == bhttp::verb::head) p.skip(true);
    beast::error_code ec;
    while (!p.is_done()) {
      const size_t n = p.put(net::buffer(out.data(), out.size()), ec);
      out.remove_prefix(n);
      if (ec && ec != bhttp::error::need_more) break;
      ec = {};
      if (n > 0) continue;
      p.put_eof(ec);  // all there is was given: only a body that runs to the close ends here
      break;
    }
    const bool cut = last_may_be_cut && out.empty() && p.is_header_done() && ec == bhttp::error::partial_message;
    check(cut || (!ec && p.is_done()), "the server wrote something that is not an HTTP response", out);
    auto r = p.release();
    if (r.result_int() >= 200) responses.push_back(std::move(r));
  }
  return responses;
}

}  // namespace sy::fuzz
