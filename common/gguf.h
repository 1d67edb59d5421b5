// GGUF v2/v3 reader: metadata of every value type, tensor infos, alignment, and tensor
// data in a memory map. Every offset and size is checked against the file; a bad file
// raises ModelFileError with a message naming the file and what is wrong.
//
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/dtype.h"
#include "common/mapped_file.h"

namespace sy::gguf {

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

const char* value_type_name(ValueType t);
bool is_integer_type(ValueType t);  // any integer type or bool

// Name of a ggml tensor type id (all of ggml's, also those Switchyard refuses), or
// nullptr for an id ggml does not define.
const char* ggml_type_name(uint32_t id);

// One metadata value. Integers (and bool) live in `int_value`; a U64 above INT64_MAX
// keeps its bits. Arrays hold their elements in the vector matching `elem_type`.
struct Value {
  ValueType type = ValueType::kU8;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;

  ValueType elem_type = ValueType::kU8;  // arrays only
  std::vector<int64_t> ints;             // integer and bool elements
  std::vector<double> floats;            // f32 and f64 elements
  std::vector<std::string> strings;      // string elements
  std::vector<Value> arrays;             // nested arrays

  bool is_integer() const;  // any integer type or bool
  bool is_float() const;
  size_t array_size() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

class File {
 public:
  // Maps and parses `path`.
  static std::unique_ptr<File> open(const std::string& path);
  // Parses bytes already in memory (tests, the fuzzer). `bytes` must outlive the File.
  static std::unique_ptr<File> parse(const uint8_t* bytes, size_t size, std::string label);

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  const std::string& label() const { return label_; }

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;

  // Typed getters. The throwing ones raise ModelFileError naming the key when it is
  // missing or has another type.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // accepts integers too
  bool get_bool(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string fallback) const;
  int64_t get_int_or(std::string_view key, int64_t fallback) const;
  double get_float_or(std::string_view key, double fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  const std::vector<std::string>& get_string_array(std::string_view key) const;
  const std::vector<int64_t>& get_int_array(std::string_view key) const;
  const std::vector<double>& get_float_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  File() = default;
  void parse_all(const uint8_t* bytes, size_t size);
  [[noreturn]] void fail(const std::string& what) const;
  const Value& require(std::string_view key) const;

  std::unique_ptr<MappedFile> map_;
  std::string label_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string, size_t> key_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace sy::gguf
