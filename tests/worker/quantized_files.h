// Model files for the quantized-weight tests: a tokenizer-only GGUF that gives make-model
// a small vocabulary, and a copy of a model with every tensor dequantized to F32 (the
// reference the acceptance names: the same weights computed in float32); and
// the top-two logit margins that decide where greedy tokens must agree.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/gguf.h"
#include "common/gguf_writer.h"
#include "fixture_util.h"
#include "worker/model/convert.h"

namespace sy::testing {

// A GGUF (in the test's temp folder, named `name`) holding only a byte-level BPE
// tokenizer of `n` plain tokens: a preset takes its vocabulary from it, so the
// embedding is [n, hidden] and the LM head small.
inline std::string write_small_tokenizer(int n, const std::string& name) {
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  std::vector<std::string> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back("t" + std::to_string(i));
  w.set_string_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_i32_array("tokenizer.ggml.token_type", std::vector<int64_t>(static_cast<size_t>(n), 1));
  w.set_string_array("tokenizer.ggml.merges", {});
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(n - 1));
  const std::string path = temp_path(name);
  w.write(path);
  return path;
}

// `path` with every tensor dequantized to F32 (metadata as it was), written beside it as
// <path>.f32.gguf; returns that path.
inline std::string write_dequantized_copy(const std::string& path) {
  auto f = gguf::File::open(path);
  gguf::Writer w;
  for (const auto& kv : f->metadata()) w.set(kv.key, kv.value);
  w.set_u32("general.file_type", 0);
  for (const TensorInfo& t : f->tensors()) {
    const int64_t row = t.shape.back();
    const size_t row_bytes = *dtype_bytes(t.dtype, row);
    w.add_tensor(t.name, DType::kF32, t.shape, [&t, row, row_bytes](int64_t r, uint8_t* out) {
      to_f32(t.dtype, t.data + static_cast<size_t>(r) * row_bytes, reinterpret_cast<float*>(out), row);
    });
  }
  const std::string out = path + ".f32.gguf";
  w.write(out);
  return out;
}

// The top-1 minus top-2 logit of each row of `logits` ([rows, vocab]).
inline std::vector<float> top_two_margins(const std::vector<float>& logits, size_t vocab) {
  std::vector<float> out;
  for (size_t r = 0; r + vocab <= logits.size(); r += vocab) {
    float a = -INFINITY, b = -INFINITY;
    for (size_t i = r; i < r + vocab; ++i) {
      if (logits[i] > a) {
        b = a;
        a = logits[i];
      } else if (logits[i] > b) {
        b = logits[i];
      }
    }
    out.push_back(a - b);
  }
  return out;
}

}  // namespace sy::testing
