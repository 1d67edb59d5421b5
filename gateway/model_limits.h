// The served model's context length and vocabulary size, read from its metadata (GGUF
// keys or config.json) without loading weights: what the gateway checks requests
// against before routing them.
#pragma once

#include "common/model_source.h"
#include "common/protocol/openai.h"

namespace sy::gateway {

// Throws ModelFileError when the metadata lacks them.
ModelLimits read_model_limits(const ModelSource& src);

}  // namespace sy::gateway
