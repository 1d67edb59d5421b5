#include "common/protocol/prompt.h"

#include "common/jinja/error.h"
#include "common/tool_calls/template_features.h"

namespace sy {

std::optional<ApiError> prompt_ids_for(const OpenAiRequest& req, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                                       std::vector<int32_t>& ids, ChatOutputSpec* output) {
  if (req.kind == ApiKind::kCompletion) {
    ids = req.prompt_is_ids ? req.prompt_ids : tokenizer.encode(req.prompt, true);
    return std::nullopt;
  }
  std::string text;
  if (auto e = render_chat_prompt(req, chat_template, text, output)) return e;
  // The rendered text already holds the special tokens the template wants.
  ids = tokenizer.encode(text, false);
  return std::nullopt;
}

std::optional<ApiError> render_chat_prompt(const OpenAiRequest& req, const ChatTemplate* chat_template, std::string& text,
                                           ChatOutputSpec* output) {
  if (!chat_template) return ApiError::bad_request("this model has no chat template; use /v1/completions", "messages");
  const TemplateFeatures features = template_features(chat_template->source());
  const bool tools_offered = req.template_kwargs.contains("tools");
  if (tools_offered && !features.takes_tools)
    return ApiError::bad_request("this model's chat template does not render tools, so the model would not see them", "tools");
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
  if (output) {
    *output = ChatOutputSpec{};
    output->tool_format = tools_offered ? features.tool_format : ToolCallFormat::kNone;
    auto thinking = req.template_kwargs.find("enable_thinking");
    output->reasoning = features.reasoning && !(thinking != req.template_kwargs.end() && *thinking == false);
    size_t end = text.size();
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ')) --end;
    output->starts_in_reasoning = output->reasoning && std::string_view(text).substr(0, end).ends_with("<think>");
    output->parallel_tool_calls = req.parallel_tool_calls;
  }
  return std::nullopt;
}

void apply_default_template_kwargs(const Json& defaults, OpenAiRequest& req) {
  if (!defaults.is_object()) return;
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (!req.template_kwargs.contains(it.key())) req.template_kwargs[it.key()] = it.value();
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
