// switchyard-faultproxy as a real process between a client socket and an upstream
// server written here (echo or flood, loopback, port 0). Each toxic is checked by what
// the client and the upstream see; times are lower bounds only (upper ones are generous
// hang guards). The control API is driven over HTTP.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "faultproxy_process.h"
#include "loopback_peers.h"

namespace sy::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using End = Client::Read::End;

constexpr milliseconds kPatience{20'000};  // a hang guard, not a timing claim

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Waits until the proxy reports no open connection (they close asynchronously).
json settled_stats(FaultProxyProcess& proxy) {
  json s;
  for (int i = 0; i < 500; ++i) {
    s = proxy.stats();
    if (s.is_object() && s.value("connections_open", -1) == 0) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return s;
}

// One echo exchange through the proxy: `data` up, the same bytes back, then EOF.
void expect_echo(uint16_t port, const std::string& data) {
  Client c(port);
  ASSERT_TRUE(c.connected());
  std::thread writer([&] {
    c.send_all(data);
    c.shutdown_write();
  });
  const auto r = c.read_to_end(kPatience);
  writer.join();
  EXPECT_EQ(r.end, End::kEof) << end_name(r.end);
  EXPECT_EQ(r.data.size(), data.size());
  EXPECT_TRUE(r.data == data) << "echoed bytes differ";
}

class FaultProxyTest : public ::testing::Test {
 protected:
  TestUpstream echo_{TestUpstream::Mode::kEcho};
};

TEST_F(FaultProxyTest, PassesLargeDataThroughByteExactBothWays) {
  FaultProxyProcess proxy(echo_.port());
  ASSERT_TRUE(proxy.started());
  const std::string a = random_bytes(6 << 20, 1), b = random_bytes(3 << 20, 2);
  std::thread other([&] { expect_echo(proxy.port(), b); });
  expect_echo(proxy.port(), a);
  other.join();
  const json s = settled_stats(proxy);
  EXPECT_EQ(s["connections_accepted"], 2);
  EXPECT_EQ(s["connections_open"], 0);
  EXPECT_EQ(s["bytes_up"], a.size() + b.size());
  EXPECT_EQ(s["bytes_down"], a.size() + b.size());
  EXPECT_EQ(echo_.bytes_received(), a.size() + b.size());
  EXPECT_EQ(proxy.terminate(), 0);
}

TEST_F(FaultProxyTest, LatencyDelaysTheChosenDirection) {
  // Given at start: 150 ms on the way down only.
  FaultProxyProcess proxy(echo_.port(),
                          {{{"type", "latency"}, {"latency_ms", 150}, {"direction", "down"}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    ASSERT_EQ(c.send_all("ping"), 0);
    const auto r = c.read(4, kPatience);
    ASSERT_EQ(r.data, "ping");
    EXPECT_GE(ms_since(t0), 150.0);
  }
  // Added at run time on an open connection, upward: both now add up.
  ASSERT_GT(proxy.add_toxic({{"type", "latency"}, {"latency_ms", 100}, {"direction", "up"}}), 0);
  const auto t0 = Clock::now();
  ASSERT_EQ(c.send_all("pong"), 0);
  EXPECT_EQ(c.read(4, kPatience).data, "pong");
  EXPECT_GE(ms_since(t0), 250.0);
}

TEST_F(FaultProxyTest, JitterKeepsTheByteOrder) {
  FaultProxyProcess proxy(echo_.port(),
                          {{{"type", "latency"}, {"latency_ms", 15}, {"jitter_ms", 15}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  std::string sent;
  std::thread writer([&] {
    for (int i = 0; i < 150; ++i) {
      const std::string msg = "<" + std::to_string(i) + ">";
      c.send_all(msg);
      sent += msg;
      std::this_thread::sleep_for(milliseconds(1));
    }
  });
  writer.join();
  const auto r = c.read(sent.size(), kPatience);
  EXPECT_EQ(r.data, sent);
}

TEST_F(FaultProxyTest, BandwidthLimitsTheRate) {
  const int64_t rate = 200'000;
  FaultProxyProcess proxy(echo_.port());
  ASSERT_TRUE(proxy.started());
  ASSERT_GT(proxy.add_toxic({{"type", "bandwidth"}, {"rate", rate}, {"direction", "down"}}), 0);
  const std::string data = random_bytes(100'000, 3);
  const auto t0 = Clock::now();
  expect_echo(proxy.port(), data);
  EXPECT_GE(ms_since(t0), 1000.0 * static_cast<double>(data.size()) / rate);
}

TEST_F(FaultProxyTest, ResetAtAcceptNeverReachesTheUpstream) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "reset"}}});
  ASSERT_TRUE(proxy.started());
  for (int i = 0; i < 3; ++i) {
    Client c(proxy.port());
    const auto r = c.read_to_end(kPatience);
    EXPECT_EQ(r.end, End::kReset) << end_name(r.end);
    EXPECT_TRUE(r.data.empty());
  }
  EXPECT_EQ(echo_.connections(), 0u);
  EXPECT_EQ(settled_stats(proxy)["connections_reset_by_toxic"], 3);
}

TEST_F(FaultProxyTest, ResetAfterBytesDeliversExactlyThoseBytes) {
  FaultProxyProcess proxy(echo_.port(),
                          {{{"type", "reset"}, {"bytes", 1000}, {"direction", "down"}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  const std::string data = random_bytes(5000, 4);
  ASSERT_EQ(c.send_all(data), 0);
  const auto r = c.read_to_end(kPatience);
  EXPECT_EQ(r.end, End::kReset) << end_name(r.end);
  EXPECT_EQ(r.data, data.substr(0, 1000));
}

TEST_F(FaultProxyTest, ResetAfterTime) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "reset"}, {"after_ms", 400}}});
  ASSERT_TRUE(proxy.started());
  const auto t0 = Clock::now();
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("before"), 0);
  EXPECT_EQ(c.read(6, kPatience).data, "before");  // traffic flows until then
  EXPECT_EQ(c.read_to_end(kPatience).end, End::kReset);
  EXPECT_GE(ms_since(t0), 400.0);
}

TEST_F(FaultProxyTest, BlackholeAnswersNothingAndSendsNothingUpstream) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "blackhole"}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("GET / HTTP/1.1\r\n\r\n"), 0);
  const auto r = c.read(1, milliseconds(500));
  EXPECT_EQ(r.end, End::kTimeout) << end_name(r.end);
  EXPECT_EQ(echo_.connections(), 0u);
  EXPECT_EQ(echo_.bytes_received(), 0u);
  EXPECT_EQ(proxy.stats()["bytes_discarded_up"], 18);
}

TEST_F(FaultProxyTest, BlackholeDownDropsTheAnswers) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "blackhole"}, {"direction", "down"}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("hello"), 0);
  EXPECT_EQ(c.read(1, milliseconds(500)).end, End::kTimeout);
  EXPECT_EQ(echo_.bytes_received(), 5u);  // the request went up; its echo was dropped
}

TEST_F(FaultProxyTest, StallHoldsBytesWithTheSocketOpenUntilDeleted) {
  FaultProxyProcess proxy(echo_.port());
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("abc"), 0);
  ASSERT_EQ(c.read(3, kPatience).data, "abc");
  // Added on the open connection: the next 100 bytes down pass, then nothing.
  const int64_t id = proxy.add_toxic({{"type", "stall"}, {"bytes", 100}, {"direction", "down"}});
  ASSERT_GT(id, 0);
  const std::string data = random_bytes(300, 5);
  ASSERT_EQ(c.send_all(data), 0);
  const auto r = c.read(300, milliseconds(600));
  EXPECT_EQ(r.end, End::kTimeout) << end_name(r.end);  // neither EOF nor reset
  EXPECT_EQ(r.data, data.substr(0, 100));
  EXPECT_EQ(echo_.bytes_received(), 303u);  // the stall is on the way down only
  // Deleting the stall lets the rest through on the same connection.
  ASSERT_TRUE(proxy.remove_toxic(id));
  EXPECT_EQ(c.read(200, kPatience).data, data.substr(100));
}

TEST_F(FaultProxyTest, StallAfterTime) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "stall"}, {"after_ms", 600}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("early"), 0);
  EXPECT_EQ(c.read(5, kPatience).data, "early");
  std::this_thread::sleep_for(milliseconds(650));
  ASSERT_EQ(c.send_all("late"), 0);
  const auto r = c.read(4, milliseconds(400));
  EXPECT_EQ(r.end, End::kTimeout) << end_name(r.end);
  EXPECT_TRUE(r.data.empty());
}

TEST_F(FaultProxyTest, ProbabilityZeroNeverAndOneAlwaysApplies) {
  FaultProxyProcess proxy(echo_.port());
  ASSERT_TRUE(proxy.started());
  const int64_t never = proxy.add_toxic({{"type", "reset"}, {"probability", 0}});
  ASSERT_GT(never, 0);
  for (int i = 0; i < 20; ++i) expect_echo(proxy.port(), "x" + std::to_string(i));
  EXPECT_EQ(proxy.toxics()["toxics"][0]["applied"], 0);
  ASSERT_TRUE(proxy.clear_toxics());
  ASSERT_GT(proxy.add_toxic({{"type", "reset"}, {"probability", 1}}), 0);
  for (int i = 0; i < 20; ++i) {
    Client c(proxy.port());
    EXPECT_EQ(c.read_to_end(kPatience).end, End::kReset);
  }
  EXPECT_EQ(proxy.toxics()["toxics"][0]["applied"], 20);
}

TEST_F(FaultProxyTest, ProbabilityHalfAppliesToSomeConnections) {
  FaultProxyProcess proxy(echo_.port(), {{{"type", "reset"}, {"probability", 0.5}}},
                          {"--seed", "11"});
  ASSERT_TRUE(proxy.started());
  int resets = 0;
  for (int i = 0; i < 40; ++i) {
    Client c(proxy.port());
    // A send after the RST arrived fails with it (and the read then sees EOF).
    const int send_error = c.send_all("y");
    const auto r = c.read(1, kPatience);
    if (send_error == ECONNRESET || send_error == EPIPE || r.end == End::kReset)
      ++resets;
    else
      EXPECT_EQ(r.data, "y");
  }
  EXPECT_GT(resets, 0);
  EXPECT_LT(resets, 40);
  EXPECT_EQ(proxy.toxics()["toxics"][0]["applied"], resets);
}

TEST_F(FaultProxyTest, SlowCloseDelaysTheFin) {
  FaultProxyProcess proxy(echo_.port(),
                          {{{"type", "slow_close"}, {"delay_ms", 300}, {"direction", "down"}}});
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  ASSERT_EQ(c.send_all("bye"), 0);
  const auto t0 = Clock::now();
  c.shutdown_write();  // the upstream closes after this, the FIN reaches us 300 ms later
  const auto r = c.read_to_end(kPatience);
  EXPECT_EQ(r.end, End::kEof) << end_name(r.end);
  EXPECT_EQ(r.data, "bye");
  EXPECT_GE(ms_since(t0), 300.0);
}

TEST_F(FaultProxyTest, DownClosesNewConnectionsUntilDeleted) {
  FaultProxyProcess proxy(echo_.port());
  ASSERT_TRUE(proxy.started());
  Client open_before(proxy.port());
  ASSERT_EQ(open_before.send_all("1"), 0);
  ASSERT_EQ(open_before.read(1, kPatience).data, "1");
  const int64_t id = proxy.add_toxic({{"type", "down"}});
  ASSERT_GT(id, 0);
  {
    Client c(proxy.port());
    EXPECT_EQ(c.read_to_end(kPatience).end, End::kEof);
  }
  EXPECT_EQ(echo_.connections(), 1u);       // only the connection from before
  ASSERT_EQ(open_before.send_all("2"), 0);  // which keeps working
  EXPECT_EQ(open_before.read(1, kPatience).data, "2");
  ASSERT_TRUE(proxy.remove_toxic(id));
  expect_echo(proxy.port(), "up again");
  EXPECT_EQ(proxy.stats()["connections_refused"], 1);
}

TEST_F(FaultProxyTest, UnreachableUpstreamResetsTheClient) {
  uint16_t dead_port;
  {
    TestUpstream gone(TestUpstream::Mode::kEcho);
    dead_port = gone.port();
  }
  FaultProxyProcess proxy(dead_port);
  ASSERT_TRUE(proxy.started());
  Client c(proxy.port());
  EXPECT_EQ(c.read_to_end(kPatience).end, End::kReset);
  EXPECT_EQ(settled_stats(proxy)["upstream_connect_failures"], 1);
}

}  // namespace
}  // namespace sy::testing
