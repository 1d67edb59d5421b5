#include "common/model_identity.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.h"

namespace sy {
namespace {

constexpr size_t kHeadBytes = size_t{1} << 20;

// "size=<bytes> head_xxh3=<hex>" of one file.
std::string file_identity(const std::filesystem::path& p) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(p, ec);
  if (ec) throw ModelFileError(p.string() + ": " + ec.message());
  std::ifstream in(p, std::ios::binary);
  std::vector<char> head(static_cast<size_t>(std::min<uintmax_t>(size, kHeadBytes)));
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size())))
    throw ModelFileError(p.string() + ": cannot read");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64,
                static_cast<uint64_t>(XXH3_64bits(head.data(), head.size())));
  return "size=" + std::to_string(size) + " head_xxh3=" + hex;
}

}  // namespace

std::string model_identity_description(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::string out = "switchyard-model-v1\n";
  if (!fs::is_directory(model_path)) {
    const std::string id = file_identity(model_path);  // "size=N head_xxh3=H"
    return out + "format=gguf\n" + id.substr(0, id.find(' ')) + "\n" + id.substr(id.find(' ') + 1) +
           "\n";
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(model_path)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    const bool meta =
        name == "config.json" || name == "tokenizer.json" || name == "tokenizer_config.json";
    const bool weights =
        name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
    if (meta || weights) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  out += "format=hf\n";
  for (const auto& name : names)
    out += name + " " + file_identity(fs::path(model_path) / name) + "\n";
  return out;
}

}  // namespace sy
