// Chat-template renders of tool conversations against Hugging Face transformers'
// apply_chat_template(..., tools=...), for the Qwen3 fixture (directory) and the Qwen2
// fixture (GGUF). The goldens in tests/golden/tool_templates/ are written by
// tests/tools/make_tool_template_goldens.py on a machine with transformers; each holds the
// OpenAI request body as a client sends it, which goes through Switchyard's own request
// parser (arguments strings, null content) and template engine here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/chat_template.h"
#include "common/model_source.h"
#include "common/protocol/openai.h"
#include "common/tokenizer/tokenizer.h"

namespace sy {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldens = fs::path(SY_SOURCE_DIR) / "tests/golden/tool_templates";

TEST(ToolTemplateGoldens, RenderAsTransformersDoes) {
  std::vector<fs::path> files;
  if (fs::is_directory(kGoldens))
    for (const auto& e : fs::directory_iterator(kGoldens))
      if (e.path().extension() == ".json") files.push_back(e.path());
  // Eight conversations for each of the two fixtures, checked in; regenerate them with
  // tests/tools/make_tool_template_goldens.py where transformers is installed.
  ASSERT_EQ(files.size(), 16u) << "goldens in " << kGoldens;
  std::sort(files.begin(), files.end());
  std::map<std::string, std::pair<std::unique_ptr<Tokenizer>, std::unique_ptr<ChatTemplate>>> models;
  std::set<std::string> seen_models;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    const auto golden = nlohmann::ordered_json::parse(in);
    const std::string model = golden.at("model");
    auto& m = models[model];
    if (!m.first) {
      auto src = ModelSource::open(std::string(SY_FIXTURES_DIR) + "/" + model);
      m.first = Tokenizer::from_model(*src);
      m.second = std::make_unique<ChatTemplate>(ChatTemplate::from_model(*src, m.first->bos_token(), m.first->eos_token()));
    }
    seen_models.insert(model);
    OpenAiRequest req;
    const auto e = parse_chat_request(golden.at("request").dump(), req);
    ASSERT_FALSE(e) << f << ": " << e->message;
    EXPECT_EQ(m.second->render(req.messages, req.add_generation_prompt, req.template_kwargs), golden.at("text").get<std::string>())
        << f;
  }
  EXPECT_TRUE(seen_models.count("qwen3-tiny")) << "the Qwen3 directory fixture has no goldens";
  EXPECT_TRUE(seen_models.count("qwen2-tiny-bf16.gguf")) << "the Qwen2 GGUF fixture has no goldens";
}

}  // namespace
}  // namespace sy
