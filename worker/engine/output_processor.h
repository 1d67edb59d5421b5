// Turns sampled tokens into what a request's sink receives: detokenized text (never a
// broken character), stop tokens and stop strings (text ends before the first match;
// text that may begin a stop string is held back until it cannot), length limits,
// logprobs, usage, and latency observations. Engine thread only.
#pragma once

#include <string>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/engine/sampler.h"
#include "worker/engine/sequence.h"

namespace sy {

class OutputProcessor {
 public:
  OutputProcessor(const Tokenizer& tokenizer, int32_t max_context) : tokenizer_(tokenizer), max_context_(max_context) {}

  // Reports a sampled token; true when the sequence finished with it (the caller then
  // removes it from the scheduler).
  bool add_token(Sequence& s, const SampleResult& r, WorkerStats& stats, LatencyObserver* latency);

  // A request that continues a stream begun elsewhere (resume ids): puts the decoder and
  // the held-back text where the other replica had them, so the next token's text
  // starts exactly where the client's text stopped. The other replica sent every
  // complete character of the resume ids except a tail that may begin a stop string;
  // that tail is a function of the text alone (the longest suffix that is a proper
  // prefix of a stop string), so it is computed here again and owed to the client.
  void resume(Sequence& s) const;

  // Sends the finish event: held-back text, usage, the reason.
  void finish(Sequence& s, FinishReason reason, WorkerStats& stats, std::string matched_stop = {}, int32_t extra_tokens = 0);

 private:
  void observe_token_time(Sequence& s, WorkerStats& stats, LatencyObserver* latency);

  const Tokenizer& tokenizer_;
  int32_t max_context_;
};

}  // namespace sy
