// Bad model files end in a clear ModelFileError (and a non-zero exit with a message
// from the CLI), never a crash: truncation, missing tensors, wrong shapes, unsupported
// architectures and tensor types.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "fixture_edit.h"
#include "worker/backend/backend.h"

namespace sy {
namespace {

namespace fs = std::filesystem;

std::string load_error(const std::string& path) {
  try {
    auto src = ModelSource::open(path);
    const ModelConfig c = ModelConfig::from_source(*src);
    BackendOptions opt;
    opt.num_kv_blocks = 4;
    create_backend("cpu", *src, c, opt);
  } catch (const ModelFileError& e) {
    return e.what();
  }
  return "";
}

using testing::edited_fixture;
using testing::keep_kv;
using testing::keep_tensor;
using testing::temp_path;

TEST(ModelFileErrors, MissingTensorIsNamed) {
  const auto path = edited_fixture("qwen3-tiny-bf16.gguf", "missing.gguf", keep_kv, [](const TensorInfo& t, gguf::Writer&) { return t.name == "blk.1.ffn_up.weight"; });
  EXPECT_NE(load_error(path).find("missing tensor 'blk.1.ffn_up.weight'"), std::string::npos) << load_error(path);
  fs::remove(path);
}

TEST(ModelFileErrors, ShapeMismatchIsNamed) {
  const auto path = edited_fixture("qwen3-tiny-bf16.gguf", "shape.gguf", keep_kv, [](const TensorInfo& t, gguf::Writer& w) {
    if (t.name != "blk.0.attn_k.weight") return false;
    w.add_tensor_bytes(t.name, t.dtype, {t.shape[0] / 2, t.shape[1]}, std::vector<uint8_t>(t.data, t.data + t.nbytes / 2));
    return true;
  });
  const std::string e = load_error(path);
  EXPECT_NE(e.find("tensor 'blk.0.attn_k.weight' has shape [32, 32], expected [64, 32]"), std::string::npos) << e;
  fs::remove(path);
}

TEST(ModelFileErrors, UnsupportedArchitectureAndMissingMetadata) {
  auto path = edited_fixture("qwen3-tiny-bf16.gguf", "arch.gguf", [](const gguf::KeyValue& kv, gguf::Writer& w) {
    if (kv.key != "general.architecture") return false;
    w.set_string(kv.key, "mamba");
    return true;
  }, keep_tensor);
  EXPECT_NE(load_error(path).find("architecture 'mamba' is not supported"), std::string::npos) << load_error(path);
  fs::remove(path);
  path = edited_fixture("qwen3-tiny-bf16.gguf", "nometa.gguf", [](const gguf::KeyValue& kv, gguf::Writer&) { return kv.key == "qwen3.block_count"; }, keep_tensor);
  EXPECT_NE(load_error(path).find("missing metadata key 'qwen3.block_count'"), std::string::npos) << load_error(path);
  fs::remove(path);
  path = edited_fixture("qwen3-tiny-bf16.gguf", "heads.gguf", [](const gguf::KeyValue& kv, gguf::Writer& w) {
    if (kv.key != "qwen3.attention.head_count_kv") return false;
    w.set_u32(kv.key, 3);
    return true;
  }, keep_tensor);
  EXPECT_NE(load_error(path).find("not a multiple of 3 KV heads"), std::string::npos) << load_error(path);
  fs::remove(path);
}

TEST(ModelFileErrors, TruncatedFileIsRefused) {
  const std::string src = testing::fixture_path("qwen3-tiny-bf16.gguf");
  const auto size = fs::file_size(src);
  for (uintmax_t keep : {uintmax_t{0}, uintmax_t{3}, uintmax_t{100}, size / 2, size - 1}) {
    const std::string path = temp_path("trunc.gguf");
    fs::copy_file(src, path, fs::copy_options::overwrite_existing);
    fs::resize_file(path, keep);
    EXPECT_FALSE(load_error(path).empty()) << "truncated to " << keep << " bytes";
    fs::remove(path);
  }
}

TEST(ModelFileErrors, CliReportsAndExitsNonZero) {
  const std::string src = testing::fixture_path("qwen3-tiny-bf16.gguf");
  const std::string path = temp_path("cli_trunc.gguf");
  fs::copy_file(src, path, fs::copy_options::overwrite_existing);
  fs::resize_file(path, fs::file_size(src) / 2);
  const std::string err = temp_path("cli_err.txt");
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-worker eval --model " + path + " --prompt-ids 1,2 --logits-out /dev/null 2>" + err;
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(err);
  const std::string msg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string want = "error: ";
  want.append(path).append(": invalid GGUF");
  EXPECT_NE(msg.find(want), std::string::npos) << msg;
  fs::remove(path);
  fs::remove(err);
}

}  // namespace
}  // namespace sy
