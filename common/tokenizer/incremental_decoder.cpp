#include "common/tokenizer/incremental_decoder.h"

#include "common/utf8.h"

namespace sy {

std::string IncrementalDecoder::push(int32_t id) {
  tokenizer_.append_token_bytes(id, skip_special_, pending_);
  return drain();
}

std::string IncrementalDecoder::push(std::span<const int32_t> ids) {
  for (int32_t id : ids) tokenizer_.append_token_bytes(id, skip_special_, pending_);
  return drain();
}

std::string IncrementalDecoder::drain() {
  std::string out;
  const size_t used = sy::append_utf8_lossy(pending_, out, /*final=*/false);
  pending_.erase(0, used);
  return out;
}

std::string IncrementalDecoder::finish() {
  std::string out;
  sy::append_utf8_lossy(pending_, out, /*final=*/true);
  pending_.clear();
  return out;
}

}  // namespace sy
