#include "common/chat_template.h"

#include <cstdio>
#include <stdexcept>

#include "common/error.h"

namespace sy {
namespace {

std::string detect_family(const std::string& source) {
  auto has = [&](const char* marker) { return source.find(marker) != std::string::npos; };
  if (has("<|im_start|>")) return has("<think>") ? "qwen3" : "chatml";
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return "llama3";
  return "unknown";
}

void validate_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) throw std::invalid_argument("'messages' must be an array");
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw std::invalid_argument(where + " must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      throw std::invalid_argument(where + ".role must be a string");
    }
    auto content = m.find("content");
    if (content != m.end() && !content->is_string() && !content->is_null()) {
      throw std::invalid_argument(where + ".content must be a string or null");
    }
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
    : source_(std::move(source)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      template_(source_),
      family_(detect_family(source_)) {}

ChatTemplate ChatTemplate::from_model(const ModelSource& m, std::string bos_token,
                                      std::string eos_token) {
  std::string source;
  if (m.format() == ModelFormat::kGguf) {
    source = m.gguf()->get_string_or("tokenizer.chat_template", "");
  } else {
    source = m.hf_chat_template();
    // tokenizer_config.json may hold named templates: [{"name": "default", "template": ...}].
    const auto& config = m.hf_tokenizer_config();
    if (source.empty() && config.is_object() && config.contains("chat_template") &&
        config["chat_template"].is_array()) {
      for (const auto& entry : config["chat_template"]) {
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string()) {
          source = entry["template"].get<std::string>();
        }
      }
    }
  }
  if (source.empty()) throw ModelFileError(m.path() + ": the model has no chat template");
  try {
    return ChatTemplate(std::move(source), std::move(bos_token), std::move(eos_token));
  } catch (const jinja::TemplateError& e) {
    throw ModelFileError(m.path() + ": chat template: " + e.what());
  }
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& kwargs) const {
  validate_messages(messages);
  if (!kwargs.is_object()) throw std::invalid_argument("chat template kwargs must be an object");
  for (const char* reserved : {"messages", "add_generation_prompt"}) {
    if (kwargs.contains(reserved)) {
      throw std::invalid_argument(std::string("'") + reserved +
                                  "' cannot be a chat template kwarg");
    }
  }
  // transformers: render(messages=, tools=, documents=, add_generation_prompt=,
  // **{**special_tokens_map, **kwargs}); tools and documents are None unless given.
  // A model without a BOS (Qwen) has none in special_tokens_map: bos_token is undefined.
  jinja::Dict vars;
  if (!bos_token_.empty())
    vars.set(jinja::Value::string("bos_token"), jinja::Value::string(bos_token_));
  if (!eos_token_.empty())
    vars.set(jinja::Value::string("eos_token"), jinja::Value::string(eos_token_));
  vars.set(jinja::Value::string("tools"), jinja::Value::none());
  vars.set(jinja::Value::string("documents"), jinja::Value::none());
  try {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      vars.set(jinja::Value::string(it.key()), jinja::Value::from_json(it.value()));
    }
    vars.set(jinja::Value::string("messages"), jinja::Value::from_json(messages));
  } catch (const jinja::TemplateError& e) {
    throw std::invalid_argument(std::string("chat template input: ") + e.what());  // too deep
  }
  vars.set(jinja::Value::string("add_generation_prompt"),
           jinja::Value::boolean(add_generation_prompt));
  return template_.render(vars);
}

std::string ChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& kwargs) const {
  return render(nlohmann::ordered_json(messages), add_generation_prompt,
                nlohmann::ordered_json(kwargs));
}

std::shared_ptr<const ChatTemplate> chat_template_or_null(const ModelSource& m, const std::string& bos_token,
                                                          const std::string& eos_token) {
  try {
    return std::make_shared<ChatTemplate>(ChatTemplate::from_model(m, bos_token, eos_token));
  } catch (const ModelFileError& e) {
    std::fprintf(stderr, "warning: %s; /v1/chat/completions will refuse requests\n", e.what());
    return nullptr;
  }
}

}  // namespace sy
