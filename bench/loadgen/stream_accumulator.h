// Turns the SSE events of one OpenAI streaming response (completions or chat) into a
// RequestRecord, then checks that it is what was asked for: exactly max_tokens tokens of
// non-empty, valid UTF-8 text, with usage, ended by `data: [DONE]`. Pure: no I/O, the
// arrival times are passed in, so tests drive it with made-up streams.
#pragma once

#include <string_view>

#include "bench/loadgen/request_record.h"
#include "common/http/sse_parser.h"

namespace sy::bench {

class StreamAccumulator {
 public:
  explicit StreamAccumulator(RequestRecord& record) : record_(record) {}

  // One event that arrived at `at`. Marks the record failed on an error event or data
  // that is not the JSON of a chunk; later events are then ignored.
  void on_event(const http::SseEvent& event, Clock::time_point at);

  bool saw_done() const { return saw_done_; }

  // The HTTP body ended at `at` (or the connection did). `sse_pending` is the parser's
  // finish(): an event was cut off. Sets record.done and validates the whole response.
  void finish(Clock::time_point at, bool sse_pending);

 private:
  void on_chunk(std::string_view data, Clock::time_point at);

  RequestRecord& record_;
  bool saw_done_ = false;
  Clock::time_point done_at_{};
};

}  // namespace sy::bench
