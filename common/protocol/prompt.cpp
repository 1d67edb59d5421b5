#include "common/protocol/prompt.h"

#include "common/jinja/error.h"

namespace sy {

std::optional<ApiError> prompt_ids_for(const OpenAiRequest& req, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                       std::vector<int32_t>& ids) {
  if (req.kind == ApiKind::kCompletion) {
    ids = req.prompt_is_ids ? req.prompt_ids : tokenizer.encode(req.prompt, true);
    return std::nullopt;
  }
  if (!chat_template) return ApiError::bad_request("this model has no chat template; use /v1/completions", "messages");
  std::string text;
  try {
    text = chat_template->render(req.messages, req.add_generation_prompt, req.template_kwargs);
  } catch (const std::invalid_argument& e) {
    return ApiError::bad_request(e.what(), "messages");
  } catch (const jinja::TemplateError& e) {
    // The template refusing this conversation (raise_exception) or failing on what it
    // was given (a missing field, a limit) is the request's fault; the template parsed
    // at startup.
    if (e.kind() != jinja::TemplateError::Kind::kSyntax)
      return ApiError::bad_request("the chat template cannot render these messages: " + std::string(e.what()), "messages");
    return ApiError::internal(e.what());
  }
  // The rendered text already holds the special tokens the template wants.
  ids = tokenizer.encode(text, false);
  return std::nullopt;
}

std::optional<ApiError> request_priority(const OpenAiRequest& req, std::optional<std::string_view> x_priority_header, int32_t& out) {
  out = kPriorityStandard;
  if (req.priority) {
    out = *req.priority;
    return std::nullopt;
  }
  if (x_priority_header) return parse_priority_header(*x_priority_header, out);
  return std::nullopt;
}

}  // namespace sy
