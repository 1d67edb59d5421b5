// The cuda backend on make-model's block-quantized files (and Q8_0's) against the
// float32 computation on the same dequantized weights: the cpu backend on the file
// rewritten as F32 through the scalar dequantizers (the acceptance reference of issue
// 19; the cpu backend on the quantized file itself quantizes activations to int8). The
// small preset's rows fill K-quant blocks; Q4_K_M keeps Q and K in Q4_K and V in Q6_K
// in some layers (a fused weight of two formats) and the tied LM head in Q6_K. An
// 8-token prompt runs the quantized GEMV (8 rows), a 40-token one the expansion to bf16
// and the GEMM, and greedy decoding the one-row GEMV. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/gguf_writer.h"
#include "fixture_edit.h"
#include "fixture_util.h"
#include "kernels/cuda_test_util.h"
#include "offline_engine.h"
#include "quantized_files.h"
#include "worker/backend/backend.h"
#include "worker/backend/cuda_weights.h"
#include "worker/model/convert.h"
#include "worker/model/file_type.h"
#include "worker/model/make_model.h"

namespace sy {
namespace {

TEST(CudaQuantizedModel, MatchesTheCpuBackendOnTheSameFile) {
  SY_SKIP_WITHOUT_CUDA();
  const std::string tokenizer = testing::write_small_tokenizer(512, "cuda_quant_tokenizer.gguf");
  std::vector<int32_t> long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt.push_back((i * 193 + 11) % 500);
  const std::vector<std::vector<int32_t>> prompts = {{5, 17, 300, 41, 2, 99, 250, 7}, long_prompt};
  for (const FileType type : {FileType::kQ4_0, FileType::kQ4_K_M, FileType::kQ6_K, FileType::kQ8_0}) {
    SCOPED_TRACE(file_type_name(type));
    MakeModelOptions make;
    make.arch = "qwen3";
    make.preset = "small";
    make.tokenizer_from = tokenizer;
    make.type = type;
    make.out = testing::temp_path(std::string("cuda_quant_") + file_type_name(type) + ".gguf");
    make_model(make);
    auto src = ModelSource::open(make.out);
    const ModelConfig config = ModelConfig::from_source(*src);
    {
      // The weights stay quantized on the device: Q4_K_M's layer 0 (a "more bits" layer)
      // has QKV in two formats (Q and K Q4_K, V Q6_K) and down in Q6_K.
      const CudaModelWeights w = CudaModelWeights::upload(*src, config, RankShape::of(config, {}));
      for (const CudaLayerWeights& l : w.layers)
        for (const cuda::LinearWeight* lw : {&l.wqkv, &l.wo, &l.w_gate_up, &l.w_down})
          EXPECT_TRUE(lw->is_quant() || lw->is_q8_0()) << "a matrix went up as bf16";
      EXPECT_TRUE(w.lm_head.is_quant() || w.lm_head.is_q8_0());
      if (type == FileType::kQ4_K_M) {
        ASSERT_EQ(w.layers[0].wqkv.quant_parts, 2);
        EXPECT_EQ(w.layers[0].wqkv.quant[1].type, cuda::QuantType::kQ6_K);
        EXPECT_EQ(w.layers[0].w_down.quant[0].type, cuda::QuantType::kQ6_K);
      }
    }
    const std::string f32_path = testing::write_dequantized_copy(make.out);
    auto f32_src = ModelSource::open(f32_path);
    BackendOptions opt;
    opt.num_kv_blocks = 64;
    auto cpu = testing::offline_engine(create_backend("cpu", *f32_src, config, opt), *f32_src);
    auto cuda = testing::offline_engine(create_backend("cuda", *src, config, opt), *src);
    for (const auto& prompt : prompts) {
      const std::vector<float> want = cpu->prompt_logits(prompt, true);
      const std::vector<float> got = cuda->prompt_logits(prompt, true);
      const double e = testing::relative_error(got, want);
      std::printf("%s, %zu tokens: logits relative error against the dequantized f32 model %.4g\n",
                  file_type_name(type), prompt.size(), e);
      // bf16 activations into every product and the attention (2^-8 relative each), and
      // the weights rounded to bf16 on the device: 0.4-0.5 % for bf16 models
      // (cuda_head_dim_128_test); against the cpu backend on the quantized files, whose
      // int8 activations add their own 1-2 %, 0.9-1.9 % was measured on the H200
      // (2026-12-01), so 3 % bounds the device's share with room.
      EXPECT_LT(e, 0.03) << prompt.size() << " tokens";
      // Greedy tokens agree up to the first step whose top-2 margin in the reference is within
      // twice the largest logit difference of the prompt's last position (where either
      // token may win).
      const size_t vocab = static_cast<size_t>(config.vocab);
      double max_diff = 0;
      for (size_t i = want.size() - vocab; i < want.size(); ++i)
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
      const auto requests = testing::greedy_requests({prompt}, 6);
      const auto tokens = testing::run_tokens(*cuda, requests)[0];
      const auto ref = testing::run_tokens(*cpu, requests)[0];
      ASSERT_EQ(tokens.size(), ref.size());
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), ref.begin(), ref.end() - 1);
      const auto m = testing::top_two_margins(cpu->prompt_logits(seq, true), vocab);
      size_t agreed = 0;
      for (size_t i = 0; i < ref.size(); ++i, ++agreed) {
        if (m[prompt.size() - 1 + i] <= 2 * max_diff) break;
        EXPECT_EQ(tokens[i], ref[i]) << prompt.size() << " tokens, step " << i;
      }
      std::printf("  greedy: %zu of %zu steps had the margin to compare\n", agreed, ref.size());
    }
    cpu.reset();
    cuda.reset();
    std::filesystem::remove(make.out);
    std::filesystem::remove(f32_path);
  }
  std::filesystem::remove(tokenizer);
}

}  // namespace
}  // namespace sy
