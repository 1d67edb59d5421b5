#include "common/model_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace sy {

std::string default_model_name(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // "dir/"
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFileError(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ModelFileError(path + ": invalid JSON: " + e.what());
  }
}

std::unique_ptr<ModelSource> ModelSource::open(const std::string& path) {
  namespace fs = std::filesystem;
  auto m = std::unique_ptr<ModelSource>(new ModelSource());
  m->path_ = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    m->format_ = ModelFormat::kHuggingFace;
    const fs::path dir(path);
    if (!fs::exists(dir / "config.json")) throw ModelFileError(path + ": a Hugging Face model directory needs config.json");
    m->hf_config_ = read_json_file((dir / "config.json").string());
    if (!m->hf_config_.is_object()) throw ModelFileError(path + "/config.json: not a JSON object");
    if (fs::exists(dir / "tokenizer_config.json")) m->hf_tokenizer_config_ = read_json_file((dir / "tokenizer_config.json").string());
    if (fs::exists(dir / "tokenizer.json")) m->hf_tokenizer_json_ = (dir / "tokenizer.json").string();
    if (fs::exists(dir / "chat_template.jinja")) {
      std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      m->hf_chat_template_ = ss.str();
    } else if (m->hf_tokenizer_config_.is_object() && m->hf_tokenizer_config_.contains("chat_template") &&
               m->hf_tokenizer_config_["chat_template"].is_string()) {
      m->hf_chat_template_ = m->hf_tokenizer_config_["chat_template"].get<std::string>();
    }
    return m;
  }
  if (!fs::exists(path, ec)) throw ModelFileError(path + ": no such file or directory");
  m->format_ = ModelFormat::kGguf;
  m->gguf_ = gguf::File::open(path);
  return m;
}

void ModelSource::load_safetensors() const {
  if (!safetensors_) safetensors_ = SafetensorsDir::open(path_);
}

const TensorInfo* ModelSource::find_tensor(std::string_view name) const {
  if (gguf_) return gguf_->find_tensor(name);
  load_safetensors();
  return safetensors_->find_tensor(name);
}

std::vector<const TensorInfo*> ModelSource::tensors() const {
  std::vector<const TensorInfo*> out;
  if (gguf_) {
    for (const auto& t : gguf_->tensors()) out.push_back(&t);
    return out;
  }
  load_safetensors();
  return safetensors_->tensors();
}

}  // namespace sy
