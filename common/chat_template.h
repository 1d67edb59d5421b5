// Chat templates: turns an OpenAI-style message list into the prompt text exactly as
// Hugging Face transformers' apply_chat_template(..., tokenize=False) renders it, by running
// the model's own Jinja template (common/jinja/).
//
// Variables the template sees, as transformers passes them: messages, tools and documents
// (none unless given), add_generation_prompt, bos_token, eos_token, and every extra kwarg
// (e.g. enable_thinking), which may override bos_token/eos_token.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/jinja/template.h"
#include "common/model_source.h"

namespace sy {

class ChatTemplate {
 public:
  // `source` is the Jinja text; bos/eos token texts are exposed as bos_token / eos_token
  // (an empty one stays undefined, as for a model that has no such token).
  // Throws jinja::TemplateError (kind kSyntax, with line and column) when it does not parse.
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token);

  // The GGUF's tokenizer.chat_template, or the Hugging Face directory's chat_template.jinja /
  // tokenizer_config.json chat_template (the "default" one when it is a list). Throws
  // ModelFileError if the model has none or it does not parse.
  static ChatTemplate from_model(const ModelSource& m, std::string bos_token,
                                 std::string eos_token);

  // messages: array of {"role": string, "content": string or null, ...}; kwargs: extra
  // template variables such as {"enable_thinking": false} or {"tools": [...]}.
  // Throws std::invalid_argument for malformed messages or kwargs (a client error, HTTP
  // 400), and jinja::TemplateError when rendering fails: kind kRaised is the template's own
  // raise_exception() refusing the conversation (also a client error), other kinds are a
  // template the interpreter cannot run.
  //
  // Thread-safe: renders share only the parsed template.
  //
  // Prefer the ordered_json overload: objects keep their key order (tool schemas are printed
  // with tojson in the client's order, as transformers does); nlohmann::json sorts keys.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  std::string render(const nlohmann::json& messages, bool add_generation_prompt,
                     const nlohmann::json& kwargs = nlohmann::json::object()) const;

  // "qwen3", "chatml", "llama3" or "unknown", recognized by the template's markers;
  // informational (for the load log).
  std::string family() const { return family_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  jinja::Template template_;
  std::string family_;
};

// The model's template, or null with a warning on stderr when it has none (chat requests
// are then refused). Servers load it this way; other model file errors still throw.
std::shared_ptr<const ChatTemplate> chat_template_or_null(const ModelSource& m, const std::string& bos_token,
                                                          const std::string& eos_token);

}  // namespace sy
