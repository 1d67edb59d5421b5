// The served model's context length and vocabulary size, read from its metadata (GGUF
// keys or config.json) without loading weights: what the gateway checks requests
// against before routing them, and what the simulated worker serves.
#pragma once

#include "common/model_source.h"
#include "common/protocol/openai.h"

namespace sy {

// Throws ModelFileError when the metadata lacks them.
ModelLimits read_model_limits(const ModelSource& src);

}  // namespace sy
