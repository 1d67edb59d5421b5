// The make-model `tiny128` preset (head_dim 128, four query heads over two KV heads, the
// llama3-tiny fixture's tokenizer) written to the test's temp folder: the shape no fixture
// has (the wgmma prefill kernel's head_dim; KV heads tensor parallelism can split or
// replicate). Returns the file's path.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fixture_util.h"
#include "worker/model/make_model.h"

namespace sy::testing {

inline std::string make_tiny128_model(const std::string& file_name) {
  MakeModelOptions make;
  make.arch = "llama";
  make.preset = "tiny128";
  make.tokenizer_from = fixture_path("llama3-tiny-bf16.gguf");
  make.out = ::testing::TempDir() + file_name;
  make_model(make);
  return make.out;
}

}  // namespace sy::testing
