// The limits that make the gateway and the worker safe to expose, against real processes
// on loopback: oversized headers (431) and bodies (413), a slowloris client trickling
// its headers, a client that never reads a long stream (its connection is dropped, its
// request cancelled on the worker, the server's memory stays bounded), per-key rate and
// concurrency limits (429 with Retry-After), admin routes refused without the admin
// key, and CORS off unless configured.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

#include "fixture_util.h"
#include "gateway/gateway_process.h"
#include "worker/fixture_edit.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

using namespace std::chrono_literals;
using testing::GatewayProcess;
using testing::http_request;
using testing::HttpResult;
namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

const std::string kModel = "qwen3-tiny-bf16.gguf";

// A fleet of one replica on the fixture model; `extra` is more YAML at the top level.
std::string write_config(const std::string& name, const std::string& extra) {
  const std::string path = testing::temp_path(name + ".yaml");
  std::ofstream(path) << "model: " << testing::fixture_path(kModel) << "\n"
                      << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                      << "modes:\n  throughput: {replicas: 1}\n"
                      << "worker: {binary: " << SY_BIN_DIR << "/switchyard-worker, kv_memory_gb: 0.1, max_num_seqs: 4}\n"
                      << "startup: {stagger_s: 0, ready_timeout_s: 60, restart_backoff_initial_s: 0.3}\n"
                      << extra;
  return path;
}

class Gateway {
 public:
  Gateway(const std::string& name, const std::string& extra, const std::vector<std::string>& flags = {})
      : config_(write_config(name, extra)),
        proc_(std::string(SY_BIN_DIR) + "/switchyard-gateway", with_config(config_, flags), testing::temp_path(name + ".log")) {}
  ~Gateway() {
    proc_.terminate();
    std::filesystem::remove(config_);
  }
  GatewayProcess& proc() { return proc_; }
  uint16_t port() const { return proc_.port(); }
  uint16_t admin_port() const { return proc_.admin_port(); }

  nlohmann::json status(const std::string& admin_key) {
    const auto r = http_request(admin_port(), "GET", "/admin/status", {}, bearer(admin_key));
    return r.status == 200 ? r.json() : nlohmann::json();
  }
  std::string metrics(const std::string& admin_key) { return http_request(admin_port(), "GET", "/metrics", {}, bearer(admin_key)).body; }
  // Waits for the replica to be ready; false on timeout.
  bool wait_ready(const std::string& admin_key) {
    const auto deadline = Clock::now() + 120s;
    while (Clock::now() < deadline) {
      const auto s = status(admin_key);
      if (s.is_object() && s["replicas"].size() == 1 && s["replicas"][0]["state"] == "ready") {
        proc_.remember_worker(s["replicas"][0]["pid"].get<pid_t>());
        return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  static std::string bearer(const std::string& key) { return key.empty() ? "" : "Authorization: Bearer " + key + "\r\n"; }

 private:
  static std::vector<std::string> with_config(const std::string& config, std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--config", config});
    return flags;
  }
  std::string config_;
  GatewayProcess proc_;
};

// The value of one series ("name{labels}") in Prometheus text; -1 when absent.
double metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + series.size() + 2);
}

// A raw connection: bytes as the test chooses, a small receive buffer when asked.
class RawClient {
 public:
  explicit RawClient(uint16_t port, int receive_buffer = 0) : socket_(ioc_) {
    socket_.open(tcp::v4());
    if (receive_buffer > 0)  // before connecting, so that the window is small from the start
      ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    beast::error_code ec;
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    testing::set_receive_timeout(socket_.native_handle(), 10);
  }
  bool send(const std::string& bytes) {
    beast::error_code ec;
    net::write(socket_, net::buffer(bytes), ec);
    return !ec;
  }
  // Reads until `needle` arrived (true) or the connection ended or timed out (false).
  bool read_until(const std::string& needle) {
    while (got_.find(needle) == std::string::npos) {
      char buf[4096];
      beast::error_code ec;
      const size_t n = socket_.read_some(net::buffer(buf), ec);
      if (ec) return false;
      got_.append(buf, n);
    }
    return true;
  }
  // Sends `bytes` one at a time, `gap` apart; true when the server closed the connection
  // before all were sent.
  bool trickle(const std::string& bytes, std::chrono::milliseconds gap) {
    for (char b : bytes) {
      if (!send(std::string(1, b))) return true;
      char buf[256];
      beast::error_code ec;
      socket_.non_blocking(true);
      socket_.read_some(net::buffer(buf), ec);
      socket_.non_blocking(false);
      if (ec == net::error::eof || ec == net::error::connection_reset) return true;
      std::this_thread::sleep_for(gap);
    }
    return false;
  }
  void close() {
    beast::error_code ec;
    socket_.close(ec);
  }
  const std::string& got() const { return got_; }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  std::string got_;
};

// `promtool check metrics` on `text`: "" when it passes, else what promtool said. Unset
// when promtool is not installed (scripts/setup.sh installs Debian's prometheus).
std::optional<std::string> promtool_problems(const std::string& text, const std::string& name) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string in = testing::temp_path(name + ".prom"), out = testing::temp_path(name + ".promtool");
  std::ofstream(in) << text;
  const int rc = std::system(("promtool check metrics < " + in + " > " + out + " 2>&1").c_str());
  std::ifstream f(out);
  const std::string said((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  return rc == 0 && said.empty() ? std::string() : "exit status " + std::to_string(rc) + ": " + said;
}

std::string post_text(const std::string& path, const std::string& body, const std::string& headers = {}) {
  return testing::request_text("POST", path, body, headers);
}

// Top-20 logprobs make each token's chunk about 2 KB: the whole answer (~3 MB, a minute
// of generation here) is far more than the bounds, which act within the first hundred
// tokens.
const nlohmann::json kLongLogprobStream = {{"messages", {{{"role", "user"}, {"content", "Tell me a long story"}}}},
                                           {"max_tokens", 1500},
                                           {"ignore_eos", true},
                                           {"stream", true},
                                           {"logprobs", true},
                                           {"top_logprobs", 20}};

const std::string kTrickled = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(300, 'p') + "\r\n\r\n";

// ---- the gateway ----

TEST(GatewayLimits, OversizedHeadersAndBodiesAndSlowloris) {
  Gateway gw("limits_sizes", "limits: {max_body_bytes: 65536, header_timeout_s: 1}\n");
  ASSERT_GT(gw.port(), 0) << gw.proc().log();
  const HttpResult big_header =
      http_request(gw.port(), "POST", "/v1/completions", R"({"prompt":"hi"})", "X-Big: " + std::string(20 * 1024, 'h') + "\r\n");
  EXPECT_EQ(big_header.status, 431);
  EXPECT_NE(big_header.body.find("headers_too_large"), std::string::npos) << big_header.body;
  const HttpResult big_body = http_request(gw.port(), "POST", "/v1/completions", R"({"prompt":")" + std::string(100 * 1024, 'b') + "\"}");
  EXPECT_EQ(big_body.status, 413);
  EXPECT_NE(big_body.body.find("request_too_large"), std::string::npos) << big_body.body;

  RawClient slow(gw.port());
  const auto start = Clock::now();
  EXPECT_TRUE(slow.trickle(kTrickled, 50ms)) << "the gateway waited for a trickling client's every byte";
  EXPECT_LT(Clock::now() - start, 5s);
  const std::string m = gw.metrics("");
  EXPECT_EQ(metric(m, R"(switchyard_http_timeouts_total{listener="api",phase="header"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(switchyard_http_requests_refused_total{listener="api",status="431"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(switchyard_http_requests_refused_total{listener="api",status="413"})"), 1) << m;
  // The gateway still serves.
  EXPECT_EQ(http_request(gw.port(), "GET", "/health").status, 200);
}

TEST(GatewayLimits, AClientThatNeverReadsIsDroppedAndItsRequestCancelled) {
  // Small bounds so that the test is quick: 16 KiB of output waits in the gateway, the
  // kernel holds about twice its 16 KiB send buffer.
  Gateway gw("limits_reader", "limits: {max_stream_buffer_bytes: 16384, socket_send_buffer_bytes: 16384, write_timeout_s: 5}\n");
  ASSERT_TRUE(gw.wait_ready("")) << gw.proc().log();
  const std::string worker_url = gw.status("")["replicas"][0]["url"];
  const uint16_t worker_port = static_cast<uint16_t>(std::stoi(worker_url.substr(worker_url.rfind(':') + 1)));
  RawClient reader(gw.port(), 4096);
  ASSERT_TRUE(reader.send(post_text("/v1/chat/completions", kLongLogprobStream.dump())));
  // Never read. The gateway drops the stream (output bound or write timeout) and cancels
  // the worker's request.
  const auto deadline = Clock::now() + 60s;
  std::string m;
  double dropped = 0;
  while (Clock::now() < deadline) {
    m = gw.metrics("");
    dropped = metric(m, R"(switchyard_http_streams_dropped_total{listener="api"})") +
              metric(m, R"(switchyard_http_timeouts_total{listener="api",phase="write"})");
    if (dropped >= 1) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_GE(dropped, 1) << m;
  // The worker stops generating: nothing running, and the request counted as aborted
  // rather than finished.
  std::string wm;
  bool stopped = false;
  for (auto until = Clock::now() + 10s; Clock::now() < until && !stopped; std::this_thread::sleep_for(50ms)) {
    wm = http_request(worker_port, "GET", "/metrics").body;
    stopped = metric(wm, "switchyard_worker_requests_running") == 0 && metric(wm, "switchyard_worker_requests_aborted_total") >= 1;
  }
  EXPECT_TRUE(stopped) << wm;
  EXPECT_EQ(metric(wm, "switchyard_worker_requests_finished_total"), 0) << "the request ran to its end";
  const auto s = gw.status("");
  EXPECT_EQ(s["counters"]["cancelled"].get<int>(), 1) << s.dump();
  EXPECT_EQ(s["in_flight"].get<int>(), 0);
  reader.close();
}

TEST(GatewayLimits, PerKeyRateAndConcurrencyLimitsAnswer429WithRetryAfter) {
  Gateway gw("limits_keys",
             "api_keys:\n  - plain-key\n  - {key: rate-key, requests_per_s: 0.2, burst: 2}\n  - {key: conc-key, max_concurrent: 1}\n");
  ASSERT_TRUE(gw.wait_ready("")) << gw.proc().log();
  const std::string small = R"({"prompt":"hi","max_tokens":1})";
  auto complete = [&](const std::string& key) { return http_request(gw.port(), "POST", "/v1/completions", small, Gateway::bearer(key)); };
  // The burst of two passes; the third is refused until a token refills (5 s at 0.2/s).
  EXPECT_EQ(complete("rate-key").status, 200);
  EXPECT_EQ(complete("rate-key").status, 200);
  const HttpResult limited = complete("rate-key");
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_NE(limited.body.find("rate_limited"), std::string::npos) << limited.body;
  const int retry_after = std::atoi(limited.header("retry-after").c_str());
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 5);
  EXPECT_EQ(complete("plain-key").status, 200) << "another key is not limited by rate-key's bucket";

  // conc-key: one request in progress at a time.
  RawClient first(gw.port());
  const nlohmann::json long_stream = {{"prompt", "a long story"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
  ASSERT_TRUE(first.send(post_text("/v1/completions", long_stream.dump(), Gateway::bearer("conc-key"))));
  ASSERT_TRUE(first.read_until("data: {")) << "the first stream did not start";
  const HttpResult second = complete("conc-key");
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_NE(second.body.find("concurrency_limited"), std::string::npos) << second.body;
  EXPECT_EQ(second.header("retry-after"), "1");
  first.close();  // the client leaves: its slot comes back
  int status = 0, refused_meanwhile = 0;  // a try sent before the gateway saw the close is refused too
  for (auto until = Clock::now() + 10s; Clock::now() < until && status != 200; std::this_thread::sleep_for(100ms)) {
    status = complete("conc-key").status;
    refused_meanwhile += status == 429;
  }
  EXPECT_EQ(status, 200) << "the slot of a finished request was not given back";

  const std::string m = gw.metrics("");
  EXPECT_EQ(metric(m, R"(switchyard_gateway_requests_rejected_total{reason="rate_limited"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(switchyard_gateway_requests_rejected_total{reason="concurrency_limited"})"), 1 + refused_meanwhile) << m;
}

TEST(GatewayLimits, AdminRoutesNeedTheAdminKey) {
  Gateway gw("limits_admin", "api_keys: [user-key]\nadmin_key: admin-key\n");
  ASSERT_GT(gw.admin_port(), 0) << gw.proc().log();
  EXPECT_NE(gw.admin_port(), gw.port()) << "admin routes on the API listener";
  for (const char* path : {"/admin/status", "/metrics", "/admin/events"}) {
    EXPECT_EQ(http_request(gw.admin_port(), "GET", path).status, 401) << path;
    EXPECT_EQ(http_request(gw.admin_port(), "GET", path, {}, Gateway::bearer("user-key")).status, 401) << path << " with a user key";
  }
  EXPECT_EQ(http_request(gw.admin_port(), "POST", "/admin/mode", R"({"mode":"throughput"})", Gateway::bearer("user-key")).status, 401);
  EXPECT_EQ(http_request(gw.admin_port(), "GET", "/admin/status", {}, Gateway::bearer("admin-key")).status, 200);
  EXPECT_EQ(http_request(gw.admin_port(), "GET", "/metrics", {}, Gateway::bearer("admin-key")).status, 200);
  // Admin routes are not on the API listener.
  EXPECT_EQ(http_request(gw.port(), "GET", "/admin/status", {}, Gateway::bearer("admin-key")).status, 404);
}

TEST(GatewayLimits, AdminOffLoopbackWithoutAKeyIsRefusedAtStartup) {
  Gateway gw("limits_admin_open", "", {"--admin-listen", "0.0.0.0:0"});
  EXPECT_EQ(gw.port(), 0) << "the gateway started";
  EXPECT_NE(gw.proc().log().find("admin_listen: '0.0.0.0:0' is reachable from other hosts"), std::string::npos) << gw.proc().log();
}

// Issue 16 item 5: both /metrics texts follow Prometheus's conventions (counters typed as
// counters and named _total, no gauge named like a counter), on real processes that have
// served a request.
TEST(GatewayMetrics, GatewayAndWorkerPassPromtool) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)";
  Gateway gw("metrics_promtool", "");
  ASSERT_TRUE(gw.wait_ready("")) << gw.proc().log();
  ASSERT_EQ(http_request(gw.port(), "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2})").status, 200);
  const std::string worker_url = gw.status("")["replicas"][0]["url"];
  const uint16_t worker_port = static_cast<uint16_t>(std::stoi(worker_url.substr(worker_url.rfind(':') + 1)));
  const std::string gm = gw.metrics("");
  const std::string wm = http_request(worker_port, "GET", "/metrics").body;
  ASSERT_NE(gm.find("switchyard_gateway_requests_total 1"), std::string::npos) << gm;
  ASSERT_NE(wm.find("switchyard_worker_kv_blocks_capacity "), std::string::npos) << wm;
  EXPECT_NE(gm.find("# TYPE switchyard_gateway_hedges_total counter"), std::string::npos) << gm;
  EXPECT_EQ(promtool_problems(gm, "metrics_gateway"), "") << gm;
  EXPECT_EQ(promtool_problems(wm, "metrics_worker"), "") << wm;
  // The gateway reads the renamed capacity gauge from the worker's text (every 2 s).
  int64_t kv_total = 0;
  for (auto until = Clock::now() + 10s; Clock::now() < until && kv_total == 0; std::this_thread::sleep_for(100ms))
    kv_total = gw.status("")["replicas"][0]["kv"]["blocks_total"].get<int64_t>();
  EXPECT_EQ(kv_total, static_cast<int64_t>(metric(wm, "switchyard_worker_kv_blocks_capacity")));
}

// Issue 16 item 6 at the gateway: /v1/models needs a key when keys are set, the Bearer
// scheme in any case, GET /v1/models/{id}, HEAD on GET routes, and a huge model name
// not echoed whole.
TEST(GatewayEdges, ModelsKeysHeadAndBoundedEchoes) {
  Gateway gw("edges_models", "api_keys: [user-key]\nlimits: {max_body_bytes: 8388608}\n");
  ASSERT_GT(gw.port(), 0) << gw.proc().log();
  EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models").status, 401);
  EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models", {}, "Authorization: Bearer wrong-key\r\n").status, 401);
  for (const char* auth : {"Bearer user-key", "bearer user-key", "BEARER  user-key"})
    EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models", {}, std::string("Authorization: ") + auth + "\r\n").status, 200) << auth;
  EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models", {}, "Authorization: Basic dXNlci1rZXk=\r\n").status, 401);
  const std::string key = Gateway::bearer("user-key");
  const auto list = http_request(gw.port(), "GET", "/v1/models", {}, key).json();
  const std::string id = list["data"][0]["id"];
  EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models/" + id).status, 401);
  const HttpResult one = http_request(gw.port(), "GET", "/v1/models/" + id, {}, key);
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json(), list["data"][0]) << one.body;
  const HttpResult unknown = http_request(gw.port(), "GET", "/v1/models/no-such-model", {}, key);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found") << unknown.body;
  EXPECT_EQ(unknown.json()["error"]["type"], "invalid_request_error") << unknown.body;

  // A 3 MB model name comes back cut to a few hundred bytes.
  const nlohmann::json huge = {{"model", std::string(3 << 20, 'm')}, {"prompt", "hi"}};
  const HttpResult refused = http_request(gw.port(), "POST", "/v1/completions", huge.dump(), key);
  EXPECT_EQ(refused.status, 404);
  EXPECT_LT(refused.body.size(), 1000u);
  EXPECT_NE(refused.json()["error"]["message"].get<std::string>().find("\u2026"), std::string::npos) << refused.body;

  // HEAD on GET routes: the GET's status and headers, no body.
  for (const std::string& path : {std::string("/health"), std::string("/v1/models")}) {
    RawClient head(gw.port());
    ASSERT_TRUE(head.send("HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + key + "\r\n"));
    head.read_until("never arrives: the server closes");
    EXPECT_EQ(head.got().rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << path << ": " << head.got();
    EXPECT_EQ(head.got().size(), head.got().find("\r\n\r\n") + 4) << path << " has a body: " << head.got();
  }
}

// listen equal to admin_listen: one listener serves both, with a warning; off loopback
// without an admin key the gateway does not start.
TEST(GatewayEdges, SharedListenAndAdminListen) {
  uint16_t free_port = 0;
  {
    net::io_context ioc;
    tcp::acceptor a(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    free_port = a.local_endpoint().port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(free_port);
  {
    Gateway gw("edges_shared", "", {"--listen", address, "--admin-listen", address});
    ASSERT_EQ(gw.port(), free_port) << gw.proc().log();
    EXPECT_EQ(http_request(gw.port(), "GET", "/admin/status").status, 200);
    EXPECT_NE(gw.proc().log().find("warning: listen and admin_listen are both " + address), std::string::npos) << gw.proc().log();
  }
  Gateway open("edges_shared_open", "", {"--listen", "0.0.0.0:" + std::to_string(free_port), "--admin-listen", "0.0.0.0:" + std::to_string(free_port)});
  EXPECT_EQ(open.port(), 0) << "the gateway started";
  EXPECT_NE(open.proc().log().find("reachable from other hosts"), std::string::npos) << open.proc().log();
}

TEST(GatewayLimits, CorsIsOffUnlessConfigured) {
  const std::string origin = "Origin: https://app.example\r\n";
  const std::string preflight = origin + "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n";
  {
    Gateway gw("limits_cors_off", "");
    ASSERT_GT(gw.port(), 0) << gw.proc().log();
    const HttpResult pre = http_request(gw.port(), "OPTIONS", "/v1/chat/completions", {}, preflight);
    EXPECT_EQ(pre.status, 405);
    const HttpResult get = http_request(gw.port(), "GET", "/v1/models", {}, origin);
    EXPECT_EQ(get.status, 200);
    for (const HttpResult* r : {&pre, &get})
      for (const auto& [name, value] : r->headers) EXPECT_NE(name.rfind("access-control-", 0), 0u) << name << ": " << value;
  }
  Gateway gw("limits_cors_on", "cors: {allow_origins: [\"https://app.example\"]}\n");
  ASSERT_GT(gw.port(), 0) << gw.proc().log();
  const HttpResult pre = http_request(gw.port(), "OPTIONS", "/v1/chat/completions", {}, preflight);
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "https://app.example");
  EXPECT_NE(pre.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(pre.header("access-control-allow-headers"), "authorization, content-type");
  EXPECT_EQ(pre.header("vary"), "Origin");
  const HttpResult get = http_request(gw.port(), "GET", "/v1/models", {}, origin);
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.header("access-control-allow-origin"), "https://app.example");
  // A browser may read who answered a response.
  EXPECT_EQ(get.header("access-control-expose-headers"), "Retry-After, x-switchyard-replica, x-switchyard-attempts");
  // Another origin gets no grant.
  const HttpResult other = http_request(gw.port(), "OPTIONS", "/v1/completions", {}, "Origin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n");
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.header("access-control-allow-origin"), "");
  EXPECT_EQ(http_request(gw.port(), "GET", "/v1/models", {}, "Origin: https://evil.example\r\n").header("access-control-allow-origin"), "");
}

// ---- the worker ----

TEST(WorkerEdges, ModelById) {
  testing::WorkerProcess w({"--model", testing::fixture_path(kModel), "--kv-memory-gb", "0.1"});
  ASSERT_GT(w.port(), 0);
  const auto list = http_request(w.port(), "GET", "/v1/models").json();
  const std::string id = list["data"][0]["id"];
  const HttpResult one = http_request(w.port(), "GET", "/v1/models/" + id);
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json(), list["data"][0]);
  const HttpResult unknown = http_request(w.port(), "GET", "/v1/models/" + std::string(5000, 'x'));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found");
  EXPECT_LT(unknown.body.size(), 600u);
}

TEST(WorkerLimits, OversizedHeadersAndBodiesSlowlorisAndANonReader) {
  testing::WorkerProcess w({"--model", testing::fixture_path(kModel), "--kv-memory-gb", "0.1", "--max-body-bytes", "4096",
                            "--header-timeout-s", "1", "--max-stream-buffer-bytes", "16384", "--socket-send-buffer-bytes", "16384"});
  ASSERT_GT(w.port(), 0);
  EXPECT_EQ(http_request(w.port(), "GET", "/health", {}, "X-Big: " + std::string(20 * 1024, 'h') + "\r\n").status, 431);
  EXPECT_EQ(http_request(w.port(), "POST", "/v1/completions", R"({"prompt":")" + std::string(8000, 'b') + "\"}").status, 413);
  RawClient slow(w.port());
  const auto start = Clock::now();
  EXPECT_TRUE(slow.trickle(kTrickled, 50ms));
  EXPECT_LT(Clock::now() - start, 5s);

  for (auto until = Clock::now() + 60s; Clock::now() < until && http_request(w.port(), "GET", "/ready").status != 200;)
    std::this_thread::sleep_for(100ms);
  RawClient reader(w.port(), 4096);
  ASSERT_TRUE(reader.send(post_text("/v1/chat/completions", kLongLogprobStream.dump())));
  std::string m;
  bool stopped = false;
  for (auto until = Clock::now() + 60s; Clock::now() < until && !stopped; std::this_thread::sleep_for(100ms)) {
    m = http_request(w.port(), "GET", "/metrics").body;
    stopped = metric(m, "switchyard_worker_requests_aborted_total") >= 1 && metric(m, "switchyard_worker_requests_running") == 0;
  }
  EXPECT_TRUE(stopped) << m;
  EXPECT_EQ(metric(m, "switchyard_worker_requests_finished_total"), 0) << "the request ran to its end";
  EXPECT_GE(metric(m, R"(switchyard_http_streams_dropped_total{listener="api"})") +
                metric(m, R"(switchyard_http_timeouts_total{listener="api",phase="write"})"),
            1)
      << m;
  EXPECT_EQ(metric(m, R"(switchyard_http_timeouts_total{listener="api",phase="header"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(switchyard_http_requests_refused_total{listener="api",status="431"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(switchyard_http_requests_refused_total{listener="api",status="413"})"), 1) << m;
}

}  // namespace
}  // namespace sy
