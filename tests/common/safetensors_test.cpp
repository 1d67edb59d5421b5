// Safetensors files and Hugging Face directories: good files read, every kind of damage
// gives a ModelFileError naming the file and the problem.
#include "common/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/model_source.h"
#include "fixture_util.h"

namespace sy {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> build(const nlohmann::json& header, size_t data_bytes, uint64_t header_len_override = 0) {
  const std::string h = header.dump();
  std::vector<uint8_t> b(8 + h.size() + data_bytes, 0);
  uint64_t len = header_len_override ? header_len_override : h.size();
  std::memcpy(b.data(), &len, 8);
  std::memcpy(b.data() + 8, h.data(), h.size());
  for (size_t i = 0; i < data_bytes; ++i) b[8 + h.size() + i] = static_cast<uint8_t>(i);
  return b;
}

std::string error_of(const std::vector<uint8_t>& b) {
  try {
    SafetensorsFile::parse(b.data(), b.size(), "x.safetensors");
  } catch (const ModelFileError& e) {
    return e.what();
  }
  return "";
}

nlohmann::json entry(const std::string& dtype, std::vector<int> shape, size_t begin, size_t end) {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

TEST(Safetensors, ReadsTensors) {
  nlohmann::json h = {{"__metadata__", {{"format", "pt"}}},
                      {"a", entry("F32", {2, 2}, 0, 16)},
                      {"b", entry("BF16", {3}, 16, 22)},
                      {"c", entry("F16", {1}, 22, 24)}};
  const auto bytes = build(h, 24);
  auto f = SafetensorsFile::parse(bytes.data(), bytes.size(), "x");
  ASSERT_EQ(f->tensors().size(), 3u);
  const TensorInfo* b = f->find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(b->data[0], 16);
  EXPECT_EQ(f->find_tensor("missing"), nullptr);
}

TEST(Safetensors, DamageGivesClearErrors) {
  auto expect = [](const std::vector<uint8_t>& b, const std::string& needle) {
    const std::string e = error_of(b);
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    EXPECT_EQ(e.find("x.safetensors"), 0u) << e;
  };
  expect({1, 2, 3}, "shorter than the 8-byte header length");
  expect(build({{"a", entry("F32", {1}, 0, 4)}}, 4, 1u << 20), "runs past the end");
  expect(build({{"a", entry("F32", {1}, 0, 4)}}, 4, uint64_t{1} << 40), "too large");
  expect(build({{"a", entry("I64", {1}, 0, 8)}}, 8), "dtype I64, which Switchyard does not support");
  expect(build({{"a", entry("F32", {2}, 0, 4)}}, 8), "needs 8 bytes but its data_offsets span 4");
  expect(build({{"a", entry("F32", {1}, 4, 100)}}, 8), "run past the data section");
  expect(build({{"a", entry("F32", {1}, 8, 4)}}, 8), "run past the data section");
  expect(build({{"a", {{"dtype", "F32"}, {"shape", {1}}}}}, 4), "data_offsets");
  expect(build({{"a", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}}, 4), "non-negative integer");
  {
    std::vector<uint8_t> b(8 + 5);
    uint64_t len = 5;
    std::memcpy(b.data(), &len, 8);
    std::memcpy(b.data() + 8, "{oops", 5);
    expect(b, "not a JSON object");
  }
}

class HfDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sy_hf_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(HfDir, ReadsShardsThroughTheIndex) {
  write("config.json", R"({"model_type":"llama"})");
  write("s1.safetensors", build({{"a", entry("F32", {1}, 0, 4)}}, 4));
  write("s2.safetensors", build({{"b", entry("F16", {2}, 0, 4)}}, 4));
  write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  auto src = ModelSource::open(dir_.string());
  EXPECT_EQ(src->format(), ModelFormat::kHuggingFace);
  ASSERT_NE(src->find_tensor("a"), nullptr);
  ASSERT_NE(src->find_tensor("b"), nullptr);
  EXPECT_EQ(src->find_tensor("b")->dtype, DType::kF16);
  EXPECT_EQ(src->tensors().size(), 2u);
}

TEST_F(HfDir, MissingPiecesAreNamed) {
  auto error_of_dir = [&] {
    try {
      auto src = ModelSource::open(dir_.string());
      src->tensors();
    } catch (const ModelFileError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of_dir().find("needs config.json"), std::string::npos);
  write("config.json", "{not json");
  EXPECT_NE(error_of_dir().find("invalid JSON"), std::string::npos);
  write("config.json", R"({"model_type":"llama"})");
  EXPECT_NE(error_of_dir().find("neither model.safetensors nor"), std::string::npos);
  write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}})");
  write("s1.safetensors", build({{"a", entry("F32", {1}, 0, 4)}}, 4));
  EXPECT_NE(error_of_dir().find("tensor 'b' listed in the index is missing"), std::string::npos);
  write("model.safetensors.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  EXPECT_NE(error_of_dir().find("not a plain file name"), std::string::npos);
}

TEST(HfFixture, OpensTheQwen3Directory) {
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny"));
  EXPECT_EQ(src->hf_config()["model_type"], "qwen3");
  EXPECT_FALSE(src->hf_chat_template().empty());
  EXPECT_FALSE(src->hf_tokenizer_json_path().empty());
  const TensorInfo* t = src->find_tensor("model.embed_tokens.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{151680, 32}));
}

}  // namespace
}  // namespace sy
