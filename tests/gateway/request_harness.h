// A gateway core, its fleet and ProxyRequests on one io_context driven by the test, with
// a manual clock: fake clients (FakeClient), fake worker calls the test answers by hand
// (FakeCall) and watchdog alarms that ring when the test moves the clock (ManualAlarm).
// No sockets carry requests and nothing sleeps; every resource a request holds is
// counted (replica slots in the fleet, queue seats in the core, open requests).
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/proxy_request.h"

namespace sy::gateway::testing {

struct FakeClient : ClientSide {
  explicit FakeClient(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}
  boost::asio::any_io_executor executor() const override { return ex_; }
  void on_cancel(std::function<void()> f) override { on_cancel_ = std::move(f); }
  bool cancelled() const override { return gone; }
  void add_header(std::string name, std::string value) override { headers.emplace_back(std::move(name), std::move(value)); }
  // Once answered, the cancel callback goes (an exchange drops it then too).
  void respond_json(int status, std::string body) override { refused = status, answered(); }
  void tokens(const std::vector<http::ResponderToken>& t) override {
    begun_ = true;
    for (const auto& x : t) ids.push_back(x.id);
  }
  void finish(std::string_view, std::string_view, const Usage&) override { finished = true, answered(); }
  void fail(const ApiError& e) override { error = e, answered(); }
  bool begun() const override { return begun_; }

  // The client leaves: the cancel callback runs on the executor, as an exchange's does.
  void leave() {
    gone = true;
    if (on_cancel_) boost::asio::post(ex_, std::exchange(on_cancel_, nullptr));
  }
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }

  bool gone = false;
  bool finished = false;
  int refused = 0;
  int answers = 0;  // finish, fail and respond_json together: exactly one per request
  std::optional<ApiError> error;
  std::vector<int32_t> ids;
  std::vector<std::pair<std::string, std::string>> headers;

 private:
  void answered() {
    ++answers;
    on_cancel_ = nullptr;
  }
  boost::asio::any_io_executor ex_;
  std::function<void()> on_cancel_;
  bool begun_ = false;
};

// One call to a worker, answered by the test.
struct FakeCall : CancellableCall {
  FakeCall(UpstreamRequest r, UpstreamHandlers handlers) : req(std::move(r)), h(std::move(handlers)) {}
  void cancel() override {
    if (ended) return;
    cancelled = true;
    end(boost::asio::error::operation_aborted, "cancelled");
  }
  void headers(int status = 200) { h.on_headers(status, "text/event-stream"); }
  void tokens(int32_t index, std::vector<int32_t> ids) {
    InternalTokens t;
    t.index = index;
    t.ids = std::move(ids);
    h.on_data(internal_tokens_event(t));
  }
  void preempted(int32_t recompute_tokens) { h.on_data(internal_preempted_event({recompute_tokens})); }
  void finish() {
    InternalFinish f;
    f.finish_reason = "stop";
    h.on_data(internal_finish_event(f));
    end({}, "");
  }
  void end(boost::beast::error_code ec, std::string what) {
    if (ended) return;
    ended = true;
    h.on_done(ec, std::move(what));
  }
  void reset() { end(boost::asio::error::connection_reset, "connection reset"); }
  InternalGenerateRequest body() const {
    InternalGenerateRequest g;
    EXPECT_FALSE(parse_internal_generate(req.body, g).has_value());
    return g;
  }

  UpstreamRequest req;
  UpstreamHandlers h;
  bool cancelled = false;
  bool ended = false;
};

// The watchdog: rings when the test's clock passes its due time.
struct ManualAlarm : Alarm {
  struct State {
    std::optional<double> due;
    std::function<void()> f;
  };
  explicit ManualAlarm(std::shared_ptr<State> s) : state(std::move(s)) {}
  void set(double due_s, std::function<void()> f) override { state->due = due_s, state->f = std::move(f); }
  void cancel() override { state->due.reset(), state->f = nullptr; }
  std::shared_ptr<State> state;
};

struct HarnessOptions {
  int replicas = 2;
  int32_t capacity = 4;  // max_num_seqs of each replica
  ResilienceConfig resilience;
};

class Harness {
 public:
  explicit Harness(HarnessOptions o = {}) {
    FleetConfig config;
    config.resilience = o.resilience;
    core = std::make_shared<GatewayCore>(ioc.get_executor(), config, clock, std::make_shared<policy::SplitMixRandom>(1));
    ctx = std::make_shared<ProxyContext>();
    ctx->core = core;
    ctx->random = std::make_shared<policy::SplitMixRandom>(2);
    core->fleet().reset(static_cast<size_t>(o.replicas));
    for (int i = 0; i < o.replicas; ++i) {
      ReplicaInfo r;
      r.index = i;
      r.id = "r" + std::to_string(i);
      r.phase = ReplicaPhase::kReady;
      r.port = static_cast<uint16_t>(1 + i);  // nothing listens: the event stream fails, routing uses its own records
      r.boot_id = "boot" + std::to_string(i);
      r.max_num_seqs = o.capacity;
      core->fleet().on_replica_change(r);
    }
  }
  ~Harness() {
    core->fleet().reset(0);  // ends the event streams' retries
    ioc.poll();
  }

  struct Request {
    std::shared_ptr<ProxyRequest> proxy;
    FakeClient* client = nullptr;
    std::shared_ptr<ManualAlarm::State> alarm;
  };

  Request submit(int32_t priority = kPriorityStandard) {
    Request out;
    auto client = std::make_unique<FakeClient>(ioc.get_executor());
    out.client = client.get();
    out.alarm = std::make_shared<ManualAlarm::State>();
    RequestIo io{std::move(client),
                 [this](UpstreamRequest r, UpstreamHandlers h) -> std::shared_ptr<CancellableCall> {
                   calls.push_back(std::make_shared<FakeCall>(std::move(r), std::move(h)));
                   return calls.back();
                 },
                 std::make_unique<ManualAlarm>(out.alarm)};
    OpenAiRequest req;
    req.sampling.max_tokens = 16;
    std::vector<int32_t> prompt(40);
    for (size_t k = 0; k < prompt.size(); ++k) prompt[k] = static_cast<int32_t>(k + 1);
    ResponseHeader header{ApiKind::kCompletion, "cmpl-" + std::to_string(next_id), "m", 0};
    out.proxy = std::make_shared<ProxyRequest>(ctx, std::move(io), std::move(req), std::move(prompt), std::move(header), priority, "", next_id++);
    out.proxy->start();
    settle();
    return out;
  }

  // Runs every message and completion that is ready.
  void settle() {
    while (ioc.poll() > 0) {
    }
    ioc.restart();
  }
  // Moves the clock and rings the alarms that are due.
  void advance(double s, std::vector<Request*> requests) {
    clock->advance(s);
    for (Request* r : requests)
      if (r->alarm->due && *r->alarm->due <= clock->now_s()) {
        auto f = std::exchange(r->alarm->f, nullptr);
        r->alarm->due.reset();
        boost::asio::post(ioc, f);
      }
    settle();
  }
  // Which replica a call went to.
  static size_t replica_of(const FakeCall& c, const Harness& h) {
    for (size_t i = 0; i < h.core->fleet().size(); ++i)
      if (h.core->fleet().info(i).port == c.req.port && h.core->fleet().info(i).host == c.req.host) return i;
    return SIZE_MAX;
  }

  // Every slot taken was given back once, every queue seat too, and no request is open.
  void expect_all_released() {
    settle();
    const Fleet& fleet = core->fleet();
    for (size_t i = 0; i < fleet.size(); ++i) {
      EXPECT_EQ(fleet.load(i).in_flight, 0) << "replica " << i;
      EXPECT_EQ(fleet.load(i).slots_released, fleet.load(i).requests_total) << "replica " << i;
    }
    EXPECT_EQ(core->counters().queue_seats_released, core->counters().queue_seats_taken);
    EXPECT_EQ(core->queue().size(), 0u);
    EXPECT_EQ(ctx->open_requests.load(), 0);
    for (const auto& c : calls) EXPECT_TRUE(c->ended) << "a worker call left open";
  }

  boost::asio::io_context ioc;
  std::shared_ptr<policy::ManualClock> clock = std::make_shared<policy::ManualClock>(1000.0);
  std::shared_ptr<GatewayCore> core;
  std::shared_ptr<ProxyContext> ctx;
  std::vector<std::shared_ptr<FakeCall>> calls;
  uint64_t next_id = 1;
};

}  // namespace sy::gateway::testing
