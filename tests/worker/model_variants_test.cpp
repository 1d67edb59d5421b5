// Model variants the fixtures do not ship: an untied output matrix, and F32 / F16
// tensors. Each is derived from a fixture so the expected logits follow exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/half.h"
#include "fixture_edit.h"
#include "offline_engine.h"
#include "worker/backend/backend.h"

namespace sy {
namespace {

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& ids) {
  auto src = ModelSource::open(path);
  BackendOptions opt;
  opt.num_kv_blocks = 8;
  return testing::offline_engine(create_backend("cpu", *src, ModelConfig::from_source(*src), opt), *src)->prompt_logits(ids, true);
}

const std::vector<int32_t> kIds = {128000, 12522, 5304, 264, 892, 11, 1070};

// bf16 tensor bytes with every value doubled (exact in bf16).
std::vector<uint8_t> doubled(const TensorInfo& t) {
  std::vector<uint8_t> out(t.data, t.data + t.nbytes);
  auto* h = reinterpret_cast<uint16_t*>(out.data());
  for (size_t i = 0; i < t.nbytes / 2; ++i) h[i] = f32_to_bf16(bf16_to_f32(h[i]) * 2.0f);
  return out;
}

TEST(ModelVariants, UntiedOutputMatrixIsUsed) {
  const std::string fixture = "llama3-tiny-bf16.gguf";
  const auto base = logits_of(testing::fixture_path(fixture), kIds);
  const std::string path = testing::edited_fixture(fixture, "untied.gguf", testing::keep_kv, testing::keep_tensor,
                                                   [](const gguf::File& src, gguf::Writer& w) {
                                                     const TensorInfo* emb = src.find_tensor("token_embd.weight");
                                                     w.add_tensor_bytes("output.weight", emb->dtype, emb->shape, doubled(*emb));
                                                   });
  const auto untied = logits_of(path, kIds);
  std::filesystem::remove(path);
  ASSERT_EQ(base.size(), untied.size());
  for (size_t i = 0; i < base.size(); ++i) ASSERT_NEAR(untied[i], 2 * base[i], 1e-5f * std::fabs(base[i]) + 1e-6f) << i;
}

// Rewrites every bf16 tensor of the fixture as `to` (F32 exactly; F16 rounds).
std::string converted(const std::string& fixture, DType to, const std::string& name) {
  return testing::edited_fixture(fixture, name, testing::keep_kv, [to](const TensorInfo& t, gguf::Writer& w) {
    if (t.dtype != DType::kBF16) return false;
    const auto* h = reinterpret_cast<const uint16_t*>(t.data);
    const size_t n = t.nbytes / 2;
    std::vector<uint8_t> out(n * (to == DType::kF32 ? 4 : 2));
    for (size_t i = 0; i < n; ++i) {
      const float f = bf16_to_f32(h[i]);
      if (to == DType::kF32) {
        std::memcpy(&out[i * 4], &f, 4);
      } else {
        const uint16_t x = f32_to_f16(f);
        std::memcpy(&out[i * 2], &x, 2);
      }
    }
    w.add_tensor_bytes(t.name, to, t.shape, std::move(out));
    return true;
  });
}

TEST(ModelVariants, F32AndF16TensorsLoad) {
  const std::string fixture = "qwen2-tiny-bf16.gguf";
  const std::vector<int32_t> ids = {785, 6722, 315, 9625, 374};
  const auto base = logits_of(testing::fixture_path(fixture), ids);
  const std::string f32 = converted(fixture, DType::kF32, "f32.gguf");
  const auto got32 = logits_of(f32, ids);
  std::filesystem::remove(f32);
  ASSERT_EQ(got32, base);  // bf16 → f32 is exact, so is everything after it
  const std::string f16 = converted(fixture, DType::kF16, "f16.gguf");
  const auto got16 = logits_of(f16, ids);
  std::filesystem::remove(f16);
  ASSERT_EQ(got16.size(), base.size());
  float max_diff = 0;
  for (size_t i = 0; i < base.size(); ++i) max_diff = std::max(max_diff, std::fabs(got16[i] - base[i]));
  EXPECT_LT(max_diff, 5e-3f);  // f16 keeps 3 more mantissa bits than bf16: only rounding of tiny values differs
}

}  // namespace
}  // namespace sy
