// The load generator's output: a table for people and a JSON document for scripts, with
// the same numbers. Definitions of every metric are in bench/README.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/loadgen/stats.h"

namespace sy::bench {

// What was run, printed above the table and copied into the JSON.
struct RunInfo {
  std::string url;
  std::string model;
  std::string workload;  // "generated, ~N prompt tokens, /v1/completions" or the file
  int64_t max_tokens = 0;
  double temperature = 0;
  int64_t warmup = 0;
  double timeout_s = 0;
  bool keep_alive = true;
};

std::string format_table(const RunInfo& info, const std::vector<LevelStats>& levels);
nlohmann::ordered_json to_json(const RunInfo& info, const std::vector<LevelStats>& levels);

}  // namespace sy::bench
