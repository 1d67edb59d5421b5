// The HTTP server's hardening against hostile or broken clients, with trivial handlers:
// slowloris headers closed at one deadline however they trickle, a client that stops
// reading dropped by the write timeout or the output bound (and its handler cancelled),
// the connection limit, refusals counted in ServerStats and exposed as metrics, leases
// held by an exchange, and a socket handed to serve().
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <future>

#include "common/http/server.h"
#include "common/http/server_metrics.h"
#include "http_test_client.h"

namespace sy::http {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Sends `bytes` one at a time, `gap` apart, until the server closes the connection or
// all are sent. Returns whether the server closed it first.
bool trickle(Client& c, const std::string& bytes, std::chrono::milliseconds gap) {
  for (char b : bytes) {
    beast::error_code ec;
    net::write(c.socket(), net::buffer(&b, 1), ec);
    if (ec) return true;
    // Anything readable now is the server closing (it never answers a partial request).
    char buf[64];
    c.socket().non_blocking(true);
    c.socket().read_some(net::buffer(buf), ec);
    c.socket().non_blocking(false);
    if (ec == net::error::eof || ec == net::error::connection_reset) return true;
    std::this_thread::sleep_for(gap);
  }
  return false;
}

const std::string kSlowRequest = "GET /hello HTTP/1.1\r\nHost: t\r\nX-Pad: " + std::string(200, 'p') + "\r\n\r\n";

TEST(HttpLimits, SlowlorisHeadersAreClosedAtTheHeaderDeadline) {
  ServerOptions o;
  o.header_timeout = 1s;
  TestServer s(o, hello_router());
  Client c(s.port());
  const auto start = Clock::now();
  // A byte every 50 ms keeps the connection busy but would take 12 s to finish.
  EXPECT_TRUE(trickle(c, kSlowRequest, 50ms)) << "the server waited for every byte";
  const double closed_after = seconds_since(start);
  EXPECT_GE(closed_after, 0.9);
  EXPECT_LT(closed_after, 5.0);
  EXPECT_EQ(s.server().stats()->header_timeouts.load(), 1u);
}

TEST(HttpLimits, TheFirstRequestsDeadlineCountsFromTheConnection) {
  // A client that waits before its first byte does not get a fresh header timeout then.
  ServerOptions o;
  o.header_timeout = 2s;
  TestServer s(o, hello_router());
  Client c(s.port());
  const auto start = Clock::now();
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(trickle(c, kSlowRequest, 50ms));
  // 2 s from the connection; a deadline restarted at the first byte would be 3.5 s.
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(HttpLimits, SlowlorisOnAKeptAliveConnectionIsClosedToo) {
  ServerOptions o;
  o.header_timeout = 1s;
  TestServer s(o, hello_router());
  Client c(s.port());
  c.send(get("/hello"));
  EXPECT_EQ(c.read().body(), "hello");
  const auto start = Clock::now();
  EXPECT_TRUE(trickle(c, kSlowRequest, 50ms));
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(s.server().stats()->header_timeouts.load(), 1u);
}

// A handler that streams `chunk` every `gap` for as long as write() accepts, and reports
// how many bytes it got rid of and whether it was cancelled.
struct Firehose {
  Workers w;
  std::promise<size_t> accepted;
  std::promise<void> cancelled;
  std::chrono::milliseconds gap{0};
  size_t chunk = 4096;
  static constexpr size_t kCap = size_t{1} << 30;
  Router router() {
    Router r;
    r.add(Verb::get, "/flood", [this](std::shared_ptr<Exchange> ex) {
      ex->on_cancel([this] { cancelled.set_value(); });
      ex->start_stream();
      w.run([this, ex]() mutable {
        const std::string data(chunk, 'x');
        size_t total = 0;
        while (total < kCap && ex->write(data)) {
          total += data.size();
          if (gap.count()) std::this_thread::sleep_for(gap);
        }
        ex->finish();
        ex.reset();  // before the test, and with it the server, may end
        accepted.set_value(total);
      });
    });
    return r;
  }
};

// Asks for the flood and never reads; a small receive buffer keeps the bytes parked in
// the kernel few.
void ask_and_never_read(Client& c) {
  const int small = 4096;
  ::setsockopt(c.socket().native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  c.send(get("/flood"));
}

TEST(HttpLimits, AReaderThatStopsIsDroppedByTheWriteTimeout) {
  ServerOptions o;
  o.write_timeout = 300ms;
  o.max_stream_queue = 256 << 20;  // not the bound that acts here
  Firehose f;
  f.gap = 2ms;  // ~2 MB/s: the kernel's buffers fill within seconds, the queue stays small
  TestServer s(o, f.router());
  Client c(s.port());
  ask_and_never_read(c);
  auto accepted = f.accepted.get_future();
  ASSERT_EQ(accepted.wait_for(60s), std::future_status::ready);
  EXPECT_LT(accepted.get(), Firehose::kCap);
  EXPECT_EQ(f.cancelled.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(s.server().stats()->write_timeouts.load(), 1u);
  EXPECT_EQ(s.server().stats()->streams_dropped.load(), 0u);
}

TEST(HttpLimits, AReaderThatStopsIsDroppedAtTheOutputBound) {
  ServerOptions o;
  o.max_stream_queue = 64 * 1024;
  o.write_timeout = 60s;  // not the bound that acts here
  Firehose f;
  TestServer s(o, f.router());
  Client c(s.port());
  ask_and_never_read(c);
  auto accepted = f.accepted.get_future();
  ASSERT_EQ(accepted.wait_for(60s), std::future_status::ready);
  // What the handler got rid of is the queue plus what the kernel holds, far below the cap.
  EXPECT_LT(accepted.get(), size_t{64} << 20);
  EXPECT_EQ(f.cancelled.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(s.server().stats()->streams_dropped.load(), 1u);
  // The connection is gone: the server holds nothing for it.
  bool closed = false;
  for (int i = 0; i < 200 && !closed; ++i) {
    closed = s.server().connections() == 0;
    if (!closed) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(closed);
}

TEST(HttpLimits, OneWriteLargerThanTheOutputBoundStillGoesOut) {
  // The bound is on the backlog a slow client leaves, not on one message (a KV-event
  // snapshot of a large cache is one write).
  ServerOptions o;
  o.max_stream_queue = 4096;
  Router r;
  r.add(Verb::get, "/big", [](std::shared_ptr<Exchange> ex) {
    ex->start_stream();
    EXPECT_TRUE(ex->write(std::string(256 * 1024, 'b')));
    ex->finish();
  });
  TestServer s(o, std::move(r));
  Client c(s.port());
  c.send(get("/big"));
  EXPECT_EQ(c.read().body().size(), 256u * 1024);
  EXPECT_EQ(s.server().stats()->streams_dropped.load(), 0u);
}

TEST(HttpLimits, RefusalsAreCountedAndExposedAsMetrics) {
  ServerOptions o;
  o.body_limit = 1024;
  o.max_connections = 2;
  TestServer s(o, hello_router());
  // Each refused connection is closed by the server after its answer; wait until it is
  // gone before the next one, or (slow under ASan) the limit of two refuses the third.
  const auto settle = [&] {
    for (int i = 0; i < 500 && s.server().connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  };
  {
    Client c(s.port());
    c.send(get("/hello", "X-Big: " + std::string(20 * 1024, 'a') + "\r\n"));
    EXPECT_EQ(c.read().result(), static_cast<Status>(431));
  }
  settle();
  {
    Client c(s.port());
    c.send(post("/echo", std::string(2000, 'b')));
    EXPECT_EQ(c.read().result(), Status::payload_too_large);
  }
  settle();
  {
    Client c(s.port());
    c.send("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n");
    EXPECT_EQ(c.read().result(), Status::bad_request);
  }
  // Wait until the refused connections are gone, then hold two and try a third.
  settle();
  Client a(s.port()), b(s.port());
  a.send(get("/hello"));
  b.send(get("/hello"));
  EXPECT_EQ(a.read().body(), "hello");
  EXPECT_EQ(b.read().body(), "hello");
  Client third(s.port());
  EXPECT_EQ(third.read().result(), Status::service_unavailable);

  const auto& st = *s.server().stats();
  EXPECT_EQ(st.rejected_431.load(), 1u);
  EXPECT_EQ(st.rejected_413.load(), 1u);
  EXPECT_EQ(st.rejected_400.load(), 1u);
  EXPECT_EQ(st.connections_refused.load(), 1u);
  EXPECT_EQ(st.connections_accepted.load(), 5u);
  MetricsRegistry m;
  register_server_metrics(m, s.server(), "api");
  const std::string text = m.expose();
  for (const char* line : {"switchyard_http_connections_refused_total{listener=\"api\"} 1",
                           "switchyard_http_requests_refused_total{listener=\"api\",status=\"431\"} 1",
                           "switchyard_http_requests_refused_total{listener=\"api\",status=\"413\"} 1",
                           "switchyard_http_connections_accepted_total{listener=\"api\"} 5",
                           "switchyard_http_connections{listener=\"api\"} 2",
                           "switchyard_http_timeouts_total{listener=\"api\",phase=\"header\"} 0"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(HttpLimits, HeldResourcesAreReleasedWithTheExchange) {
  std::atomic<int> released{0};
  std::promise<std::shared_ptr<Exchange>> got;
  Router r;
  r.add(Verb::get, "/lease", [&](std::shared_ptr<Exchange> ex) {
    ex->hold(std::shared_ptr<void>(nullptr, [&](void*) { ++released; }));
    got.set_value(ex);
  });
  TestServer s({}, std::move(r));
  Client c(s.port());
  c.send(get("/lease"));
  auto ex = got.get_future().get();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(released.load(), 0) << "released while the handler still holds the exchange";
  ex->respond(Status::ok, "text/plain", "done");
  ex.reset();
  EXPECT_EQ(c.read().body(), "done");
  for (int i = 0; i < 200 && released.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(released.load(), 1);
}

TEST(HttpLimits, ServeTakesAConnectedSocket) {
  net::io_context ioc;
  HttpServer server(ioc, {}, hello_router());
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  timeval tv{10, 0};
  ::setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  tcp::socket mine(ioc), theirs(ioc);
  mine.assign(tcp::v4(), fds[0]);
  theirs.assign(tcp::v4(), fds[1]);
  server.serve(std::move(theirs));
  const std::string req = get("/hello", "Connection: close\r\n");
  net::write(mine, net::buffer(req));
  std::string out;
  std::thread runner([&] { ioc.run_for(10s); });
  char buf[1024];
  beast::error_code ec;
  while (!ec) {
    const size_t n = mine.read_some(net::buffer(buf), ec);
    out.append(buf, n);
  }
  runner.join();
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("\r\n\r\nhello"), std::string::npos) << out;
}

}  // namespace
}  // namespace sy::http
