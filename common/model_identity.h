// The canonical description of a model's identity, from which the prefix cache's model
// fingerprint is computed (policy::model_fingerprint, the h_{-1} of the block hash
// chain). The gateway and the worker compute it from the same files the same way, so
// their block hashes agree; different weights, tokenizers or shapes give different
// fingerprints, and a model copied to another path keeps its own. docs/PROTOCOL.md
// states the format.
#pragma once

#include <string>

namespace sy {

// For a GGUF file:
//   "switchyard-model-v1\nformat=gguf\nsize=<bytes>\nhead_xxh3=<16 hex digits>\n"
// where head_xxh3 is XXH3-64 of the file's first min(size, 1 MiB) bytes (the header,
// with the architecture, shapes and tokenizer metadata).
// For a Hugging Face directory:
//   "switchyard-model-v1\nformat=hf\n" then, for each of config.json, tokenizer.json,
//   tokenizer_config.json and every *.safetensors file that exists, in byte order of
//   the file name: "<name> size=<bytes> head_xxh3=<16 hex digits>\n".
// Throws ModelFileError when a file cannot be read.
std::string model_identity_description(const std::string& model_path);

}  // namespace sy
