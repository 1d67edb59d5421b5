// From a parsed OpenAI request to what the engine runs: the prompt's token ids (the
// chat template rendered and tokenized, or the completion prompt tokenized, or ids as
// given), and the request's priority (body field, else the X-Priority header). Shared by
// the worker and the gateway, which must tokenize exactly alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/chat_template.h"
#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"
#include "common/tokenizer/tokenizer.h"

namespace sy {

// `chat_template` may be null (a model without one): chat requests are then refused.
// Chat: `output`, when given, receives how the generated text is to be read (the
// template's tool-call format when tools are offered, reasoning unless enable_thinking
// is false, whether the prompt ends inside <think>). Tools offered to a template that
// does not render them are a 400: the model would never see them.
std::optional<ApiError> prompt_ids_for(const OpenAiRequest& req, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                       std::vector<int32_t>& ids, ChatOutputSpec* output = nullptr);

// The chat prompt as text: prompt_ids_for's rendering step (same checks, same `output`).
std::optional<ApiError> render_chat_prompt(const OpenAiRequest& req, const ChatTemplate* chat_template, std::string& text,
                                           ChatOutputSpec* output = nullptr);

// A server's default chat_template_kwargs (an object) under the request's own: keys the
// request sets win.
void apply_default_template_kwargs(const Json& defaults, OpenAiRequest& req);

// The body's `priority` wins over the header; neither: standard.
std::optional<ApiError> request_priority(const OpenAiRequest& req, std::optional<std::string_view> x_priority_header, int32_t& out);

}  // namespace sy
