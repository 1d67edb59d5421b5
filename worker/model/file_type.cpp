#include "worker/model/file_type.h"

#include <cstdlib>

namespace sy {
namespace {

constexpr struct {
  FileType type;
  const char* name;
  uint32_t ftype;  // llama_ftype: ALL_F32 0, MOSTLY_F16 1, Q4_0 2, Q8_0 7, Q4_K_M 15, Q6_K 18, BF16 32
} kFileTypes[] = {
    {FileType::kF32, "f32", 0},     {FileType::kF16, "f16", 1},       {FileType::kBF16, "bf16", 32},
    {FileType::kQ8_0, "q8_0", 7},   {FileType::kQ4_0, "q4_0", 2},     {FileType::kQ4_K_M, "q4_k_m", 15},
    {FileType::kQ6_K, "q6_k", 18},
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The layer of "blk.N.…", -1 for whole-model tensors.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

}  // namespace

std::optional<FileType> parse_file_type(std::string_view name) {
  for (const auto& f : kFileTypes)
    if (name == f.name) return f.type;
  return std::nullopt;
}

const char* file_type_name(FileType t) {
  for (const auto& f : kFileTypes)
    if (f.type == t) return f.name;
  return "?";
}

uint32_t gguf_file_type(FileType t) {
  for (const auto& f : kFileTypes)
    if (f.type == t) return f.ftype;
  return 0;
}

bool uses_more_bits(int layer, int n) {
  // Integer divisions as llama.cpp's: with 8 layers, layers 0, 3, 6 and 7.
  return layer < n / 8 || layer >= 7 * n / 8 || (layer >= n / 8 && (layer - n / 8) % 3 == 2);
}

DType tensor_type(FileType t, const std::string& name, const std::vector<int64_t>& shape, int n_layers, bool tied) {
  if (shape.size() < 2) return DType::kF32;
  const bool lm_head = name == "output.weight" || (tied && name == "token_embd.weight");
  DType type = DType::kF32;
  switch (t) {
    case FileType::kF32: type = DType::kF32; break;
    case FileType::kF16: type = DType::kF16; break;
    case FileType::kBF16: type = DType::kBF16; break;
    case FileType::kQ8_0: type = DType::kQ8_0; break;
    case FileType::kQ4_0: type = lm_head ? DType::kQ6_K : DType::kQ4_0; break;
    case FileType::kQ6_K: type = DType::kQ6_K; break;
    case FileType::kQ4_K_M: {
      // The attention value and FFN output projections carry more of the error into the
      // residual stream; llama.cpp spends two more bits on them in a third of the layers.
      const bool more = (ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight")) &&
                        uses_more_bits(layer_of(name), n_layers);
      type = lm_head || more ? DType::kQ6_K : DType::kQ4_K;
      break;
    }
  }
  if (shape.back() % dtype_block_values(type) != 0) type = shape.back() % kQ8_0BlockSize == 0 ? DType::kQ8_0 : DType::kBF16;
  return type;
}

}  // namespace sy
