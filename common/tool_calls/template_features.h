// What a chat template can do with tools and reasoning, read from its source: whether it
// renders the `tools` variable, in which format its model writes calls, and whether the
// model thinks in <think> tags. Recognized by the markers the templates print.
#pragma once

#include <string_view>

#include "common/tool_calls/chat_output.h"

namespace sy {

struct TemplateFeatures {
  bool takes_tools = false;  // the template reads `tools`
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  bool reasoning = false;    // <think>…</think>
};

TemplateFeatures template_features(std::string_view source);

}  // namespace sy
