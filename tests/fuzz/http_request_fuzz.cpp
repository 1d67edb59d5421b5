// libFuzzer target: the HTTP server reading requests as the worker and the gateway run
// it (common/http: Boost.Beast's parser under our header and body limits, keep-alive,
// pipelining, 100-continue, refusals and their lingering close), fed arbitrary client
// bytes through a socketpair. Whatever the bytes, the server must write only
// well-formed HTTP responses, at most one per request the same parser finds in the
// input plus one refusal, each with a status it may send (the last possibly cut short:
// the client's close ends the input and, by design, tells the server it left), and close
// the connection once the client has. A crash, a sanitizer report, a hang or garbage output is a bug.
#include <boost/beast/http/parser.hpp>
#include <cstddef>
#include <cstdint>
#include <set>

#include "fuzz_connection.h"

namespace {

using namespace sy;
using fuzz::bhttp::verb;

// Small limits, so that inputs of a few KiB reach them.
constexpr size_t kHeaderLimit = 1024;
constexpr size_t kBodyLimit = 2048;

http::Router routes() {
  http::Router r;
  r.add(verb::get, "/hello", [](auto ex) { ex->respond(http::Status::ok, "text/plain", "hello"); });
  r.add(verb::post, "/echo", [](auto ex) { ex->respond(http::Status::ok, "application/octet-stream", ex->request().body()); });
  r.add(verb::get, "/stream", [](auto ex) {
    ex->start_stream();
    for (int i = 0; i < 3; ++i) ex->write("data: " + std::to_string(i) + "\n\n");
    ex->finish();
  });
  r.add(verb::get, "/drop", [](auto) {});  // answered 500 when the exchange goes
  return r;
}

struct Harness {
  fuzz::net::io_context ioc;
  http::HttpServer server;
  Harness() : server(ioc, options(), routes()) {}
  static http::ServerOptions options() {
    http::ServerOptions o;
    o.header_limit = kHeaderLimit;
    o.body_limit = kBodyLimit;
    o.header_timeout = std::chrono::seconds(2);
    o.body_timeout = std::chrono::seconds(2);
    o.idle_timeout = std::chrono::seconds(2);
    o.write_timeout = std::chrono::seconds(2);
    return o;
  }
};

// The methods of the requests the same parser, with the same limits, finds in `input`,
// in order, including a last one refused after its headers.
std::vector<verb> requests_in(std::string_view input) {
  std::vector<verb> methods;
  while (!input.empty()) {
    fuzz::bhttp::request_parser<fuzz::bhttp::string_body> p;
    p.eager(true);
    p.header_limit(kHeaderLimit);
    p.body_limit(kBodyLimit);
    fuzz::beast::error_code ec;
    const size_t n = p.put(fuzz::net::buffer(input.data(), input.size()), ec);
    input.remove_prefix(n);
    // A request refused after its headers (413) is answered as its method requires.
    if (p.is_header_done()) methods.push_back(p.get().method());
    if (ec || !p.is_done()) break;
  }
  return methods;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();  // one server for every input; never destroyed
  if (size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string out = fuzz::run_connection(h->ioc, h->server, input, true);
  const std::vector<verb> methods = requests_in(input);
  // The client's close (to end the input) may cut the response in progress short.
  const auto responses = fuzz::parse_responses(out, methods, true);
  fuzz::check(responses.size() <= methods.size() + 1, "more responses than requests", out);
  // 501: a transfer coding other than chunked (refused rather than misread).
  static const std::set<int> allowed = {200, 400, 404, 405, 413, 431, 500, 501};
  for (const auto& r : responses) {
    fuzz::check(allowed.count(r.result_int()) == 1, "a status the server must not send", out);
    fuzz::check(r[fuzz::bhttp::field::server] == "switchyard", "a response without the Server header", out);
  }
  return 0;
}
