// A model on disk, whichever format it comes in: a GGUF file, or a Hugging Face
// directory (config.json, safetensors, tokenizer.json, tokenizer_config.json). Gives the
// gateway the tokenizer and chat template inputs and gives the worker the tensors.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/dtype.h"
#include "common/gguf.h"
#include "common/safetensors.h"

namespace sy {

enum class ModelFormat { kGguf, kHuggingFace };

class ModelSource {
 public:
  // A regular file is read as GGUF, a directory as a Hugging Face model.
  static std::unique_ptr<ModelSource> open(const std::string& path);

  ModelFormat format() const { return format_; }
  const std::string& path() const { return path_; }

  // GGUF only (nullptr otherwise).
  const gguf::File* gguf() const { return gguf_.get(); }

  // Hugging Face only: parsed config.json and tokenizer_config.json (null json when
  // absent), and the path of tokenizer.json (empty when absent).
  const nlohmann::json& hf_config() const { return hf_config_; }
  const nlohmann::json& hf_tokenizer_config() const { return hf_tokenizer_config_; }
  const std::string& hf_tokenizer_json_path() const { return hf_tokenizer_json_; }
  // Hugging Face only: chat_template.jinja if present, else tokenizer_config.json's
  // chat_template (a string), else empty.
  const std::string& hf_chat_template() const { return hf_chat_template_; }

  // Tensors are loaded lazily for Hugging Face directories: a gateway that only needs
  // the tokenizer never maps the weights.
  const TensorInfo* find_tensor(std::string_view name) const;
  std::vector<const TensorInfo*> tensors() const;

 private:
  void load_safetensors() const;

  ModelFormat format_ = ModelFormat::kGguf;
  std::string path_;
  std::unique_ptr<gguf::File> gguf_;
  nlohmann::json hf_config_;
  nlohmann::json hf_tokenizer_config_;
  std::string hf_tokenizer_json_;
  std::string hf_chat_template_;
  mutable std::unique_ptr<SafetensorsDir> safetensors_;
};

// The name a model is served under unless one is given: a GGUF file's stem, a
// directory's name ("models/qwen3-0.6b.gguf" → "qwen3-0.6b", "models/Qwen3/" → "Qwen3").
std::string default_model_name(const std::string& path);

// Reads a JSON file; throws ModelFileError naming the file on a parse error.
nlohmann::json read_json_file(const std::string& path);

}  // namespace sy
