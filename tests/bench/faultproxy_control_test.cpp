// switchyard-faultproxy's control API (add, list, delete, clear, reset-all, stats, and
// 400/404/405 answers), its flags, and its robustness: clients that vanish mid-transfer,
// a client that stops reading (bounded buffering), all against the real process.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "faultproxy_process.h"
#include "loopback_peers.h"

namespace sy::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using End = Client::Read::End;

constexpr milliseconds kPatience{20'000};

TEST(FaultProxyControl, AddsListsDeletesAndClearsToxics) {
  TestUpstream echo(TestUpstream::Mode::kEcho);
  FaultProxyProcess proxy(echo.port(), {{{"type", "latency"}, {"latency_ms", 5}}});
  ASSERT_TRUE(proxy.started());
  EXPECT_EQ(proxy.toxics()["toxics"].size(), 1u);
  const int64_t a = proxy.add_toxic({{"type", "bandwidth"}, {"rate", 1000000}});
  const json added = proxy.last_reply().json();
  EXPECT_EQ(added["type"], "bandwidth");
  EXPECT_EQ(added["direction"], "both");
  EXPECT_EQ(added["probability"], 1.0);
  const int64_t b = proxy.add_toxic(
      {{"type", "stall"}, {"bytes", 10}, {"direction", "up"}, {"probability", 0.25}});
  ASSERT_GT(a, 0);
  ASSERT_GT(b, a);
  json list = proxy.toxics()["toxics"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2]["id"], b);
  EXPECT_EQ(list[2]["type"], "stall");
  EXPECT_EQ(list[2]["bytes"], 10);
  EXPECT_EQ(list[2]["direction"], "up");
  EXPECT_EQ(list[2]["probability"], 0.25);
  EXPECT_EQ(list[2]["applied"], 0);

  ASSERT_TRUE(proxy.remove_toxic(a));
  list = proxy.toxics()["toxics"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1]["id"], b);
  EXPECT_FALSE(proxy.remove_toxic(a));  // already gone
  EXPECT_EQ(proxy.last_reply().status, 404);
  EXPECT_EQ(proxy.last_reply().json()["error"]["code"], "toxic_not_found");

  ASSERT_TRUE(proxy.clear_toxics());
  EXPECT_EQ(proxy.last_reply().json()["deleted"], 2);
  EXPECT_TRUE(proxy.toxics()["toxics"].empty());
}

TEST(FaultProxyControl, BadInputGetsAClearError) {
  TestUpstream echo(TestUpstream::Mode::kEcho);
  FaultProxyProcess proxy(echo.port());
  ASSERT_TRUE(proxy.started());
  struct Case {
    std::string body;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"{\"type\": ", "malformed JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{}", "'type' is required"},
      {R"({"type": "flood"})", "unknown toxic type 'flood'"},
      {R"({"type": 3})", "'type' must be a string"},
      {R"({"type": "latency"})", "needs 'latency_ms'"},
      {R"({"type": "latency", "latency_ms": -1})", "'latency_ms' must be an integer in"},
      {R"({"type": "latency", "latency_ms": 1.5})", "'latency_ms' must be an integer"},
      {R"({"type": "latency", "latency_ms": 5, "rate": 9})", "'rate' does not apply"},
      {R"({"type": "bandwidth", "rate": 0})", "'rate' must be an integer in [1,"},
      {R"({"type": "stall", "direction": "sideways"})", "'direction' must be"},
      {R"({"type": "reset", "probability": 1.5})", "'probability' must be a number in [0, 1]"},
      {R"({"type": "reset", "probability": "high"})", "'probability' must be a number"},
      {R"({"type": "down", "direction": "up"})", "'direction' does not apply"},
      {R"({"type": "slow_close"})", "needs 'delay_ms'"},
  };
  for (const Case& c : cases) {
    const auto r = http_request(proxy.control_port(), "POST", "/toxics", c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    const std::string message = r.json()["error"].value("message", "");
    EXPECT_NE(message.find(c.message_part), std::string::npos) << c.body << " → " << message;
  }
  EXPECT_TRUE(proxy.toxics()["toxics"].empty());  // none of them was added
  EXPECT_EQ(http_request(proxy.control_port(), "DELETE", "/toxics/abc").status, 400);
  EXPECT_EQ(http_request(proxy.control_port(), "DELETE", "/toxics/-1").status, 400);
  EXPECT_EQ(http_request(proxy.control_port(), "GET", "/nowhere").status, 404);
  EXPECT_EQ(http_request(proxy.control_port(), "GET", "/reset-all").status, 405);
  EXPECT_EQ(http_request(proxy.control_port(), "POST", "/stats").status, 405);
  EXPECT_EQ(http_request(proxy.control_port(), "GET", "/toxics/1").status, 405);
  // Malformed HTTP gets a 400 too, and the proxy goes on answering.
  Client raw(proxy.control_port());
  ASSERT_EQ(raw.send_all("NOT HTTP AT ALL\r\n\r\n"), 0);
  EXPECT_NE(raw.read_to_end(kPatience).data.find("400 Bad Request"), std::string::npos);
  EXPECT_EQ(proxy.stats()["connections_accepted"], 0);
}

TEST(FaultProxyControl, ResetAllResetsOpenConnectionsOnly) {
  TestUpstream echo(TestUpstream::Mode::kEcho);
  FaultProxyProcess proxy(echo.port());
  ASSERT_TRUE(proxy.started());
  Client a(proxy.port()), b(proxy.port());
  for (Client* c : {&a, &b}) {
    ASSERT_EQ(c->send_all("hi"), 0);
    ASSERT_EQ(c->read(2, kPatience).data, "hi");
  }
  EXPECT_EQ(proxy.reset_all(), 2);
  EXPECT_EQ(a.read_to_end(kPatience).end, End::kReset);
  EXPECT_EQ(b.read_to_end(kPatience).end, End::kReset);
  Client after(proxy.port());
  ASSERT_EQ(after.send_all("still here"), 0);
  EXPECT_EQ(after.read(10, kPatience).data, "still here");
  const json s = proxy.stats();
  EXPECT_EQ(s["connections_accepted"], 3);
  EXPECT_EQ(s["connections_open"], 1);
  EXPECT_EQ(s["connections_reset_by_request"], 2);
  EXPECT_EQ(s["bytes_up"], 14);
}

TEST(FaultProxyControl, SurvivesClientsVanishingMidTransfer) {
  TestUpstream echo(TestUpstream::Mode::kEcho);
  // Latency keeps writes pending when the clients go, the small queue keeps the proxy
  // pausing and resuming reads.
  FaultProxyProcess proxy(echo.port(), {{{"type", "latency"}, {"latency_ms", 30}}},
                          {"--max-queue-bytes", "65536"});
  ASSERT_TRUE(proxy.started());
  const std::string data(512 * 1024, 'z');
  std::vector<std::thread> clients;
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back([&, i] {
      Client c(proxy.port());
      std::thread w([&] { c.send_all(data); });
      c.read(1000 * static_cast<size_t>(i), kPatience);
      // Half go with a reset, half with a FIN, none reads the rest.
      if (i % 2)
        c.abort();
      else
        ::shutdown(c.fd(), SHUT_RDWR);
      w.join();
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < 3; ++i) {
    Client c(proxy.port());
    ASSERT_EQ(c.send_all("alive"), 0);
    EXPECT_EQ(c.read(5, kPatience).data, "alive");
  }
  json s = json::object();
  for (int i = 0; i < 500 && s.value("connections_open", -1) != 0; ++i) {
    s = proxy.stats();
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(s["connections_open"], 0);
  EXPECT_EQ(s["connections_accepted"], 15);
  EXPECT_EQ(proxy.terminate(), 0);
}

// Resident memory of a process in KiB (VmRSS), or -1.
long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST(FaultProxyControl, AClientThatStopsReadingDoesNotGrowTheProxy) {
  TestUpstream flood(TestUpstream::Mode::kFlood);
  FaultProxyProcess proxy(flood.port(), {}, {"--max-queue-bytes", "262144"});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_TRUE(c.connected());
  // Read a little, then stop: the upstream may only fill the socket buffers on the way
  // (a few MiB each on loopback) and the proxy's 256 KiB queue.
  ASSERT_EQ(c.read(1000, kPatience).data.size(), 1000u);
  std::this_thread::sleep_for(milliseconds(1500));
  const uint64_t sent = flood.bytes_sent();
  EXPECT_LT(sent, 64ull << 20) << "the proxy kept reading from the upstream";
  EXPECT_LT(rss_kib(proxy.pid()), 48 * 1024);
  // Nothing was lost while the proxy held back: the stream goes on where it stopped.
  const auto r = c.read(4 << 20, kPatience);
  ASSERT_EQ(r.data.size(), 4u << 20);
  for (size_t i = 0; i < r.data.size(); ++i)
    if (r.data[i] != flood_byte(1000 + i)) FAIL() << "byte " << 1000 + i << " differs";
}

// Runs the binary with `args`; its exit status and stderr.
std::pair<int, std::string> run_proxy(const std::string& args) {
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-faultproxy " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[1024];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(FaultProxyControl, BadFlagsAreUsageErrors) {
  auto [st, out] = run_proxy("--listen 127.0.0.1:0");
  EXPECT_EQ(st, 2);
  EXPECT_NE(out.find("--upstream is required"), std::string::npos) << out;
  std::tie(st, out) = run_proxy("--upstream 127.0.0.1:1 --toxic '{\"type\":\"latency\"}'");
  EXPECT_EQ(st, 2);
  EXPECT_NE(out.find("needs 'latency_ms'"), std::string::npos) << out;
  std::tie(st, out) = run_proxy("--upstream nocolon");
  EXPECT_EQ(st, 2);
  EXPECT_NE(out.find("is not host:port"), std::string::npos) << out;
  std::tie(st, out) = run_proxy("--upstream 127.0.0.1:1 --toxic");
  EXPECT_EQ(st, 2);
}

}  // namespace
}  // namespace sy::testing
