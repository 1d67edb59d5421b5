// Element types of model tensors that Switchyard reads, shared by the GGUF and
// safetensors readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sy {

enum class DType { kF32, kF16, kBF16, kQ8_0 };

// Q8_0: blocks of 32 values, each an f16 scale followed by 32 int8 quants (34 bytes).
inline constexpr int kQ8_0BlockSize = 32;
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

const char* dtype_name(DType t);

// Bytes that `n` consecutive elements of type `t` occupy; nullopt when `n` does not
// fill whole blocks (Q8_0) or the size overflows.
std::optional<size_t> dtype_bytes(DType t, int64_t n);

// A tensor inside a mapped model file. Shape is row-major, outermost dimension first
// (PyTorch order); GGUF's ne[] is stored innermost first and is reversed on reading.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // points into the mapped file
  size_t nbytes = 0;

  int64_t numel() const;
  std::string shape_string() const;  // e.g. "[151680, 32]"
};

}  // namespace sy
