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

enum class DType { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };

// Q8_0: blocks of 32 values, each an f16 scale followed by 32 int8 quants (34 bytes).
inline constexpr int kQ8_0BlockSize = 32;
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: blocks of 32, an f16 scale and 16 bytes of 4-bit quants; byte j holds element j
// (low nibble) and element j + 16 (high nibble); x = (q - 8) * d.
inline constexpr int kQ4_0BlockSize = 32;
struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQ4_0BlockSize / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// The K-quants (ggml's layout, which GGUF files on model hubs carry): super-blocks of
// 256 values in sub-blocks whose scales are themselves quantized.
inline constexpr int kQKBlockSize = 256;

// Q4_K: 8 sub-blocks of 32; 6-bit scale and min per sub-block packed into 12 bytes;
// x = d * scale * q - dmin * min, q in 0..15.
struct BlockQ4_K {
  uint16_t d;     // f16 super-block scale of the scales
  uint16_t dmin;  // f16 super-block scale of the mins
  uint8_t scales[12];
  uint8_t qs[kQKBlockSize / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: as Q4_K with a fifth bit per value in qh; q in 0..31.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKBlockSize / 8];
  uint8_t qs[kQKBlockSize / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 with int8 scales; low 4 bits in ql, high 2 bits in qh;
// x = d * scale * (q - 32), q in 0..63.
struct BlockQ6_K {
  uint8_t ql[kQKBlockSize / 2];
  uint8_t qh[kQKBlockSize / 4];
  int8_t scales[kQKBlockSize / 16];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ6_K) == 210);

// Values a block of `t` holds (1 for the unquantized types) and the bytes it takes.
int dtype_block_values(DType t);
size_t dtype_block_bytes(DType t);

const char* dtype_name(DType t);

// Bytes that `n` consecutive elements of type `t` occupy; nullopt when `n` does not
// fill whole blocks (the quantized types) or the size overflows.
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
