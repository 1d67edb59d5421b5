// What a chat model's generated text means to an OpenAI client: reasoning (`<think>…</think>`
// → reasoning_content), content, and tool calls (Qwen/Hermes `<tool_call>{…}</tool_call>`,
// Llama 3.1 JSON `{"name": …, "parameters": …}`). ChatOutputSpec says which of these a
// response looks for; it is fixed when the prompt is rendered (the template and the
// request decide) and travels with the response header, so the worker and the gateway,
// which both build responses, read the text alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sy {

enum class ToolCallFormat : uint8_t {
  kNone,       // tool calls are not parsed: everything after reasoning is content
  kHermes,     // <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, anywhere
  kLlama3Json, // [<|python_tag|>]{"name": "f", "parameters": {...}} at the start; `;` between
};

struct ChatOutputSpec {
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  bool reasoning = false;            // a leading <think>…</think> is reasoning_content
  bool starts_in_reasoning = false;  // the prompt ended inside <think>: no opening tag comes
  bool parallel_tool_calls = true;   // false: calls after the first are dropped

  bool active() const { return tool_format != ToolCallFormat::kNone || reasoning; }
};

// One piece of parsed output, in the order the text gives them. A tool call starts with
// kToolCallStart (index, id, name) and continues with kToolCallArguments fragments whose
// concatenation is the call's arguments (JSON text as the model wrote it).
struct ChatEvent {
  enum class Kind : uint8_t { kReasoning, kContent, kToolCallStart, kToolCallArguments };
  Kind kind = Kind::kContent;
  std::string text;  // reasoning / content / arguments fragment; the name for kToolCallStart
  int32_t index = 0; // tool calls: the call's position in the message
  std::string id;    // kToolCallStart: "call_..."
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

// A whole message, as the non-streaming response holds it.
struct ChatMessage {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;

  // Appends events (a stream's deltas reassemble into the message this way).
  void apply(const std::vector<ChatEvent>& events);
};

}  // namespace sy
