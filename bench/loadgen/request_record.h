// What the load generator learns about one request: timings, token counts, text and, when
// it failed, why. Times are steady_clock; durations are seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sy::bench {

// A measurement that does not exist (no token arrived, nothing to divide by).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Clock = std::chrono::steady_clock;

enum class ErrorKind {
  kNone,
  kConnect,      // resolve/connect/write failed, or the connection broke mid-stream
  kTimeout,      // no progress for --timeout seconds
  kHttpStatus,   // a status other than 200
  kStreamError,  // an `event: error` or a data object with an "error" member
  kProtocol,     // not an event stream, unparsable JSON, no usage, an oversized event
  kTruncated,    // the stream ended without `data: [DONE]`
  kValidation,   // complete, but not the requested length of real text
};

const char* error_kind_name(ErrorKind kind);

// One event that carried generated tokens, as the client saw it.
struct TokenArrival {
  Clock::time_point at;
  int64_t tokens = 1;  // >1 when the event carried several (token ids or logprobs say so)
};

struct RequestRecord {
  int64_t index = 0;  // position in the run; chooses the prompt
  bool warmup = false;
  int64_t max_tokens = 0;    // requested, with ignore_eos: the exact expected length
  Clock::time_point issued;  // before connecting (or taking a kept-alive connection)
  Clock::time_point done;    // `data: [DONE]` arrived, or the request failed

  std::vector<TokenArrival> arrivals;
  int64_t content_events = 0;      // events that carried at least one token
  int64_t streamed_tokens = 0;     // sum of TokenArrival::tokens
  bool exact_token_counts = true;  // every content event said how many tokens it held
  std::string text;                // the generated text, concatenated
  std::string finish_reason;
  int64_t completion_tokens = -1;  // usage; -1 when the stream carried no usage
  int64_t prompt_tokens = -1;
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens, if sent

  int http_status = 0;
  std::string replica;  // the gateway's x-switchyard-replica header: who served it ("" if none)
  int attempts = 0;     // the gateway's x-switchyard-attempts header (hedges, retries); 0 if none
  bool reused_connection = false;
  ErrorKind error = ErrorKind::kNone;
  std::string error_message;

  bool ok() const { return error == ErrorKind::kNone; }
  void fail(ErrorKind kind, std::string message) {
    if (error != ErrorKind::kNone) return;  // the first cause is the one reported
    error = kind;
    error_message = std::move(message);
  }

  // Derived timings; meaningful only for ok() records with at least one arrival.
  double ttft_s() const;  // issued -> first content event
  double e2e_s() const;   // issued -> [DONE]
  // Inter-token latencies, one per generated token after the first (see bench/README.md):
  // an event carrying k tokens a gap g after the previous event gives k samples of g/k;
  // extra tokens in the first event give samples of 0.
  std::vector<double> itl_s() const;
  // (completion_tokens - 1) / (last content event - first content event): the user's
  // decode rate, 1 / mean ITL. NaN with fewer than two tokens or one event.
  double decode_tok_s() const;
  // completion_tokens / e2e.
  double e2e_tok_s() const;
};

}  // namespace sy::bench
