// The request side of tool calling in /v1/chat/completions: `tools`, `tool_choice`,
// `parallel_tool_calls`, and the messages that replay calls (assistant `tool_calls`, role
// "tool" answers), checked and shaped the way chat templates take them. Never throws;
// every problem is a 400 naming the field.
#pragma once

#include <optional>

#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"

namespace sy {

// `tools` (function tools: a name, unique; `parameters` a JSON schema object),
// `tool_choice` (a named function must be one of `tools`; "required" or a name need
// tools) and `parallel_tool_calls`. Unless tool_choice is "none", non-empty tools become
// the template's `tools` variable.
std::optional<ApiError> read_tool_fields(const Json& body, OpenAiRequest& out);

// Messages already normalized by the request parser (roles checked, content a string or
// null), made ready for the template: an assistant's null content becomes "" (templates
// test `'</think>' in content`), each tool call's `function.arguments` JSON string is
// parsed into the object templates print with tojson; a "tool" message must carry the
// `tool_call_id` of a call made earlier in the conversation.
std::optional<ApiError> prepare_tool_messages(Json& messages);

}  // namespace sy
