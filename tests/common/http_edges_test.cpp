// Strict, bounded edges of the HTTP server: framing a proxy in front could read
// differently is refused (folded header lines → 400, a transfer coding other than
// chunked → 501), HEAD reaches GET routes without a body, wildcard routes, and client
// text echoed in error messages is cut short.
#include <gtest/gtest.h>

#include "common/http/path.h"
#include "common/http/request_screen.h"
#include "common/http/server.h"
#include "http_test_client.h"

namespace sy::http {
namespace {

// Everything the server sends until it closes the connection.
std::string read_until_close(Client& c) {
  std::string out;
  char buf[4096];
  for (;;) {
    beast::error_code ec;
    const size_t n = c.socket().read_some(net::buffer(buf), ec);
    out.append(buf, n);
    if (ec) return out;
  }
}

TEST(HttpEdges, FoldedHeaderLineGets400) {
  TestServer s({}, hello_router());
  for (const char* fold : {" ", "\t"}) {
    Client c(s.port());
    c.send(std::string("GET /hello HTTP/1.1\r\nHost: t\r\nX-A: one\r\n") + fold + "two\r\n\r\n");
    auto r = c.read();
    EXPECT_EQ(r.result(), Status::bad_request);
    EXPECT_NE(error_of(r)["message"].get<std::string>().find("obs-fold"), std::string::npos);
    EXPECT_TRUE(c.closed_by_server());
  }
  // A fold split across two writes is found too.
  Client c(s.port());
  c.send("GET /hello HTTP/1.1\r\nHost: t\r\nX-A: one\r\n");
  std::this_thread::sleep_for(50ms);
  c.send(" two\r\n\r\n");
  EXPECT_EQ(c.read().result(), Status::bad_request);
  // Spaces inside a value are not a fold.
  Client ok(s.port());
  ok.send("GET /hello HTTP/1.1\r\nHost: t\r\nX-A: one two\r\n\r\n");
  EXPECT_EQ(ok.read().body(), "hello");
}

TEST(HttpEdges, BareLineFeedsAreRefusedAtOnce) {
  // The header block is read whole before parsing; a bare LF still gets the parser's
  // 400 at once rather than a wait for a CRLF CRLF that never comes.
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send("GET /hello HTTP/1.1\nHost: t\n\n");
  EXPECT_EQ(c.read().result(), Status::bad_request);
}

TEST(HttpEdges, UnimplementedTransferCodingGets501) {
  TestServer s({}, hello_router());
  for (const char* te : {"gzip, chunked", "chunked, gzip", "deflate", "identity"}) {
    Client c(s.port());
    c.send(std::string("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ") + te +
           "\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    auto r = c.read();
    EXPECT_EQ(r.result(), Status::not_implemented) << te;
    EXPECT_EQ(error_of(r)["code"], "transfer_coding_not_implemented") << te;
    EXPECT_TRUE(c.closed_by_server()) << te;
  }
  // Two Transfer-Encoding fields are one list ("gzip" then "chunked").
  Client two(s.port());
  two.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(two.read().result(), Status::not_implemented);
  // Plain chunked (any case) is read as before.
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  auto r = c.read();
  EXPECT_EQ(r.result(), Status::ok);
  EXPECT_EQ(r.body(), "hello");
}

TEST(HttpEdges, HeadOnAGetRouteAnswersHeadersOnly) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send("HEAD /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  const std::string raw = read_until_close(c);
  EXPECT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  EXPECT_NE(raw.find("Content-Length: 5\r\n"), std::string::npos) << raw;  // what GET would send
  const size_t end = raw.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(raw.size(), end + 4) << "a HEAD response has no body: " << raw;
  // HEAD on a POST-only route is still 405, without a body.
  Client p(s.port());
  p.send("HEAD /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  const std::string refused = read_until_close(p);
  EXPECT_EQ(refused.rfind("HTTP/1.1 405", 0), 0u) << refused;
  EXPECT_EQ(refused.size(), refused.find("\r\n\r\n") + 4) << refused;
}

TEST(HttpEdges, WildcardRouteMatchesLongerPathsOnly) {
  Router r = hello_router();
  r.add(Verb::get, "/items/*", [](std::shared_ptr<Exchange> ex) {
    ex->respond(Status::ok, "text/plain", std::string(ex->path()));
  });
  TestServer s({}, std::move(r));
  Client c(s.port());
  c.send(get("/items/a/b"));
  EXPECT_EQ(c.read().body(), "/items/a/b");
  c.send(get("/items/"));
  EXPECT_EQ(c.read().result(), Status::not_found);
  c.send(get("/items"));
  EXPECT_EQ(c.read().result(), Status::not_found);
}

TEST(HttpEdges, EchoedPathIsBounded) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send(get("/" + std::string(10000, 'p')));
  auto r = c.read();
  EXPECT_EQ(r.result(), Status::not_found);
  EXPECT_LT(r.body().size(), 600u);
  EXPECT_NE(error_of(r)["message"].get<std::string>().find("\u2026"), std::string::npos);
}

TEST(HttpEdges, EchoInputCutsAtACharacterBoundary) {
  EXPECT_EQ(echo_input("short"), "short");
  EXPECT_EQ(echo_input(std::string(200, 'a')), std::string(200, 'a'));
  EXPECT_EQ(echo_input(std::string(201, 'a')), std::string(200, 'a') + "\u2026");
  // "é" is two bytes; a cut inside it backs up to before it.
  const std::string s = std::string(199, 'a') + "\xc3\xa9" + "bbb";
  EXPECT_EQ(echo_input(s), std::string(199, 'a') + "\u2026");
  const ApiError e = ApiError::model_not_found(std::string(3 << 20, 'm'));
  EXPECT_LT(e.message.size(), 300u);
  // Whatever a message quotes, the body stays bounded.
  const std::string body = api_error_body(ApiError::bad_request(std::string(1 << 20, 'x')));
  EXPECT_LT(body.size(), kMaxErrorMessageBytes + 200);
}

TEST(HttpEdges, PercentDecode) {
  EXPECT_EQ(percent_decode("org%2Fname"), "org/name");
  EXPECT_EQ(percent_decode("a%2fb%20c"), "a/b c");
  EXPECT_EQ(percent_decode("100%"), "100%");
  EXPECT_EQ(percent_decode("%zz%4"), "%zz%4");
}

TEST(HttpEdges, HeaderBlockScan) {
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\r\nHost: t\r\n"), HeaderBlock::kIncomplete);
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\r\nHost: t\r\n\r\n"), HeaderBlock::kComplete);
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\r\nHost: t\r\n\r\n body is not headers"), HeaderBlock::kComplete);
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"), HeaderBlock::kFolded);
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\r\nA: b\r\n\tc"), HeaderBlock::kFolded);
  EXPECT_EQ(scan_header_block("GET / HTTP/1.1\nHost: t\n"), HeaderBlock::kComplete);
}

}  // namespace
}  // namespace sy::http
