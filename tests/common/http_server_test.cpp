// The HTTP server library with trivial handlers: limits (431, 413), timeouts,
// keep-alive, pipelining, streaming, handlers completing from other threads, clients
// that go away, the connection limit and graceful stop (http_limits_test.cpp: the
// hardening limits against hostile clients).
#include <gtest/gtest.h>

#include <future>

#include "common/http/server.h"
#include "http_test_client.h"

namespace sy::http {
namespace {

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  TestServer s({}, hello_router());
  Client c(s.port());
  for (int i = 0; i < 3; ++i) {
    c.send(get("/hello"));
    auto r = c.read();
    EXPECT_EQ(r.result(), Status::ok);
    EXPECT_EQ(r.body(), "hello");
    EXPECT_TRUE(r.keep_alive());
  }
  c.send(post("/echo", "{\"a\":1}"));
  EXPECT_EQ(c.read().body(), "{\"a\":1}");
  EXPECT_EQ(s.server().connections(), 1u);
}

TEST(HttpServer, ConnectionCloseIsHonored) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send(get("/hello", "Connection: close\r\n"));
  auto r = c.read();
  EXPECT_EQ(r.body(), "hello");
  EXPECT_FALSE(r.keep_alive());
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, UnknownPathAndWrongMethodGetErrorBodies) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send(get("/nope"));
  auto r = c.read();
  EXPECT_EQ(r.result(), Status::not_found);
  EXPECT_EQ(error_of(r)["code"], "not_found");
  c.send(post("/hello", "{}"));
  r = c.read();
  EXPECT_EQ(r.result(), Status::method_not_allowed);
  EXPECT_EQ(error_of(r)["type"], "invalid_request_error");
  c.send(get("/hello?x=1"));  // the query is not part of the route
  EXPECT_EQ(c.read().body(), "hello");
}

TEST(HttpServer, HeadersBeyondTheLimitGet431) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send(get("/hello", "X-Big: " + std::string(20 * 1024, 'a') + "\r\n"));
  auto r = c.read();
  EXPECT_EQ(r.result(), static_cast<Status>(431));
  EXPECT_EQ(error_of(r)["code"], "headers_too_large");
  EXPECT_TRUE(c.closed_by_server());
  Client again(s.port());  // the server still serves
  again.send(get("/hello"));
  EXPECT_EQ(again.read().body(), "hello");
}

TEST(HttpServer, BodyBeyondTheLimitGets413) {
  ServerOptions o;
  o.body_limit = 1024;
  TestServer s(o, hello_router());
  {  // declared by Content-Length: refused before the body is read
    Client c(s.port());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000000\r\n\r\n" +
           std::string(2000, 'x'));
    auto r = c.read();
    EXPECT_EQ(r.result(), Status::payload_too_large);
    EXPECT_EQ(error_of(r)["code"], "request_too_large");
    EXPECT_TRUE(c.closed_by_server());
  }
  {  // chunked: refused when the body passes the limit
    Client c(s.port());
    std::string chunk(600, 'y');
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n" + chunk +
           "\r\n258\r\n" + chunk + "\r\n0\r\n\r\n");
    auto r = c.read();
    EXPECT_EQ(r.result(), Status::payload_too_large);
  }
  Client c(s.port());
  c.send(post("/echo", std::string(1024, 'z')));  // exactly the limit is fine
  EXPECT_EQ(c.read().body().size(), 1024u);
}

TEST(HttpServer, MalformedRequestGets400) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n");
  auto r = c.read();
  EXPECT_EQ(r.result(), Status::bad_request);
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, SlowHeadersTimeOut) {
  ServerOptions o;
  o.header_timeout = 200ms;
  TestServer s(o, hello_router());
  Client c(s.port());
  c.send("GET /hello HTTP/1.1\r\nHost: t\r\n");  // never finished
  EXPECT_TRUE(c.closed_by_server());
  Client silent(s.port());  // connects and sends nothing
  EXPECT_TRUE(silent.closed_by_server());
}

TEST(HttpServer, IdleKeptAliveConnectionCloses) {
  ServerOptions o;
  o.idle_timeout = 200ms;
  TestServer s(o, hello_router());
  Client c(s.port());
  c.send(get("/hello"));
  EXPECT_EQ(c.read().body(), "hello");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send(post("/echo", "one") + post("/echo", "two") + get("/hello"));
  EXPECT_EQ(c.read().body(), "one");
  EXPECT_EQ(c.read().body(), "two");
  EXPECT_EQ(c.read().body(), "hello");
}

TEST(HttpServer, ExpectContinueGetsA100First) {
  TestServer s({}, hello_router());
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  char buf[64] = {};
  const size_t n = c.socket().read_some(net::buffer(buf, 25));
  EXPECT_EQ(std::string(buf, n).rfind("HTTP/1.1 100 Continue", 0), 0u);
  c.send("body");
  EXPECT_EQ(c.read().body(), "body");
}

TEST(HttpServer, HandlersCompleteFromAnotherThread) {
  Workers w;
  Router r;
  r.add(Verb::get, "/later", [&](std::shared_ptr<Exchange> ex) {
    w.run([ex] {
      std::this_thread::sleep_for(50ms);
      ex->respond_json(Status::ok, "{\"done\":true}");
    });
  });
  TestServer s({}, std::move(r));
  Client c(s.port());
  c.send(get("/later"));
  auto res = c.read();
  EXPECT_EQ(res.result(), Status::ok);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  EXPECT_EQ(res.body(), "{\"done\":true}");
}

TEST(HttpServer, DroppedExchangeGets500) {
  Router r;
  r.add(Verb::get, "/drop", [](std::shared_ptr<Exchange>) {});
  TestServer s({}, std::move(r));
  Client c(s.port());
  c.send(get("/drop"));
  auto res = c.read();
  EXPECT_EQ(res.result(), Status::internal_server_error);
  EXPECT_EQ(error_of(res)["type"], "server_error");
}

TEST(HttpServer, StreamedResponseIsChunkedEventStream) {
  Workers w;
  Router r;
  r.add(Verb::get, "/events", [&](std::shared_ptr<Exchange> ex) {
    ex->start_stream();
    w.run([ex] {
      for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(ex->write("data: " + std::to_string(i) + "\n\n"));
        std::this_thread::sleep_for(5ms);
      }
      ex->finish();
    });
  });
  TestServer s({}, std::move(r));
  Client c(s.port());
  for (int round = 0; round < 2; ++round) {  // the connection is reusable after a stream
    c.send(get("/events"));
    auto res = c.read();
    EXPECT_EQ(res.result(), Status::ok);
    EXPECT_EQ(res[bhttp::field::content_type], "text/event-stream");
    EXPECT_EQ(res[bhttp::field::cache_control], "no-cache");
    EXPECT_TRUE(res.chunked());
    EXPECT_EQ(res.body(), "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  }
}

TEST(HttpServer, Http10StreamEndsWithTheConnection) {
  Router r;
  r.add(Verb::get, "/events", [](std::shared_ptr<Exchange> ex) {
    ex->start_stream();
    ex->write("data: a\n\n");
    ex->finish();
  });
  TestServer s({}, std::move(r));
  Client c(s.port());
  c.send("GET /events HTTP/1.0\r\n\r\n");
  auto res = c.read();
  EXPECT_FALSE(res.chunked());
  EXPECT_EQ(res.body(), "data: a\n\n");
}

// A handler that never answers and reports its cancellation.
struct CancelProbe {
  std::promise<void> cancelled;
  std::mutex mu;
  std::shared_ptr<Exchange> held;  // kept so the request stays open
  Router router() {
    Router r;
    r.add(Verb::post, "/wait", [this](std::shared_ptr<Exchange> ex) {
      {
        std::lock_guard<std::mutex> lock(mu);
        held = ex;
      }
      ex->on_cancel([this] { cancelled.set_value(); });
    });
    return r;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    held.reset();
  }
};

TEST(HttpServer, ClientClosingWhileTheHandlerWaitsCancels) {
  CancelProbe probe;
  TestServer s({}, probe.router());
  auto done = probe.cancelled.get_future();
  {
    Client c(s.port());
    c.send(post("/wait", "{}"));
    std::this_thread::sleep_for(50ms);  // the handler has the request
    c.close();
  }
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  {
    std::lock_guard<std::mutex> lock(probe.mu);
    ASSERT_TRUE(probe.held);
    EXPECT_TRUE(probe.held->cancelled());
    EXPECT_FALSE(probe.held->write("x"));
  }
  probe.release();
}

TEST(HttpServer, ClientClosingMidStreamCancelsAndWritesFail) {
  Workers w;
  std::promise<void> cancelled;
  std::promise<int> writes_until_failure;
  Router r;
  r.add(Verb::get, "/events", [&](std::shared_ptr<Exchange> ex) {
    ex->on_cancel([&] { cancelled.set_value(); });
    ex->start_stream();
    w.run([ex, &writes_until_failure] {
      int n = 0;
      while (ex->write("data: tick\n\n") && n < 100000) {
        ++n;
        std::this_thread::sleep_for(1ms);
      }
      writes_until_failure.set_value(n);
    });
  });
  TestServer s({}, std::move(r));
  {
    Client c(s.port());
    c.send(get("/events"));
    char buf[256];
    c.socket().read_some(net::buffer(buf));  // the stream has started
    c.close();
  }
  auto cf = cancelled.get_future();
  auto wf = writes_until_failure.get_future();
  ASSERT_EQ(cf.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(wf.wait_for(10s), std::future_status::ready);
  EXPECT_LT(wf.get(), 100000);
}

TEST(HttpServer, ReaderThatNeverReadsIsDroppedAtTheQueueBound) {
  Workers w;
  std::promise<void> cancelled;
  std::promise<size_t> bytes_until_failure;
  ServerOptions o;
  o.max_stream_queue = 64 * 1024;
  Router r;
  r.add(Verb::get, "/flood", [&](std::shared_ptr<Exchange> ex) {
    ex->on_cancel([&] { cancelled.set_value(); });
    ex->start_stream();
    w.run([ex, &bytes_until_failure] {
      const std::string chunk(4096, 'x');
      size_t total = 0;
      while (total < (size_t{1} << 30) && ex->write(chunk)) total += chunk.size();
      bytes_until_failure.set_value(total);
    });
  });
  TestServer s(o, std::move(r));
  Client c(s.port());
  c.send(get("/flood"));  // and never read
  auto bf = bytes_until_failure.get_future();
  ASSERT_EQ(bf.wait_for(30s), std::future_status::ready);
  EXPECT_LT(bf.get(), size_t{1} << 30);
  EXPECT_EQ(cancelled.get_future().wait_for(10s), std::future_status::ready);
}

TEST(HttpServer, ConnectionsBeyondTheLimitGet503) {
  ServerOptions o;
  o.max_connections = 1;
  TestServer s(o, hello_router());
  Client first(s.port());
  first.send(get("/hello"));
  EXPECT_EQ(first.read().body(), "hello");
  Client second(s.port());
  auto r = second.read();
  EXPECT_EQ(r.result(), Status::service_unavailable);
  EXPECT_EQ(error_of(r)["code"], "too_many_connections");
  first.close();
  // Once the first is gone (the server notices its close), a new one is served.
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    Client c(s.port());
    c.send(get("/hello"));
    beast::error_code ec;
    served = c.read(ec).result() == Status::ok;
    if (!served) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served);
}

TEST(HttpServer, GracefulStopLetsTheStreamInProgressFinish) {
  std::promise<std::shared_ptr<Exchange>> started;
  Router r = hello_router();
  r.add(Verb::get, "/events", [&](std::shared_ptr<Exchange> ex) {
    ex->start_stream();
    ex->write("data: before\n\n");
    started.set_value(ex);
  });
  TestServer s({}, std::move(r));
  Client idle(s.port());
  idle.send(get("/hello"));
  EXPECT_EQ(idle.read().body(), "hello");
  Client c(s.port());
  c.send(get("/events"));
  auto ex = started.get_future().get();
  s.server().stop();
  EXPECT_TRUE(idle.closed_by_server());  // idle connections close at once
  EXPECT_TRUE(ex->write("data: after\n\n"));
  ex->finish();
  ex.reset();
  auto res = c.read();
  EXPECT_EQ(res.body(), "data: before\n\ndata: after\n\n");
  EXPECT_TRUE(c.closed_by_server());  // its headers said keep-alive, but the server is stopping
  // No new connections.
  net::io_context ioc;
  tcp::socket sock(ioc);
  beast::error_code ec;
  std::this_thread::sleep_for(50ms);
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()), ec);
  EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace sy::http
