#include "common/constrain/tool_constraint.h"

#include "common/constrain/tool_grammar.h"

namespace sy::constrain {

std::optional<ApiError> tool_constraint_spec(const OpenAiRequest& req, const ChatOutputSpec& output, Json& spec,
                                             std::shared_ptr<const ToolGrammar>* grammar) {
  spec = nullptr;
  if (grammar) grammar->reset();
  const auto mode = req.tool_choice.mode;
  if (req.kind != ApiKind::kChatCompletion || (mode != ToolChoice::Mode::kRequired && mode != ToolChoice::Mode::kNamed))
    return std::nullopt;
  if (output.tool_format == ToolCallFormat::kNone)
    return ApiError::bad_request("tool_choice \"required\" or a named function needs a chat template with a known tool-call format",
                                 "tool_choice");
  Json tools = Json::array();
  for (size_t i = 0; i < req.tools.size(); ++i) {
    const Json& fn = req.tools[i].value("function", Json::object());
    const std::string name = fn.value("name", "");
    if (mode == ToolChoice::Mode::kNamed && name != req.tool_choice.name) continue;
    Json t = {{"name", name}, {"index", i}};
    if (fn.contains("parameters")) t["parameters"] = fn["parameters"];
    tools.push_back(std::move(t));
  }
  const char* reasoning = !output.reasoning ? "none" : output.starts_in_reasoning ? "open" : "optional";
  spec = {{"format", output.tool_format == ToolCallFormat::kHermes ? "hermes" : "llama3_json"},
          {"tools", std::move(tools)},
          {"parallel", output.parallel_tool_calls && mode == ToolChoice::Mode::kRequired},
          {"reasoning", reasoning}};
  std::string error;
  auto compiled = ToolGrammar::compile(spec, error);
  if (!compiled) {
    spec = nullptr;
    return ApiError::bad_request(error, "tools");
  }
  if (grammar) *grammar = std::move(compiled);
  return std::nullopt;
}

std::optional<ApiError> compile_constraint(const Json& spec, std::shared_ptr<const ToolGrammar>& grammar) {
  grammar.reset();
  if (spec.is_null()) return std::nullopt;
  std::string error;
  grammar = ToolGrammar::compile(spec, error);
  if (!grammar) return ApiError::bad_request("constraint: " + error, "constraint");
  return std::nullopt;
}

}  // namespace sy::constrain
