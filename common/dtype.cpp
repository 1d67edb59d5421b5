#include "common/dtype.h"

namespace sy {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
  }
  return "?";
}

std::optional<size_t> dtype_bytes(DType t, int64_t n) {
  if (n < 0) return std::nullopt;
  const auto un = static_cast<unsigned __int128>(n);
  unsigned __int128 bytes = 0;
  switch (t) {
    case DType::kF32: bytes = un * 4; break;
    case DType::kF16:
    case DType::kBF16: bytes = un * 2; break;
    case DType::kQ8_0:
      if (n % kQ8_0BlockSize != 0) return std::nullopt;
      bytes = un / kQ8_0BlockSize * sizeof(BlockQ8_0);
      break;
  }
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
