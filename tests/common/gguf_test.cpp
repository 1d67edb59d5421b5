// GGUF reader: every metadata value type and tensor type round-trips through the
// writer; every kind of damage gives a ModelFileError that says what is wrong.
#include "common/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <tuple>
#include <fstream>

#include "common/error.h"
#include "common/gguf_writer.h"
#include "fixture_util.h"

namespace sy::gguf {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sy_gguf_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Value scalar(ValueType t, int64_t i, double f = 0) {
  Value v;
  v.type = t;
  v.int_value = i;
  v.float_value = f;
  return v;
}

// A small file with every value type and every tensor type.
std::vector<uint8_t> sample_file(uint32_t alignment = 32) {
  Writer w;
  w.set_alignment(alignment);
  w.set("u8", scalar(ValueType::kU8, 200));
  w.set("i8", scalar(ValueType::kI8, -100));
  w.set("u16", scalar(ValueType::kU16, 60000));
  w.set("i16", scalar(ValueType::kI16, -30000));
  w.set("u32", scalar(ValueType::kU32, 4000000000));
  w.set("i32", scalar(ValueType::kI32, -2000000000));
  w.set("u64", scalar(ValueType::kU64, int64_t{1} << 40));
  w.set("i64", scalar(ValueType::kI64, -(int64_t{1} << 40)));
  w.set("f32", scalar(ValueType::kF32, 0, 1.5));
  w.set("f64", scalar(ValueType::kF64, 0, -2.25));
  w.set_bool("bool", true);
  w.set_string("str", "héllo");
  w.set_string_array("strs", {"a", "", "ccc"});
  w.set_i32_array("ints", {1, -2, 3});
  w.set_f32_array("floats", {0.5, -1.0});
  Value nested;
  nested.type = ValueType::kArray;
  nested.elem_type = ValueType::kArray;
  Value inner;
  inner.type = ValueType::kArray;
  inner.elem_type = ValueType::kU8;
  inner.ints = {7, 8};
  nested.arrays = {inner, inner};
  w.set("nested", nested);
  std::vector<uint8_t> f32(2 * 3 * 4);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint8_t>(i);
  w.add_tensor_bytes("t.f32", DType::kF32, {2, 3}, f32);
  w.add_tensor_bytes("t.f16", DType::kF16, {5}, std::vector<uint8_t>(10, 1));
  w.add_tensor_bytes("t.bf16", DType::kBF16, {3, 1}, std::vector<uint8_t>(6, 2));
  w.add_tensor_bytes("t.q8_0", DType::kQ8_0, {2, 32}, std::vector<uint8_t>(68, 3));
  w.add_tensor_bytes("t.q4_0", DType::kQ4_0, {3, 64}, std::vector<uint8_t>(3 * 2 * 18, 4));
  w.add_tensor_bytes("t.q4_k", DType::kQ4_K, {2, 256}, std::vector<uint8_t>(2 * 144, 5));
  w.add_tensor_bytes("t.q5_k", DType::kQ5_K, {512}, std::vector<uint8_t>(2 * 176, 6));
  w.add_tensor_bytes("t.q6_k", DType::kQ6_K, {1, 1, 256}, std::vector<uint8_t>(210, 7));
  const std::string path = temp_path("sample.gguf");
  w.write(path);
  auto bytes = read_all(path);
  std::filesystem::remove(path);
  return bytes;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    File::parse(bytes.data(), bytes.size(), "test.gguf");
  } catch (const ModelFileError& e) {
    return e.what();
  }
  return "";
}

TEST(Gguf, RoundTripsEveryValueAndTensorType) {
  for (uint32_t alignment : {32u, 64u, 4096u}) {
    const auto bytes = sample_file(alignment);
    auto f = File::parse(bytes.data(), bytes.size(), "sample");
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->get_int("u8"), 200);
    EXPECT_EQ(f->get_int("i8"), -100);
    EXPECT_EQ(f->get_int("u16"), 60000);
    EXPECT_EQ(f->get_int("i16"), -30000);
    EXPECT_EQ(f->get_int("u32"), 4000000000);
    EXPECT_EQ(f->get_int("i32"), -2000000000);
    EXPECT_EQ(f->get_int("u64"), int64_t{1} << 40);
    EXPECT_EQ(f->get_int("i64"), -(int64_t{1} << 40));
    EXPECT_EQ(f->get_float("f32"), 1.5);
    EXPECT_EQ(f->get_float("f64"), -2.25);
    EXPECT_TRUE(f->get_bool("bool"));
    EXPECT_EQ(f->get_string("str"), "héllo");
    EXPECT_EQ(f->get_string_array("strs"), (std::vector<std::string>{"a", "", "ccc"}));
    EXPECT_EQ(f->get_int_array("ints"), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(f->get_float_array("floats"), (std::vector<double>{0.5, -1.0}));
    ASSERT_EQ(f->find("nested")->arrays.size(), 2u);
    EXPECT_EQ(f->find("nested")->arrays[1].ints, (std::vector<int64_t>{7, 8}));
    EXPECT_EQ(f->get_int_or("missing", 5), 5);

    ASSERT_EQ(f->tensors().size(), 8u);
    const TensorInfo* t = f->find_tensor("t.f32");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t->nbytes, 24u);
    EXPECT_EQ(t->data[5], 5);
    EXPECT_EQ(f->find_tensor("t.q8_0")->dtype, DType::kQ8_0);
    EXPECT_EQ(f->find_tensor("t.q8_0")->nbytes, 68u);
    EXPECT_EQ(f->find_tensor("t.bf16")->shape, (std::vector<int64_t>{3, 1}));
    // The block types: ggml's type ids map back, sizes are whole blocks of 18, 144, 176
    // and 210 bytes, and the data is where the writer put it.
    const struct {
      const char* name;
      DType type;
      std::vector<int64_t> shape;
      size_t nbytes;
      uint8_t fill;
    } blocks[] = {{"t.q4_0", DType::kQ4_0, {3, 64}, 108, 4}, {"t.q4_k", DType::kQ4_K, {2, 256}, 288, 5},
                  {"t.q5_k", DType::kQ5_K, {512}, 352, 6}, {"t.q6_k", DType::kQ6_K, {1, 1, 256}, 210, 7}};
    for (const auto& b : blocks) {
      const TensorInfo* q = f->find_tensor(b.name);
      ASSERT_NE(q, nullptr) << b.name;
      EXPECT_EQ(q->dtype, b.type) << b.name;
      EXPECT_EQ(q->shape, b.shape) << b.name;
      EXPECT_EQ(q->nbytes, b.nbytes) << b.name;
      EXPECT_EQ(q->data[0], b.fill) << b.name;
      EXPECT_EQ(q->data[b.nbytes - 1], b.fill) << b.name;
    }
    for (const auto& ti : f->tensors()) EXPECT_EQ(static_cast<size_t>(ti.data - bytes.data()) % alignment, 0u) << ti.name;
  }
}

TEST(Gguf, ReadsTheFixtureFiles) {
  auto f = File::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f->get_int("qwen3.block_count"), 2);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 151680u);
  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{151680, 32}));
  EXPECT_EQ(emb->dtype, DType::kBF16);
  auto q = File::open(testing::fixture_path("qwen3-tiny-q8_0.gguf"));
  EXPECT_EQ(q->find_tensor("blk.0.attn_q.weight")->dtype, DType::kQ8_0);
}

TEST(Gguf, TypedGettersNameTheKeyOnMismatch) {
  const auto bytes = sample_file();
  auto f = File::parse(bytes.data(), bytes.size(), "sample");
  EXPECT_THROW(f->get_string("u8"), ModelFileError);
  try {
    f->get_int("nope");
    FAIL();
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
  }
  EXPECT_THROW(f->get_string_array("ints"), ModelFileError);
}

TEST(Gguf, EveryTruncationIsAnError) {
  const auto bytes = sample_file();
  // The writer pads the file after the last tensor; cutting that padding loses nothing.
  auto f = File::parse(bytes.data(), bytes.size(), "sample");
  size_t data_end = 0;
  for (const auto& t : f->tensors()) data_end = std::max(data_end, static_cast<size_t>(t.data - bytes.data()) + t.nbytes);
  ASSERT_GT(data_end, bytes.size() - 32);
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parse_error(cut).empty()) << "prefix of " << n << " bytes parsed";
  }
}

// Offsets of fields in sample_file(): the header is magic, version, counts.
void put_u32(std::vector<uint8_t>& b, size_t off, uint32_t v) { std::memcpy(&b[off], &v, 4); }
void put_u64(std::vector<uint8_t>& b, size_t off, uint64_t v) { std::memcpy(&b[off], &v, 8); }

size_t find_bytes(const std::vector<uint8_t>& b, const std::string& s) {
  auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  return static_cast<size_t>(it - b.begin());
}

TEST(Gguf, DamagedHeadersGiveClearErrors) {
  const auto good = sample_file();
  auto expect_error = [](std::vector<uint8_t> b, const std::string& needle) {
    const std::string err = parse_error(b);
    EXPECT_NE(err.find(needle), std::string::npos) << "error was: " << err;
    EXPECT_EQ(err.find("test.gguf"), 0u) << "error does not name the file: " << err;
  };
  {
    auto b = good;
    b[0] = 'X';
    expect_error(b, "bad magic");
  }
  {
    auto b = good;
    put_u32(b, 4, 7);
    expect_error(b, "unsupported version 7");
  }
  {
    auto b = good;
    put_u64(b, 8, uint64_t{1} << 60);
    expect_error(b, "tensor count");
  }
  {
    auto b = good;
    put_u64(b, 16, uint64_t{1} << 60);
    expect_error(b, "metadata count");
  }
  {  // a string length far past the end
    auto b = good;
    put_u64(b, 24, uint64_t{1} << 62);
    expect_error(b, "runs past the end");
  }
  // Tensor info of "t.f32": name, n_dims (u32), dims (u64 each), type (u32), offset (u64).
  const size_t info = find_bytes(good, "t.f32") + 5;
  {
    auto b = good;
    put_u32(b, info, 5);
    expect_error(b, "5 dimensions");
  }
  {
    auto b = good;
    put_u32(b, info + 4 + 16, 11);  // Q3_K
    expect_error(b, "type Q3_K (11), which Switchyard does not support (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
  }
  {
    auto b = good;
    put_u32(b, info + 4 + 16, 23);  // IQ4_XS
    expect_error(b, "type IQ4_XS (23), which Switchyard does not support");
  }
  {
    auto b = good;
    put_u32(b, info + 4 + 16, 99);
    expect_error(b, "type unknown (99)");
  }
  {
    auto b = good;
    put_u64(b, info + 4 + 16 + 4, 3);
    expect_error(b, "not aligned");
  }
  {
    auto b = good;
    put_u64(b, info + 4 + 16 + 4, uint64_t{1} << 40);
    expect_error(b, "runs past the end of the file");
  }
  {
    auto b = good;
    put_u64(b, info + 4, 0);
    expect_error(b, "has dimension 0");
  }
  {  // metadata value type out of range
    auto b = good;
    const size_t key = find_bytes(good, "u8") + 2;
    put_u32(b, key, 77);
    expect_error(b, "unknown value type 77");
  }
  {  // bool that is neither 0 nor 1
    auto b = good;
    const size_t key = find_bytes(good, "bool") + 4 + 4;
    b[key] = 2;
    expect_error(b, "invalid bool");
  }
}

TEST(Gguf, RefusesDuplicateKeysAndRowsOffTheBlockSize) {
  {
    Writer w;
    w.set_string("a", "x");
    w.set_string("b", "y");
    const std::string path = temp_path("dup.gguf");
    w.write(path);
    auto b = read_all(path);
    std::filesystem::remove(path);
    b[find_bytes(b, "b") ] = 'a';  // rename key "b" to "a"
    EXPECT_NE(parse_error(b).find("duplicate metadata key 'a'"), std::string::npos);
  }
  {
    Writer w;
    w.add_tensor_bytes("q", DType::kQ8_0, {32}, std::vector<uint8_t>(34, 0));
    const std::string path = temp_path("q8.gguf");
    w.write(path);
    auto b = read_all(path);
    std::filesystem::remove(path);
    put_u64(b, find_bytes(b, "q\x01") + 1 + 4, 40);  // ne0 = 40
    EXPECT_NE(parse_error(b).find("not a multiple of 32"), std::string::npos) << parse_error(b);
  }
  // The block types need rows of whole blocks (256 values for the K-quants); the error
  // names the tensor, its type and the row length.
  for (const auto& [type, block_bytes, name] : {std::tuple{DType::kQ4_K, 144, "Q4_K"}, std::tuple{DType::kQ5_K, 176, "Q5_K"},
                                                std::tuple{DType::kQ6_K, 210, "Q6_K"}, std::tuple{DType::kQ4_0, 18, "Q4_0"}}) {
    Writer w;
    w.add_tensor_bytes("blk.0.ffn_down.weight", type, {dtype_block_values(type)},
                       std::vector<uint8_t>(static_cast<size_t>(block_bytes), 0));
    const std::string path = temp_path("rows.gguf");
    w.write(path);
    auto b = read_all(path);
    std::filesystem::remove(path);
    // ne0 = half a block: a row that ends inside a block.
    put_u64(b, find_bytes(b, "ffn_down.weight") + std::strlen("ffn_down.weight") + 4, static_cast<uint64_t>(dtype_block_values(type) / 2));
    const std::string want = std::string("tensor 'blk.0.ffn_down.weight' is ") + name + " but its row length " +
                             std::to_string(dtype_block_values(type) / 2) + " is not a multiple of " +
                             std::to_string(dtype_block_values(type));
    EXPECT_NE(parse_error(b).find(want), std::string::npos) << parse_error(b);
  }
}

TEST(Gguf, OpenNamesAMissingFile) {
  try {
    File::open("/nonexistent/model.gguf");
    FAIL();
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace sy::gguf
