// The file types make-model writes (`--type`) and the type each tensor gets in one: a
// single type for every matrix, or llama.cpp's Q4_K_M mixture, with llama.cpp's choices
// for the LM head and its fallbacks where a row does not fill whole blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"

namespace sy {

enum class FileType { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K_M, kQ6_K };

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q6_k"; nullopt for anything else.
std::optional<FileType> parse_file_type(std::string_view name);
const char* file_type_name(FileType t);
// GGUF's general.file_type for it (llama.cpp's llama_ftype numbering).
uint32_t gguf_file_type(FileType t);

// The type of tensor `name` (GGUF naming: "blk.N.attn_v.weight", "output.weight", ...)
// of shape `shape` (outermost first) in a file of type `t` for a model of `n_layers`
// layers; `tied`: token_embd.weight is also the LM head. Rules (llama.cpp's):
//  - 1-D tensors (norms, biases): F32.
//  - The LM head (output.weight, or token_embd.weight when tied): Q6_K for q4_0, q4_k_m
//    and q6_k; the file's type otherwise.
//  - q4_k_m: attn_v and ffn_down Q6_K in the layers llama.cpp gives more bits (the first
//    and last eighth and every third layer between), every other matrix Q4_K.
//  - A row that does not fill whole blocks of the chosen type falls back to Q8_0 when its
//    length is a multiple of 32, else BF16 (llama.cpp writes Q5_0/Q8_0/F16 there; Q5_0 is
//    not a type Switchyard reads).
DType tensor_type(FileType t, const std::string& name, const std::vector<int64_t>& shape, int n_layers, bool tied);

// llama.cpp's "use more bits" layers of Q4_K_M: the first and last eighth of the `n`
// layers and every third one between them.
bool uses_more_bits(int layer, int n);

}  // namespace sy
