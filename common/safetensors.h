// Reader for Hugging Face safetensors files and model directories (config.json plus
// model.safetensors or a sharded model.safetensors.index.json). F32, F16 and BF16
// tensors; any other dtype is refused with an error naming it.
//
// Format: 8-byte little-endian header length, a JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data section that the offsets index.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/dtype.h"
#include "common/mapped_file.h"

namespace sy {

class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  // Parses bytes in memory (tests); `bytes` must outlive the object.
  static std::unique_ptr<SafetensorsFile> parse(const uint8_t* bytes, size_t size, std::string label);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  void parse_all(const uint8_t* bytes, size_t size);

  std::unique_ptr<MappedFile> map_;
  std::string label_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// All tensors of a Hugging Face model directory, across shards.
class SafetensorsDir {
 public:
  // Opens dir/model.safetensors, or the shards named by dir/model.safetensors.index.json.
  static std::unique_ptr<SafetensorsDir> open(const std::string& dir);

  const std::vector<const TensorInfo*>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::vector<const TensorInfo*> tensors_;
  std::unordered_map<std::string, const TensorInfo*> index_;
};

}  // namespace sy
