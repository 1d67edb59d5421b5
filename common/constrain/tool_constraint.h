// When and how a chat request's output is constrained: tool_choice "required" or a named
// function, with a template whose tool-call format is known. The spec is plain JSON so
// that the gateway, which renders the prompt, can send it to a worker on
// /internal/generate ("constraint"); the worker compiles it (ToolGrammar::compile).
#pragma once

#include <optional>

#include <memory>

#include "common/constrain/tool_grammar.h"
#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"

namespace sy::constrain {

// `spec` becomes null when the request is not constrained, else
// {"format", "tools": [{"name", "parameters", "index"}], "parallel", "reasoning"}: the
// named function only, or every tool for "required". A 400 naming the field when the
// template's format is unknown or a schema uses what the mask cannot enforce.
// `grammar`, when given, receives the compiled spec (null when unconstrained).
std::optional<ApiError> tool_constraint_spec(const OpenAiRequest& req, const ChatOutputSpec& output, Json& spec,
                                             std::shared_ptr<const ToolGrammar>* grammar = nullptr);

// A spec received on /internal/generate compiled (null spec: null grammar); a 400 naming
// "constraint" when it does not compile.
std::optional<ApiError> compile_constraint(const Json& spec, std::shared_ptr<const ToolGrammar>& grammar);

}  // namespace sy::constrain
