// A generation request as the engine sees it, and how the engine reports back. The
// HTTP layer builds requests; the engine thread calls the sink. Sinks must not block:
// they hand events to the connection's own executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/constrain/tool_grammar.h"
#include "common/protocol/sampling_params.h"

namespace sy {

struct TokenEvent {
  int32_t id = 0;
  std::string text;  // text this token completes (valid UTF-8; may be empty while a
                     // character or a possible stop string is still incomplete)
  float logprob = 0;                                 // when sampling.logprobs >= 0
  std::vector<std::pair<int32_t, float>> top_logprobs;  // the top `logprobs` ids, best first
};

enum class FinishReason { kStop, kLength, kAbort, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error"

struct FinishEvent {
  FinishReason reason = FinishReason::kLength;
  std::string text;           // text held back until the end (incomplete UTF-8 flushed)
  std::string error;          // kError: what went wrong
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // generated here and before (resume ids)
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  std::string matched_stop;       // the stop string or stop token that ended it, if any
};

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  // Called on the engine thread, in order, never after on_finish.
  virtual void on_tokens(std::vector<TokenEvent> tokens) = 0;
  virtual void on_finish(FinishEvent finish) = 0;
  // The engine freed the request's KV blocks for more urgent work (KV pressure); it
  // computes `recompute_tokens` (its context so far) again before its next token.
  virtual void on_preempted(int32_t /*recompute_tokens*/) {}
};

struct EngineRequest {
  std::string id;                  // unique among live requests; cancel() takes it
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> resume_ids;  // generated elsewhere already: continued, not re-sent
  SamplingParams sampling;
  int32_t priority = kPriorityStandard;  // lower is more urgent
  // Constrained decoding (tool_choice "required" or a named function): every sampled token
  // keeps the output a prefix of a well-formed call; null: unconstrained.
  std::shared_ptr<const constrain::ToolGrammar> grammar;
  std::shared_ptr<RequestSink> sink;
};

}  // namespace sy
