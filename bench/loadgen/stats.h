// Summary statistics of one load level: latency percentiles and rates over the requests
// that succeeded, and a count of those that did not, by kind. Pure functions of the
// records, so tests check the arithmetic on hand-made records.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/loadgen/request_record.h"

namespace sy::bench {

// The p-th percentile (0..100) with linear interpolation between closest ranks (NumPy's
// default, "linear"): rank p/100 * (n-1) of the sorted values. NaN for no values.
double percentile(std::vector<double> values, double p);
double mean(const std::vector<double>& values);
double median(std::vector<double> values);  // percentile 50; ignores NaN entries

struct Distribution {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
  int64_t count = 0;
};
Distribution distribution(const std::vector<double>& values);  // NaN fields when empty

struct LevelStats {
  std::string mode;         // "closed" or "open"
  int64_t concurrency = 0;  // closed loop
  double rate = 0;          // open loop, requests/s offered

  int64_t requests = 0;  // measured (warmup excluded)
  int64_t ok = 0;
  int64_t errors = 0;
  std::map<std::string, int64_t> errors_by_kind;
  std::vector<std::string> error_samples;  // the first few messages, for the report
  int64_t warmup_requests = 0;
  int64_t warmup_errors = 0;

  Distribution ttft_s;           // over ok requests
  Distribution itl_s;            // over all inter-token gaps of ok requests, pooled
  Distribution e2e_s;            // over ok requests
  double user_decode_tok_s = 0;  // median over ok requests of RequestRecord::decode_tok_s
  double user_e2e_tok_s = 0;     // median over ok requests of RequestRecord::e2e_tok_s

  double wall_s = 0;              // first issue -> last completion of measured requests
  int64_t output_tokens = 0;      // sum of completion_tokens of ok requests
  double aggregate_tok_s = 0;     // output_tokens / wall_s
  double ok_requests_per_s = 0;   // ok / wall_s
  double prompt_tokens_mean = 0;  // usage.prompt_tokens of ok requests
  int64_t cached_tokens = 0;      // usage cached_tokens summed, where reported
  int64_t prompt_tokens = 0;      // usage prompt_tokens summed over ok requests
  double prefix_hit_rate() const;  // cached_tokens / prompt_tokens; NaN without prompts
  int64_t reused_connections = 0;
  // Tokens that did not arrive one per event and whose event did not say how many it
  // held (no token ids or logprobs): their inter-token gaps are not in itl_s.
  int64_t unattributed_tokens = 0;
  int64_t texts_with_replacement_char = 0;  // valid UTF-8 with U+FFFD in it

  bool valid() const { return errors == 0 && warmup_errors == 0 && ok > 0; }
};

// `records` are the measured requests of one level; `warmup` those before them.
LevelStats summarize(const std::vector<RequestRecord>& records,
                     const std::vector<RequestRecord>& warmup);

}  // namespace sy::bench
