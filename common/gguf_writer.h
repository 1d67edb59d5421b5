// Writes GGUF v3 files: metadata, tensor infos and aligned tensor data. Tensor data is
// produced row by row through a callback, so multi-gigabyte models are written without
// holding them in memory (make-model, tests that build bad files).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/gguf.h"

namespace sy::gguf {

class Writer {
 public:
  // Fills `out` (dtype_bytes(dtype, row length) bytes) with row `row` of the tensor.
  using RowFn = std::function<void(int64_t row, uint8_t* out)>;

  void set(std::string key, Value v);
  void set_string(std::string key, std::string v);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string_array(std::string key, std::vector<std::string> v);
  void set_i32_array(std::string key, std::vector<int64_t> v);
  void set_f32_array(std::string key, std::vector<double> v);

  // `shape` is row-major, outermost first (reversed into GGUF's ne[] on writing).
  // `rows(r, out)` fills row r; it may run on several threads at once for different rows.
  void add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, RowFn rows);
  // Convenience for small tensors already in memory (bytes in the file's layout).
  void add_tensor_bytes(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);

  void set_alignment(uint32_t a) { alignment_ = a; }

  // Writes the whole file; throws std::runtime_error on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    RowFn rows;
  };
  std::vector<KeyValue> metadata_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

// GGUF ggml type id of a DType.
uint32_t ggml_type_id(DType t);

}  // namespace sy::gguf
