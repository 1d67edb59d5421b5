// Loaders: translate GGUF metadata or tokenizer.json into a TokenizerSpec. Each throws
// ModelFileError naming the file and the offending key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/gguf.h"
#include "common/tokenizer/tokenizer_spec.h"

namespace sy::tok {

TokenizerSpec spec_from_gguf(const gguf::File& f);

TokenizerSpec spec_from_tokenizer_json(const std::string& path, const nlohmann::json& config);

// Adds generation_config.json's eos_token_id (a number or a list) to the stop ids.
void add_generation_config_stops(const nlohmann::json& generation_config, const std::string& label,
                                 TokenizerSpec& spec);

}  // namespace sy::tok
