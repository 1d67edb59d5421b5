// Writes one OpenAI response (/v1/completions or /v1/chat/completions) from generated
// tokens as they come: SSE chunks then [DONE] when streaming, one JSON body otherwise;
// an error as an error body, or inside a stream as a final `event: error` (never a clean
// [DONE] after a truncation). The worker feeds it from its engine, the gateway from a
// worker's /internal/generate stream, so both produce the same bytes.
//
// A chat response whose header carries an active ChatOutputSpec reads the text through a
// ChatOutputParser: reasoning_content, content and tool_calls, streamed as OpenAI sends
// them; a clean stop with calls finishes as "tool_calls".
//
// Not thread-safe: call it on the exchange's strand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/openai.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tool_calls/chat_output_parser.h"

namespace sy::http {

struct ResponderToken {
  int32_t id = 0;
  std::string text;  // what this token completes (may be empty)
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

// A worker's `tokens` event as responder tokens: one per id, with its logprobs; the
// event's text goes with the last id (the text those ids complete, together), so an
// event without ids carries none.
std::vector<ResponderToken> responder_tokens(const InternalTokens& event);

class OpenAiResponder {
 public:
  // `tokenizer` gives logprob entries their token strings; it must outlive the responder.
  OpenAiResponder(std::shared_ptr<Exchange> exchange, ResponseHeader header, const Tokenizer& tokenizer, bool stream,
                  bool include_usage, bool logprobs);

  // Streaming: sends the status, headers and (chat) the role chunk. Called by the first
  // tokens() or finish() if not before.
  void begin();
  void tokens(const std::vector<ResponderToken>& tokens);
  // A clean end: finish_reason "stop" or "length", the text held back until the end
  // ("stop" becomes "tool_calls" when the message has calls).
  void finish(std::string_view finish_reason, std::string_view text, const Usage& usage);
  // The response ends with an error (whatever was streamed stays streamed).
  void fail(const ApiError& error);

  bool begun() const { return begun_; }
  bool done() const { return done_; }
  int32_t tokens_sent() const { return tokens_sent_; }
  const std::string& text() const { return text_; }

 private:
  TokenLogprob to_logprob(const ResponderToken& t);
  // Parsed chat: one chunk per event, the logprobs on the first (or on an empty delta).
  void write_events(const std::vector<ChatEvent>& events, std::vector<TokenLogprob>* lps);

  std::shared_ptr<Exchange> ex_;
  const ResponseHeader header_;
  const Tokenizer& tokenizer_;
  const bool stream_, include_usage_, logprobs_;
  bool begun_ = false;
  bool done_ = false;
  int32_t tokens_sent_ = 0;
  int32_t offset_ = 0;  // bytes of text so far (completions' text_offset)
  std::string text_;    // the whole text so far
  std::vector<TokenLogprob> all_logprobs_;  // non-streaming
  std::optional<ChatOutputParser> parser_;  // chat with an active output spec
  ChatMessage message_;                     // non-streaming, parsed
};

}  // namespace sy::http
