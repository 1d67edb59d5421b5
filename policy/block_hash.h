// Prefix block hashes, shared by the gateway (routing) and the worker (prefix cache):
// h_i = xxh3_64(h_{i-1} ‖ token ids of block i), h_{-1} = the model's fingerprint.
// Only full blocks are hashed; equal hashes mean equal prefixes of the same model.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace sy::policy {

// Fingerprint of a model: xxh3_64 of a canonical description of it (architecture,
// shapes, tokenizer and weights identity), so that caches of different models never
// share a hash.
uint64_t model_fingerprint(std::string_view canonical_description);

// Hash of one block given its predecessor's hash. Bytes hashed: the 8-byte
// little-endian predecessor, then each token id as 4 little-endian bytes.
uint64_t chain_block_hash(uint64_t prev, std::span<const int32_t> block_tokens);

// Hashes of the full blocks of `tokens` ([tokens.size() / block_size] entries).
std::vector<uint64_t> prefix_block_hashes(uint64_t fingerprint, std::span<const int32_t> tokens, int32_t block_size);

}  // namespace sy::policy
