#include "common/dtype.h"

namespace sy {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_0: return "Q4_0";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ5_K: return "Q5_K";
    case DType::kQ6_K: return "Q6_K";
  }
  return "?";
}

int dtype_block_values(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return 1;
    case DType::kQ8_0: return kQ8_0BlockSize;
    case DType::kQ4_0: return kQ4_0BlockSize;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return kQKBlockSize;
  }
  return 1;
}

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_K: return sizeof(BlockQ4_K);
    case DType::kQ5_K: return sizeof(BlockQ5_K);
    case DType::kQ6_K: return sizeof(BlockQ6_K);
  }
  return 4;
}

std::optional<size_t> dtype_bytes(DType t, int64_t n) {
  if (n < 0) return std::nullopt;
  const int per_block = dtype_block_values(t);
  if (n % per_block != 0) return std::nullopt;
  const unsigned __int128 bytes = static_cast<unsigned __int128>(n / per_block) * dtype_block_bytes(t);
  if (bytes > static_cast<unsigned __int128>(SIZE_MAX / 2)) return std::nullopt;
  return static_cast<size_t>(bytes);
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace sy
