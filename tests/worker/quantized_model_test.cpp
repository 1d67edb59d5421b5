// make-model --type: each file type's tensors are what worker/model/file_type.h says,
// hold the synthetic weights within the type's error bound, and the engine on the file
// gives the logits and greedy tokens of the same model written as float32 from the
// dequantized weights (the fp32 computation on the same weights: docs/NUMERICS.md,
// "Block-quantized weights"). A small vocabulary keeps the files and the test small.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>

#include "common/gguf_writer.h"
#include "fixture_edit.h"
#include "offline_engine.h"
#include "quantized_files.h"
#include "worker/backend/backend.h"
#include "worker/model/convert.h"
#include "worker/model/file_type.h"
#include "worker/model/make_model.h"

namespace sy {
namespace {

struct Preset {
  const char* arch;
  const char* name;
};

// The files the tests share, written once (make-model on the small preset takes a
// second or two a type) and removed when the test program ends.
class Files : public ::testing::Environment {
 public:
  static Files& get() { return *instance_; }
  const std::string& tokenizer() {
    if (tokenizer_.empty()) tokenizer_ = keep(testing::write_small_tokenizer(512, "tokenizer.gguf"));
    return tokenizer_;
  }
  // make-model's file of preset `p` stored as `type`.
  const std::string& model(const Preset& p, FileType type) {
    const std::string key = std::string(p.name) + "-" + file_type_name(type);
    auto it = made_.find(key);
    if (it != made_.end()) return it->second;
    MakeModelOptions o;
    o.arch = p.arch;
    o.preset = p.name;
    o.tokenizer_from = tokenizer();
    o.type = type;
    o.out = testing::temp_path(key + ".gguf");
    make_model(o);
    return made_[key] = keep(o.out);
  }
  const std::string& keep(std::string path) { return paths_.emplace_back(std::move(path)); }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }

 private:
  static Files* const instance_;
  std::string tokenizer_;
  std::map<std::string, std::string> made_;
  std::deque<std::string> paths_;
};
// Registered before main (gtest runs its TearDown after the last test).
Files* const Files::instance_ = static_cast<Files*>(::testing::AddGlobalTestEnvironment(new Files));

const std::string& model(const Preset& p, FileType type) { return Files::get().model(p, type); }

// The file with every tensor dequantized to F32 (metadata as it was), written once.
const std::string& dequantized_copy(const std::string& path) {
  static std::map<std::string, std::string> copies;
  if (auto it = copies.find(path); it != copies.end()) return it->second;
  const std::string out = testing::write_dequantized_copy(path);
  return copies[path] = Files::get().keep(out);
}

// An engine on the CPU backend with the model file it reads (weights may be views of
// the file's mapping, so the source lives as long as the engine).
struct Loaded {
  std::unique_ptr<ModelSource> src;
  std::unique_ptr<Engine> engine;
  Engine* operator->() const { return engine.get(); }
  Engine& operator*() const { return *engine; }
};

Loaded engine_on(const std::string& path, int tp = 1) {
  Loaded l;
  l.src = ModelSource::open(path);
  BackendOptions opt;
  opt.num_kv_blocks = 8;
  opt.tp = tp;
  l.engine = testing::offline_engine(create_backend("cpu", *l.src, ModelConfig::from_source(*l.src), opt), *l.src);
  return l;
}

const std::vector<int32_t> kPrompt = {5, 17, 300, 41, 2, 99, 250, 7};

struct LogitDiff {
  double max_abs = 0, max_ref = 0, rms = 0, rms_ref = 0;
};

LogitDiff compare(const std::vector<float>& got, const std::vector<float>& ref) {
  LogitDiff d;
  double se = 0, sr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = static_cast<double>(got[i]) - ref[i];
    d.max_abs = std::max(d.max_abs, std::fabs(e));
    d.max_ref = std::max(d.max_ref, std::fabs(static_cast<double>(ref[i])));
    se += e * e;
    sr += static_cast<double>(ref[i]) * ref[i];
  }
  d.rms = std::sqrt(se / static_cast<double>(ref.size()));
  d.rms_ref = std::sqrt(sr / static_cast<double>(ref.size()));
  return d;
}

// RMS of (a - b) over RMS of b, over every element of two tensors of the same shape.
double relative_rms(const TensorInfo& a, const TensorInfo& b) {
  const int64_t n = b.numel();
  std::vector<float> fa(static_cast<size_t>(n)), fb(static_cast<size_t>(n));
  to_f32(a.dtype, a.data, fa.data(), n);
  to_f32(b.dtype, b.data, fb.data(), n);
  double se = 0, sb = 0;
  for (size_t i = 0; i < fa.size(); ++i) {
    se += (static_cast<double>(fa[i]) - fb[i]) * (static_cast<double>(fa[i]) - fb[i]);
    sb += static_cast<double>(fb[i]) * fb[i];
  }
  return std::sqrt(se / sb);
}

// The RMS error bound of each stored type on Gaussian rows (tests/worker/quants_test.cpp
// checks the quantizers against the same bounds; Q8_0's step amax/127 gives ≈ 0.005, bf16
// rounds to 8 significant bits: ≈ 0.001).
double rms_bound(DType t) {
  switch (t) {
    case DType::kQ4_0: return 0.10;
    case DType::kQ4_K: return 0.09;
    case DType::kQ5_K: return 0.045;
    case DType::kQ6_K: return 0.022;
    case DType::kQ8_0: return 0.008;
    case DType::kBF16: return 0.003;
    default: return 0;
  }
}

class QuantizedModel : public ::testing::TestWithParam<Preset> {};

// Bounds on the engine's logits against the float32 model of the same dequantized
// weights, relative to the largest |logit| (max) and the RMS logit (rms): docs/NUMERICS.md,
// "Block-quantized weights". Float32 arithmetic on the same weights in another order
// stays within 1e-5; a Q8_0 product may quantize the activations to int8 per block of 32
// as llama.cpp does (each element off by up to 1/254 of its block's largest), which moves
// logits by about 1% (measured 0.85% / 1.9% of the largest, RMS 0.95% / 1.7%, tiny128 /
// small).
struct LogitBound {
  double max, rms;
};
// Q4_0, Q4_K and Q6_K products quantize the activations the same way
// (kernels/cpu/linear.h): every block type does.
LogitBound logit_bound(FileType t) {
  return t == FileType::kF32 || t == FileType::kF16 || t == FileType::kBF16 ? LogitBound{1e-5, 1e-5}
                                                                            : LogitBound{5e-2, 4e-2};
}

TEST_P(QuantizedModel, EveryTypeRunsAsItsDequantizedFloat32Model) {
  const Preset p = GetParam();
  auto exact = gguf::File::open(model(p, FileType::kF32));
  for (const FileType type : {FileType::kQ4_0, FileType::kQ4_K_M, FileType::kQ6_K, FileType::kQ8_0, FileType::kBF16}) {
    SCOPED_TRACE(std::string(p.name) + " " + file_type_name(type));
    const std::string& path = model(p, type);
    {
      // Every matrix holds the synthetic weights within its type's bound: the quantizers'
      // output landed in the file in the layout the reader dequantizes.
      auto f = gguf::File::open(path);
      EXPECT_EQ(f->get_int("general.file_type"), gguf_file_type(type));
      for (const TensorInfo& t : f->tensors()) {
        const TensorInfo* want = exact->find_tensor(t.name);
        ASSERT_NE(want, nullptr) << t.name;
        ASSERT_EQ(t.shape, want->shape) << t.name;
        if (t.dtype == DType::kF32) continue;
        EXPECT_LT(relative_rms(t, *want), rms_bound(t.dtype)) << t.name << " " << dtype_name(t.dtype);
      }
    }
    const auto ref_engine = engine_on(dequantized_copy(path)), engine = engine_on(path);
    const std::vector<float> ref = ref_engine->prompt_logits(kPrompt, true);
    const std::vector<float> got = engine->prompt_logits(kPrompt, true);
    ASSERT_EQ(got.size(), ref.size());
    for (float v : got) ASSERT_TRUE(std::isfinite(v));
    const LogitDiff d = compare(got, ref);
    std::printf("%s %s: logits vs dequantized f32 max |d| %.3g (max |ref| %.3g), rms %.3g (rms ref %.3g)\n", p.name,
                file_type_name(type), d.max_abs, d.max_ref, d.rms, d.rms_ref);
    const LogitBound bound = logit_bound(type);
    EXPECT_LE(d.max_abs, bound.max * d.max_ref);
    EXPECT_LE(d.rms, bound.rms * d.rms_ref);
    // Greedy tokens agree up to the first step whose top-2 margin in the reference is
    // within twice the logit bound (where either token may win).
    const auto requests = testing::greedy_requests({kPrompt}, 4);
    const auto tokens = testing::run_tokens(*engine, requests)[0];
    const auto want = testing::run_tokens(*ref_engine, requests)[0];
    ASSERT_EQ(tokens.size(), 4u);
    std::vector<int32_t> seq = kPrompt;
    seq.insert(seq.end(), want.begin(), want.end() - 1);
    const auto m = testing::top_two_margins(ref_engine->prompt_logits(seq, true), static_cast<size_t>(ref_engine->config().vocab));
    for (size_t i = 0; i < want.size(); ++i) {
      if (m[kPrompt.size() - 1 + i] <= 2 * bound.max * d.max_ref) break;
      EXPECT_EQ(tokens[i], want[i]) << "step " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, QuantizedModel, ::testing::Values(Preset{"llama", "tiny128"}, Preset{"qwen3", "small"}),
                         [](const auto& info) { return std::string(info.param.name); });

// Tensor-parallel ranks read slices of the quantized rows: at tp 2 the O and down
// projections' column slices (256 and 768 of 512 and 1536) start on Q4_K/Q6_K blocks and
// are converted block by block; at tp 4 (128 and 384) they cut blocks and whole rows are
// converted first. Both give the tp-1 logits of the dequantized float32 model within the
// file type's bound (its Q4_K products quantize the activations to int8, so
// tensor_parallel_test's 1e-4 for a changed sum order does not apply; a wrong slice is
// off by far more).
TEST(QuantizedModelSlices, TensorParallelRanksSliceQuantizedRows) {
  const std::string& path = model({"qwen3", "small"}, FileType::kQ4_K_M);
  const std::vector<float> ref = engine_on(dequantized_copy(path))->prompt_logits(kPrompt, true);
  for (const int tp : {2, 4}) {
    const LogitDiff d = compare(engine_on(path, tp)->prompt_logits(kPrompt, true), ref);
    std::printf("small q4_k_m tp %d: max |d| %.3g of max |ref| %.3g\n", tp, d.max_abs, d.max_ref);
    EXPECT_LE(d.max_abs, logit_bound(FileType::kQ4_K_M).max * d.max_ref) << "tp " << tp;
  }
}

// llama.cpp's Q4_K_M mixture on the small preset (8 layers, tied embeddings): the tied
// embedding is the LM head (Q6_K); attn_v and ffn_down in layers 0, 3, 6 and 7 Q6_K; the
// other matrices Q4_K; norms F32.
TEST(QuantizedModelTypes, Q4_K_MMixture) {
  const std::string& path = model({"qwen3", "small"}, FileType::kQ4_K_M);
  auto f = gguf::File::open(path);
  EXPECT_EQ(f->get_int("general.file_type"), 15);
  EXPECT_EQ(f->find_tensor("token_embd.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ(f->find_tensor("output_norm.weight")->dtype, DType::kF32);
  for (int l = 0; l < 8; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType more = l == 0 || l == 3 || l == 6 || l == 7 ? DType::kQ6_K : DType::kQ4_K;
    EXPECT_EQ(f->find_tensor(b + "attn_v.weight")->dtype, more) << l;
    EXPECT_EQ(f->find_tensor(b + "ffn_down.weight")->dtype, more) << l;
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(f->find_tensor(b + n)->dtype, DType::kQ4_K) << b << n;
    for (const char* n : {"attn_norm.weight", "ffn_norm.weight", "attn_q_norm.weight", "attn_k_norm.weight"})
      EXPECT_EQ(f->find_tensor(b + n)->dtype, DType::kF32) << b << n;
  }
}

TEST(QuantizedModelTypes, RulesAndFallbacks) {
  // llama.cpp's "more bits" layers: 32 layers -> 0-3, 28-31 and every third from 6.
  std::vector<int> more;
  for (int l = 0; l < 32; ++l)
    if (uses_more_bits(l, 32)) more.push_back(l);
  EXPECT_EQ(more, (std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  EXPECT_TRUE(uses_more_bits(1, 2));
  EXPECT_FALSE(uses_more_bits(0, 2));
  // Untied: output.weight is the LM head, token_embd the file's base type.
  EXPECT_EQ(tensor_type(FileType::kQ4_K_M, "output.weight", {1000, 512}, 8, false), DType::kQ6_K);
  EXPECT_EQ(tensor_type(FileType::kQ4_K_M, "token_embd.weight", {1000, 512}, 8, false), DType::kQ4_K);
  EXPECT_EQ(tensor_type(FileType::kQ4_0, "token_embd.weight", {1000, 512}, 8, true), DType::kQ6_K);
  EXPECT_EQ(tensor_type(FileType::kQ4_0, "blk.2.ffn_up.weight", {1536, 512}, 8, true), DType::kQ4_0);
  EXPECT_EQ(tensor_type(FileType::kQ8_0, "output.weight", {1000, 512}, 8, false), DType::kQ8_0);
  EXPECT_EQ(tensor_type(FileType::kQ6_K, "blk.2.attn_q.weight", {512, 512}, 8, false), DType::kQ6_K);
  // Rows off the block size: Q8_0 when a multiple of 32, else BF16. 1-D tensors stay F32.
  EXPECT_EQ(tensor_type(FileType::kQ4_K_M, "blk.0.attn_q.weight", {64, 64}, 2, true), DType::kQ8_0);
  EXPECT_EQ(tensor_type(FileType::kQ6_K, "output.weight", {64, 96}, 2, false), DType::kQ8_0);
  EXPECT_EQ(tensor_type(FileType::kQ4_0, "blk.0.attn_q.weight", {64, 48}, 2, true), DType::kBF16);
  EXPECT_EQ(tensor_type(FileType::kQ4_K_M, "blk.0.attn_q.bias", {64}, 2, true), DType::kF32);
  EXPECT_EQ(parse_file_type("q4_k_m"), FileType::kQ4_K_M);
  EXPECT_EQ(parse_file_type("q4_k"), std::nullopt);
}

}  // namespace
}  // namespace sy
