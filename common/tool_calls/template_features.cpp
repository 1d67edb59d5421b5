#include "common/tool_calls/template_features.h"

namespace sy {

TemplateFeatures template_features(std::string_view source) {
  auto has = [&](std::string_view marker) { return source.find(marker) != std::string_view::npos; };
  TemplateFeatures f;
  f.takes_tools = has("tools");
  f.reasoning = has("<think>");
  if (has("<tool_call>"))
    f.tool_format = ToolCallFormat::kHermes;
  else if (f.takes_tools && has("<|start_header_id|>") && has("\"parameters\""))
    f.tool_format = ToolCallFormat::kLlama3Json;  // Llama 3.1: {"name": …, "parameters": …}
  return f;
}

}  // namespace sy
