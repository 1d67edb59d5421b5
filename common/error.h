// Errors raised while loading configuration and model files at startup. They carry a
// message meant for the operator: which file, which field, what was wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace sy {

// A model file (GGUF, safetensors, config.json, tokenizer.json) is unreadable or
// inconsistent.
class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sy
