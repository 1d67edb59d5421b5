#include "policy/block_hash.h"

#include <xxhash.h>

#include <cstring>

namespace sy::policy {

uint64_t model_fingerprint(std::string_view canonical_description) {
  return XXH3_64bits(canonical_description.data(), canonical_description.size());
}

uint64_t chain_block_hash(uint64_t prev, std::span<const int32_t> block_tokens) {
  // One contiguous buffer keeps the hash a single XXH3 call; blocks are small (16 ids).
  uint8_t buf[8 + 4 * 256];
  const size_t n = block_tokens.size();
  if (n > 256) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    uint8_t p[8];
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(prev >> (8 * i));
    XXH3_64bits_update(st, p, 8);
    for (int32_t id : block_tokens) {
      uint8_t b[4];
      for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(static_cast<uint32_t>(id) >> (8 * i));
      XXH3_64bits_update(st, b, 4);
    }
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
  }
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<uint8_t>(prev >> (8 * i));
  for (size_t k = 0; k < n; ++k)
    for (int i = 0; i < 4; ++i) buf[8 + 4 * k + static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<uint32_t>(block_tokens[k]) >> (8 * i));
  return XXH3_64bits(buf, 8 + 4 * n);
}

std::vector<uint64_t> prefix_block_hashes(uint64_t fingerprint, std::span<const int32_t> tokens, int32_t block_size) {
  std::vector<uint64_t> out;
  if (block_size <= 0) return out;
  const size_t full = tokens.size() / static_cast<size_t>(block_size);
  out.reserve(full);
  uint64_t prev = fingerprint;
  for (size_t b = 0; b < full; ++b) {
    prev = chain_block_hash(prev, tokens.subspan(b * static_cast<size_t>(block_size), static_cast<size_t>(block_size)));
    out.push_back(prev);
  }
  return out;
}

}  // namespace sy::policy
