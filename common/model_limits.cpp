#include "common/model_limits.h"

#include "common/error.h"

namespace sy {

ModelLimits read_model_limits(const ModelSource& src) {
  ModelLimits l;
  if (src.format() == ModelFormat::kGguf) {
    const gguf::File& f = *src.gguf();
    const std::string arch = f.get_string("general.architecture");
    l.context_length = static_cast<int32_t>(f.get_int_or(arch + ".context_length", 4096));
    const TensorInfo* emb = f.find_tensor("token_embd.weight");
    if (!emb || emb->shape.size() != 2) throw ModelFileError(src.path() + ": missing tensor 'token_embd.weight'");
    l.vocab_size = static_cast<int32_t>(emb->shape[0]);
  } else {
    const auto& c = src.hf_config();
    l.context_length = c.value("max_position_embeddings", 4096);
    if (!c.contains("vocab_size") || !c["vocab_size"].is_number_integer()) throw ModelFileError(src.path() + "/config.json has no vocab_size");
    l.vocab_size = c["vocab_size"].get<int32_t>();
  }
  return l;
}

}  // namespace sy
