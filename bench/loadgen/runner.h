// Drives load levels: closed loop (c users, each sending its next request when the last
// one finished) or open loop (Poisson arrivals at a rate, whatever is in flight). Each
// level first runs its warmup requests the same way, waits for them, then the measured
// ones, so that a level's wall time covers only measured requests. With a multi-turn
// spec, closed-loop users hold conversations (bench/loadgen/conversation.h) instead of
// taking prompts from the workload.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <vector>

#include "bench/loadgen/conversation.h"
#include "bench/loadgen/http_client.h"
#include "bench/loadgen/request_record.h"
#include "bench/loadgen/workload.h"

namespace sy::bench {

struct LevelSpec {
  enum class Mode { kClosed, kOpen };
  Mode mode = Mode::kClosed;
  int64_t concurrency = 1;   // closed loop
  double rate = 0;           // open loop, requests per second
  int64_t num_requests = 0;  // measured requests; 0: as many as fit in duration_s
  double duration_s = 0;     // no new request after this long; 0: no limit
  int64_t warmup = 0;
  uint64_t seed = 0;  // open-loop arrival times
};

struct LevelResult {
  LevelSpec spec;
  std::vector<RequestRecord> warmup;
  std::vector<RequestRecord> measured;
};

class Runner {
 public:
  Runner(net::io_context& ioc, const Target& target, const Workload& workload,
         const RequestTemplate& request, const ClientOptions& client,
         const MultiTurnSpec& multi_turn = {});

  LevelResult run_level(const LevelSpec& spec);

 private:
  std::vector<RequestRecord> run_phase(const LevelSpec& spec, int64_t count, double duration_s,
                                       bool warmup);
  // `conversation` (closed loop, multi-turn only) is where the user's next turn comes from.
  void issue(bool warmup, StreamingRequest::Done done, Conversations* conversations = nullptr,
             int64_t user = 0);

  net::io_context& ioc_;
  const Target& target_;
  const Workload& workload_;
  const RequestTemplate& request_;
  ClientOptions client_;
  MultiTurnSpec multi_turn_;
  ConnectionPool pool_;
  int64_t next_index_ = 0;  // over the whole run, so every request gets its own prompt
};

}  // namespace sy::bench
