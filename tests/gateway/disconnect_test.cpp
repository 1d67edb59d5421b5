// Client disconnects propagate (issue 5 item 4), over a real gateway and one simulated
// worker: a client that leaves mid-stream, one that leaves while its request waits in
// the worker (dispatched, no KV room yet) and one that leaves while queued in the
// gateway (every seat taken) each free what they held (the gateway's queue slot and
// in-flight seat, the worker's request and its KV blocks) within a second, as the
// worker's own /metrics and the gateway's /admin/status show; a request that left is
// never run later.
#include <gtest/gtest.h>

#include <memory>

#include "gateway/fleet_harness.h"

namespace sy {
namespace {

using testing::LeavingClient;

constexpr int kSeats = 3;           // the worker's max_num_seqs: the gateway's in-flight cap
constexpr int kKvBlocks = 64;       // of 16 tokens: two long requests fit, a third waits
constexpr int kLongTokens = 400;    // × 20 ms: 8 s streams, so they hold their places
constexpr auto kFreedWithin = std::chrono::milliseconds(1000);

class ClientDisconnect : public testing::FleetTest {
 protected:
  void SetUp() override {
    testing::FleetSpec spec;
    spec.replicas = 1;
    spec.worker_args = {"--ttft-ms", "5", "--itl-ms", "20"};
    spec.max_num_seqs = kSeats;
    spec.kv_blocks = kKvBlocks;
    spec.resilience = "{first_token_timeout_s: 60}";  // a request waiting in the worker is not failed over
    ASSERT_NO_FATAL_FAILURE(start(spec));
    worker_ = replica_port(0);
    ASSERT_NE(worker_, 0) << status().dump();
  }

  std::unique_ptr<LeavingClient> send(int i) {
    nlohmann::json body = testing::request_body(500 + i, i % 2 == 1, kLongTokens);
    auto c = std::make_unique<LeavingClient>(gw_->port(), "/v1/completions", body.dump());
    EXPECT_TRUE(c->sent());
    return c;
  }
  // A request that streams: sent, and two events read.
  std::unique_ptr<LeavingClient> streaming(int i) {
    auto c = send(i);
    EXPECT_TRUE(c->read_events(2, std::chrono::seconds(10))) << "request " << i << " did not stream: " << c->received();
    return c;
  }
  double worker(const char* series) { return worker_metric(worker_, series); }
  int in_flight() { return status()["in_flight"].get<int>(); }
  int gateway_queued() { return status()["queues"]["standard"].get<int>(); }
  double generate_requests() { return worker("switchyard_worker_http_requests_total{route=\"/internal/generate\"}"); }

  uint16_t worker_ = 0;
};

// Mid-stream: the worker's request ends (counted as aborted), its KV blocks go back, and
// the gateway's seat is free.
TEST_F(ClientDisconnect, LeavingMidStreamFreesTheWorkerRequestAndItsKv) {
  auto a = streaming(0);
  ASSERT_EQ(worker("switchyard_worker_requests_running"), 1);
  ASSERT_GT(worker("switchyard_worker_kv_blocks_used"), 0);
  ASSERT_EQ(in_flight(), 1);
  a->leave();
  const double took = seconds_until(
      [&] {
        return worker("switchyard_worker_requests_running") == 0 && worker("switchyard_worker_kv_blocks_used") == 0 &&
               in_flight() == 0;
      },
      kFreedWithin);
  EXPECT_GE(took, 0) << "not freed within 1 s: worker running " << worker("switchyard_worker_requests_running") << ", KV blocks "
                     << worker("switchyard_worker_kv_blocks_used") << ", gateway " << status().dump();
  EXPECT_EQ(worker("switchyard_worker_requests_aborted_total"), 1);
  EXPECT_EQ(counter("cancelled"), 1);
}

// Two streams hold the worker's KV; a third request is dispatched (a seat is free) and
// waits in the worker for KV. Its client leaves: the worker drops it from its queue, the
// gateway frees the seat, and it never runs when KV frees up later.
TEST_F(ClientDisconnect, LeavingWhileWaitingInTheWorkerFreesItsPlace) {
  auto a = streaming(0), b = streaming(1);
  const double kv_of_two = worker("switchyard_worker_kv_blocks_used");
  auto c = send(2);
  ASSERT_GE(seconds_until([&] { return worker("switchyard_worker_requests_waiting") == 1; }, std::chrono::seconds(5)), 0)
      << "the third request never waited in the worker: " << status().dump();
  ASSERT_EQ(in_flight(), 3);
  c->leave();
  const double took = seconds_until([&] { return worker("switchyard_worker_requests_waiting") == 0 && in_flight() == 2; }, kFreedWithin);
  EXPECT_GE(took, 0) << "not freed within 1 s: worker waiting " << worker("switchyard_worker_requests_waiting") << ", gateway "
                     << status().dump();
  EXPECT_EQ(worker("switchyard_worker_kv_blocks_used"), kv_of_two);
  EXPECT_EQ(worker("switchyard_worker_requests_running"), 2);

  a->leave();  // KV room now: nothing that left may take it
  EXPECT_GE(seconds_until([&] { return worker("switchyard_worker_requests_running") == 1; }, kFreedWithin), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(worker("switchyard_worker_requests_running"), 1);
  EXPECT_EQ(worker("switchyard_worker_requests_waiting"), 0);
  EXPECT_EQ(generate_requests(), 3);
}

// Every seat taken (two streams and one waiting in the worker): a fourth request queues
// in the gateway. Its client leaves: the queue slot is freed, it is counted as
// cancelled, and it is never sent when a seat frees up later.
TEST_F(ClientDisconnect, LeavingWhileQueuedInTheGatewayFreesTheSlot) {
  auto a = streaming(0), b = streaming(1);
  auto c = send(2);
  ASSERT_GE(seconds_until([&] { return worker("switchyard_worker_requests_waiting") == 1; }, std::chrono::seconds(5)), 0);
  auto d = send(3);
  ASSERT_GE(seconds_until([&] { return gateway_queued() == 1; }, std::chrono::seconds(5)), 0)
      << "the fourth request never queued: " << status().dump();
  d->leave();
  const double took = seconds_until([&] { return gateway_queued() == 0 && counter("cancelled") == 1; }, kFreedWithin);
  EXPECT_GE(took, 0) << "not freed within 1 s: " << status().dump();
  EXPECT_EQ(in_flight(), kSeats);

  a->leave();  // a seat and KV room: the waiting one runs, the one that left is not sent
  EXPECT_GE(seconds_until([&] { return in_flight() == 2 && worker("switchyard_worker_requests_running") == 2; }, kFreedWithin), 0)
      << status().dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(in_flight(), 2);
  EXPECT_EQ(generate_requests(), 3);
  EXPECT_EQ(counter("requests"), 4);
}

}  // namespace
}  // namespace sy
