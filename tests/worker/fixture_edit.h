// Writes edited copies of a fixture GGUF for tests: metadata and tensors can be dropped,
// replaced or added.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

#include "common/gguf.h"
#include "common/gguf_writer.h"
#include "fixture_util.h"

namespace sy::testing {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sy_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

// edit_kv / edit_tensor return true when they handled (dropped or rewrote) the entry;
// `extra` may add tensors at the end.
inline std::string edited_fixture(const std::string& fixture_file, const std::string& out_name,
                                  const std::function<bool(const gguf::KeyValue&, gguf::Writer&)>& edit_kv,
                                  const std::function<bool(const TensorInfo&, gguf::Writer&)>& edit_tensor,
                                  const std::function<void(const gguf::File&, gguf::Writer&)>& extra = {}) {
  auto src = gguf::File::open(fixture_path(fixture_file));
  gguf::Writer w;
  for (const auto& kv : src->metadata())
    if (!edit_kv(kv, w)) w.set(kv.key, kv.value);
  for (const auto& t : src->tensors()) {
    if (edit_tensor(t, w)) continue;
    w.add_tensor_bytes(t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  if (extra) extra(*src, w);
  const std::string path = temp_path(out_name);
  w.write(path);
  return path;
}

inline bool keep_kv(const gguf::KeyValue&, gguf::Writer&) { return false; }
inline bool keep_tensor(const TensorInfo&, gguf::Writer&) { return false; }

}  // namespace sy::testing
