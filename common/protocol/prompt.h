// From a parsed OpenAI request to what the engine runs: the prompt's token ids (the
// chat template rendered and tokenized, or the completion prompt tokenized, or ids as
// given), and the request's priority (body field, else the X-Priority header). Shared by
// the worker and the gateway, which must tokenize exactly alike.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "common/chat_template.h"
#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"
#include "common/tokenizer/tokenizer.h"

namespace sy {

// `chat_template` may be null (a model without one): chat requests are then refused.
std::optional<ApiError> prompt_ids_for(const OpenAiRequest& req, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                       std::vector<int32_t>& ids);

// The body's `priority` wins over the header; neither: standard.
std::optional<ApiError> request_priority(const OpenAiRequest& req, std::optional<std::string_view> x_priority_header, int32_t& out);

}  // namespace sy
