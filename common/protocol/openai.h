// The OpenAI-compatible API: parsing and validation of /v1/completions and
// /v1/chat/completions request bodies, and the response bodies and stream chunks in
// OpenAI's shapes. Shared by the worker (which serves them) and the gateway (which
// validates before routing). Nothing here throws on client input: every problem is an
// ApiError naming the field.
//
// Parsing is in two steps. parse_*_request() checks what the body alone can tell (types,
// ranges, unsupported options). After the prompt is tokenized, check_prompt() checks it
// against the model (vocabulary, context) and fixes max_tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/protocol/api_error.h"
#include "common/protocol/json_fields.h"
#include "common/protocol/sampling_params.h"
#include "common/tool_calls/chat_output.h"

namespace sy {

enum class ApiKind { kCompletion, kChatCompletion };

// `tool_choice`: "auto" (the default), "none", "required", or one named function.
struct ToolChoice {
  enum class Mode : uint8_t { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed
};

struct OpenAiRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;  // "" when absent: the served model

  // /v1/completions: the prompt as text, or as token ids (then prompt_is_ids).
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;

  // /v1/chat/completions: messages as the chat template takes them (content a string,
  // text parts joined by "\n"; tool-call arguments objects; see chat_tools.h); template
  // variables (chat_template_kwargs, plus `tools` unless tool_choice is "none").
  Json messages = Json::array();
  Json template_kwargs = Json::object();
  bool add_generation_prompt = true;
  Json tools = Json::array();  // validated function tools, as given
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;

  SamplingParams sampling;            // max_tokens is set by check_prompt()
  std::optional<int32_t> max_tokens;  // as the client gave it
  bool logprobs = false;              // chat: logprobs requested (sampling.logprobs = top_logprobs)
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage
  std::optional<int32_t> priority;  // body `priority`; lower is more urgent
  std::string user;
};

std::optional<ApiError> parse_completion_request(std::string_view body, OpenAiRequest& out);
std::optional<ApiError> parse_chat_request(std::string_view body, OpenAiRequest& out);

// Sampling fields shared by the OpenAI endpoints and /internal/generate: temperature,
// top_p, top_k (-1 = off), min_p, repetition/presence/frequency_penalty, seed, stop,
// stop_token_ids, ignore_eos, skip_special_tokens. Range checks are left to
// SamplingParams::validate().
void read_sampling_fields(FieldReader& r, SamplingParams& s);
// The field a SamplingParams::validate() message is about.
std::string sampling_error_field(const std::string& message);

// The `priority` value: an integer in [kPriorityMin, kPriorityMax] or a class name.
// `field` names it in errors ("priority", or the header "X-Priority").
std::optional<ApiError> parse_priority_value(const Json& v, const std::string& field, int32_t& out);
// The X-Priority header's text: an integer or a class name.
std::optional<ApiError> parse_priority_header(std::string_view value, int32_t& out);

// What check_prompt needs to know about the served model.
struct ModelLimits {
  int32_t context_length = 0;  // prompt + generated tokens at most
  int32_t vocab_size = 0;      // valid ids are [0, vocab_size)
};

// Prompt ids in the vocabulary, not empty, shorter than the context; stop_token_ids in
// the vocabulary; max_tokens within what the context leaves, defaulting (when absent)
// to 16 for completions, as OpenAI does, and to the rest of the context for chat.
// Sets req.sampling.max_tokens.
std::optional<ApiError> check_prompt(const std::vector<int32_t>& prompt_ids,
                                     const ModelLimits& limits, OpenAiRequest& req);

// ---- responses ----

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

struct TopLogprob {
  std::string token;  // the token's text (U+FFFD for a partial character)
  std::string bytes;  // its raw bytes
  float logprob = 0;
};

struct TokenLogprob {
  std::string token;
  std::string bytes;
  float logprob = 0;
  std::vector<TopLogprob> top;
  int32_t text_offset = 0;  // completions: where the token's text starts in the output
};

struct ResponseHeader {
  ResponseHeader() = default;
  ResponseHeader(ApiKind k, std::string response_id, std::string model_name, int64_t created_at)
      : kind(k), id(std::move(response_id)), model(std::move(model_name)), created(created_at) {}

  ApiKind kind = ApiKind::kCompletion;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // unix seconds
  ChatOutputSpec output;  // chat: how the generated text is read (reasoning, tool calls)
};

// The whole non-streaming response body. `logprobs` null: none requested.
std::string completion_response(const ResponseHeader& h, std::string_view text,
                                std::string_view finish_reason,
                                const std::vector<TokenLogprob>* logprobs, const Usage& usage);

// One stream event "data: {...}\n\n". Chat: the first chunk carries the role
// (role_chunk), later ones the text delta. `finish_reason` "" is JSON null. With
// `include_usage`, every chunk has "usage": null and usage_chunk() comes last.
std::string role_chunk(const ResponseHeader& h, bool include_usage);
std::string delta_chunk(const ResponseHeader& h, std::string_view text,
                        const std::vector<TokenLogprob>* logprobs, std::string_view finish_reason,
                        bool include_usage);
std::string usage_chunk(const ResponseHeader& h, const Usage& usage);

// Chat with a ChatOutputSpec: the message as parsed (content null when empty and there
// are calls; reasoning_content and tool_calls when present), and a stream chunk carrying
// one parsed event (null: an empty delta) as OpenAI sends them: reasoning_content or
// content text; a call's index, id, type, name and "" arguments first, then
// {"index", "function": {"arguments": fragment}}.
std::string chat_message_response(const ResponseHeader& h, const ChatMessage& message,
                                  std::string_view finish_reason,
                                  const std::vector<TokenLogprob>* logprobs, const Usage& usage);
std::string chat_event_chunk(const ResponseHeader& h, const ChatEvent* event,
                             const std::vector<TokenLogprob>* logprobs,
                             std::string_view finish_reason, bool include_usage);

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// "data: <json>\n\n"
std::string sse_data(std::string_view json);
// An error inside a stream, after which no [DONE] comes: "event: error\ndata: {...}\n\n".
std::string sse_error(const ApiError& e);

// Serializes without throwing: ill-formed UTF-8 in strings becomes U+FFFD.
std::string dump_json(const Json& j);

}  // namespace sy
