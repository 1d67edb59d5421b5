// Where a simulated request's tokens go: the worker's internal SSE events
// (/internal/generate, for the gateway) or an OpenAI response (/v1/completions and
// /v1/chat/completions, for clients such as switchyard-bench), the latter written by the
// same OpenAiResponder the worker and the gateway use. Called on the exchange's strand.
#pragma once

#include <memory>
#include <string>

#include "common/http/openai_responder.h"
#include "common/http/server.h"
#include "common/protocol/internal_api.h"

namespace sy::sim {

class SimOutput {
 public:
  virtual ~SimOutput() = default;
  // False when the client is gone (the request is then cancelled).
  virtual bool token(int32_t index, int32_t id, std::string text, bool logprobs) = 0;
  virtual void finish(const InternalFinish& f) = 0;
  virtual void abort(const ApiError& e) = 0;
};

// "event: tokens" / "event: finish" / "event: error" on a stream already started.
std::unique_ptr<SimOutput> internal_output(std::shared_ptr<http::Exchange> ex);
// OpenAI chunks (or one body) through the shared responder.
std::unique_ptr<SimOutput> openai_output(std::shared_ptr<http::Exchange> ex, std::unique_ptr<http::OpenAiResponder> responder);

}  // namespace sy::sim
