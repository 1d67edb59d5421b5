// switchyard-bench's command line. See bench/README.md for every flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/loadgen/conversation.h"
#include "bench/loadgen/http_client.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/workload.h"

namespace sy::bench {

extern const char kUsage[];

struct BenchOptions {
  std::string url = "http://127.0.0.1:8000";
  std::string model;  // empty: the first of GET /v1/models
  std::string workload_path;
  Endpoint endpoint = Endpoint::kCompletions;  // for generated prompts
  int64_t prompt_tokens = 256;
  RequestTemplate request;
  std::vector<int64_t> concurrency;  // closed-loop levels
  std::vector<double> rates;         // open-loop levels
  int64_t num_requests = 0;          // 0: the default for the mode (see kUsage)
  double duration_s = 0;
  int64_t warmup = 0;
  uint64_t seed = 0;
  ClientOptions client;
  MultiTurnSpec multi_turn;  // turns 0: single-turn
  bool json = false;
  bool help = false;

  std::vector<LevelSpec> levels() const;
};

// Throws sy::cli::UsageError on bad flags or values.
BenchOptions parse_options(const std::vector<std::string>& argv);

}  // namespace sy::bench
