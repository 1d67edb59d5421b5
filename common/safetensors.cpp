#include "common/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace sy {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // as the reference implementation

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  return std::nullopt;
}

}  // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto map = std::make_unique<MappedFile>(path);
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->label_ = path;
  f->parse_all(map->data(), map->size());
  f->map_ = std::move(map);
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t* bytes, size_t size, std::string label) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->label_ = std::move(label);
  f->parse_all(bytes, size);
  return f;
}

void SafetensorsFile::parse_all(const uint8_t* bytes, size_t size) {
  auto fail = [&](const std::string& what) { throw ModelFileError(label_ + ": invalid safetensors: " + what); };
  if (size < 8) fail("file is shorter than the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > kMaxHeaderBytes) fail("header length " + std::to_string(header_len) + " is too large");
  if (header_len > size - 8) fail("header length " + std::to_string(header_len) + " runs past the end of the file");
  nlohmann::json header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) fail("header is not a JSON object");
  const uint8_t* data = bytes + 8 + header_len;
  const size_t data_size = size - 8 - static_cast<size_t>(header_len);

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string& name = it.key();
    const auto& entry = it.value();
    if (!entry.is_object()) fail("tensor '" + name + "' entry is not an object");
    auto dt_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto off_it = entry.find("data_offsets");
    if (dt_it == entry.end() || !dt_it->is_string()) fail("tensor '" + name + "' has no dtype string");
    if (shape_it == entry.end() || !shape_it->is_array()) fail("tensor '" + name + "' has no shape array");
    if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2) fail("tensor '" + name + "' has no [begin, end] data_offsets");
    auto dtype = parse_dtype(dt_it->get<std::string>());
    if (!dtype)
      fail("tensor '" + name + "' has dtype " + dt_it->get<std::string>() + ", which Switchyard does not support (supported: F32, F16, BF16)");
    TensorInfo t;
    t.name = name;
    t.dtype = *dtype;
    unsigned __int128 numel = 1;
    for (const auto& d : *shape_it) {
      if (!d.is_number_unsigned()) fail("tensor '" + name + "' has a shape entry that is not a non-negative integer");
      auto v = d.get<uint64_t>();
      if (v > (uint64_t{1} << 40)) fail("tensor '" + name + "' has dimension " + std::to_string(v));
      t.shape.push_back(static_cast<int64_t>(v));
      numel *= v;
      if (numel > (static_cast<unsigned __int128>(1) << 48)) fail("tensor '" + name + "' has too many elements");
    }
    if (!(*off_it)[0].is_number_unsigned() || !(*off_it)[1].is_number_unsigned()) fail("tensor '" + name + "' has non-integer data_offsets");
    auto begin = (*off_it)[0].get<uint64_t>();
    auto end = (*off_it)[1].get<uint64_t>();
    if (begin > end || end > data_size)
      fail("tensor '" + name + "' data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] run past the data section (" + std::to_string(data_size) + " bytes)");
    auto expected = dtype_bytes(t.dtype, static_cast<int64_t>(numel));
    if (!expected || *expected != end - begin)
      fail("tensor '" + name + "' " + t.shape_string() + " " + dtype_name(t.dtype) + " needs " +
           (expected ? std::to_string(*expected) : std::string("too many")) + " bytes but its data_offsets span " +
           std::to_string(end - begin));
    t.data = data + begin;
    t.nbytes = end - begin;
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
}

const TensorInfo* SafetensorsFile::find_tensor(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::unique_ptr<SafetensorsDir> SafetensorsDir::open(const std::string& dir) {
  namespace fs = std::filesystem;
  auto d = std::make_unique<SafetensorsDir>();
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::map<std::string, std::vector<std::string>> wanted;  // shard → tensors it must hold
  if (fs::exists(single)) {
    wanted[single.filename().string()];
  } else if (fs::exists(index)) {
    std::ifstream in(index);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw ModelFileError(index.string() + ": not a safetensors index (no weight_map object)");
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) throw ModelFileError(index.string() + ": weight_map['" + it.key() + "'] is not a file name");
      const auto shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..")
        throw ModelFileError(index.string() + ": shard name '" + shard + "' is not a plain file name");
      wanted[shard].push_back(it.key());
    }
    if (wanted.empty()) throw ModelFileError(index.string() + ": weight_map is empty");
  } else {
    throw ModelFileError(dir + ": neither model.safetensors nor model.safetensors.index.json is there");
  }
  for (const auto& [shard, names] : wanted) {
    auto f = SafetensorsFile::open((fs::path(dir) / shard).string());
    for (const auto& n : names)
      if (!f->find_tensor(n)) throw ModelFileError(dir + "/" + shard + ": tensor '" + n + "' listed in the index is missing");
    d->shards_.push_back(std::move(f));
  }
  for (const auto& s : d->shards_)
    for (const auto& t : s->tensors())
      if (d->index_.emplace(t.name, &t).second) d->tensors_.push_back(&t);
  return d;
}

const TensorInfo* SafetensorsDir::find_tensor(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : it->second;
}

}  // namespace sy
