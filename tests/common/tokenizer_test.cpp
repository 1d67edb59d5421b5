#include "common/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/gguf.h"
#include "common/gguf_writer.h"
#include "common/model_source.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/incremental_decoder.h"
#include "common/tokenizer/patterns.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/utf8.h"

namespace sy {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

const std::string kFixtures = SY_FIXTURES_DIR;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Loading a 150k vocabulary is the slow part of these tests: load each source once.
const Tokenizer& load(const std::string& source) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[source];
  if (!slot) slot = Tokenizer::from_model(*ModelSource::open(kFixtures + "/" + source));
  return *slot;
}

const json& golden(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, json> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[name];
  if (slot.is_null()) slot = read_json(kFixtures + "/" + name + "-golden.json");
  return slot;
}

struct Case {
  std::string source;  // GGUF file or Hugging Face directory under the fixtures
  std::string golden;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.source;
}

class TokenizerGolden : public testing::TestWithParam<Case> {
 protected:
  const Tokenizer& tok() const { return load(GetParam().source); }
  const json& gold() const { return golden(GetParam().golden); }
};

TEST_P(TokenizerGolden, TokenizeMatchesHuggingFace) {
  const json& cases = gold()["tokenize"];
  ASSERT_GE(cases.size(), 30u);
  for (const json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(tok().encode(text, false), c["ids"].get<Ids>()) << "text: " << text;
  }
}

TEST_P(TokenizerGolden, DecodeMatchesHuggingFace) {
  for (const json& c : gold()["tokenize"]) {
    const Ids ids = c["ids"].get<Ids>();
    EXPECT_EQ(tok().decode(ids), c["decoded"].get<std::string>()) << "text: " << c["text"];
  }
}

TEST_P(TokenizerGolden, PromptsWithSpecialTokens) {
  for (const json& p : gold()["prompts"]) {
    EXPECT_EQ(tok().encode(p["text"].get<std::string>(), true), p["ids"].get<Ids>()) << p["text"];
  }
}

TEST_P(TokenizerGolden, RenderedChatTemplates) {
  // Chat templates write the special tokens (Llama 3's BOS too) into the text.
  for (const json& c : gold()["chat"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tok().encode(text, false), c["ids"].get<Ids>()) << text;
    EXPECT_EQ(tok().decode(c["ids"].get<Ids>()), text);
  }
}

TEST_P(TokenizerGolden, IncrementalDecodeConcatenatesToDecode) {
  for (const json& c : gold()["tokenize"]) {
    const Ids ids = c["ids"].get<Ids>();
    IncrementalDecoder dec(tok());
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = dec.push(id);
      EXPECT_TRUE(sy::is_valid_utf8(piece)) << c["text"];
      streamed += piece;
    }
    streamed += dec.finish();
    EXPECT_EQ(streamed, tok().decode(ids)) << c["text"];
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerGolden,
                         testing::Values(Case{"qwen3-tiny-bf16.gguf", "qwen3-tiny"},
                                         Case{"qwen3-tiny", "qwen3-tiny"},
                                         Case{"qwen2-tiny-bf16.gguf", "qwen2-tiny"},
                                         Case{"llama3-tiny-bf16.gguf", "llama3-tiny"}),
                         [](const auto& info) {
                           std::string name = info.param.source;
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(TokenizerModel, Qwen3GgufAndHuggingFaceAgree) {
  const Tokenizer& g = load("qwen3-tiny-bf16.gguf");
  const Tokenizer& h = load("qwen3-tiny");
  EXPECT_EQ(g.vocab_size(), 151680);  // GGUF pads to the embedding size
  EXPECT_EQ(h.vocab_size(), 151669);  // 151643 BPE entries + 26 added tokens
  for (int32_t id : {0, 220, 9707, 151643, 151645, 151667, 151668}) {
    EXPECT_EQ(g.token_text(id), h.token_text(id)) << id;
    EXPECT_EQ(g.is_special(id), h.is_special(id)) << id;
  }
  EXPECT_EQ(g.eos_id(), h.eos_id());
  EXPECT_EQ(g.bos_id(), std::nullopt);
  EXPECT_EQ(h.bos_id(), std::nullopt);
  EXPECT_FALSE(g.add_bos());
  EXPECT_FALSE(h.add_bos());
  const std::string text = "<think>\nhmm</think>\n\n<tool_call>{\"x\": 1}</tool_call><|im_end|>";
  EXPECT_EQ(g.encode(text, true), h.encode(text, true));
}

TEST(TokenizerModel, QwenSpecialTokens) {
  for (const char* source : {"qwen3-tiny-bf16.gguf", "qwen3-tiny"}) {
    const Tokenizer& t = load(source);
    SCOPED_TRACE(source);
    EXPECT_EQ(t.eos_id(), 151645);
    EXPECT_EQ(t.eos_token(), "<|im_end|>");
    EXPECT_EQ(t.bos_token(), "");
    EXPECT_EQ(t.pad_id(), 151643);
    EXPECT_EQ(t.stop_ids(), (Ids{151645, 151643}));  // <|im_end|>, then <|endoftext|>
    EXPECT_TRUE(t.is_stop(151643));
    EXPECT_FALSE(t.is_stop(151644));
    EXPECT_TRUE(t.is_special(151644));
    EXPECT_FALSE(t.is_special(151667));  // <think> is an added token, not a special one
    EXPECT_FALSE(t.is_special(9707));
    EXPECT_EQ(t.find_token("<|im_start|>"), 151644);
    EXPECT_EQ(t.find_token("<think>"), 151667);
    EXPECT_EQ(t.find_token("Hello"), 9707);
    EXPECT_EQ(t.find_token("Ġworld"), 1879);
    EXPECT_EQ(t.find_token("no such token"), std::nullopt);
    EXPECT_EQ(t.token_text(1879), "Ġworld");
    EXPECT_EQ(t.token_text(-1), "");
    EXPECT_EQ(t.token_text(t.vocab_size()), "");
  }
}

TEST(TokenizerModel, Llama3SpecialTokens) {
  const Tokenizer& t = load("llama3-tiny-bf16.gguf");
  EXPECT_EQ(t.vocab_size(), 128256);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_EQ(t.bos_token(), "<|begin_of_text|>");
  EXPECT_EQ(t.eos_id(), 128009);
  EXPECT_EQ(t.eos_token(), "<|eot_id|>");
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.stop_ids(), (Ids{128009, 128001}));  // <|eot_id|>, <|end_of_text|>
  EXPECT_EQ(t.encode("", true), Ids{128000});
  EXPECT_EQ(t.encode("", false), Ids{});
  EXPECT_TRUE(t.is_special(128006));
  EXPECT_EQ(t.find_token("<|start_header_id|>"), 128006);
}

TEST(TokenizerModel, QwenGgufUsesTheTokenizerJsonRegex) {
  const json tj = read_json(kFixtures + "/qwen3-tiny/tokenizer.json");
  EXPECT_EQ(tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>(),
            tok::kQwen2Pattern);
}

TEST(TokenizerDecode, SkipSpecial) {
  const Tokenizer& t = load("qwen3-tiny-bf16.gguf");
  const Ids ids = t.encode("<|im_start|>user\nhi<|im_end|><think>", false);
  EXPECT_EQ(t.decode(ids, false), "<|im_start|>user\nhi<|im_end|><think>");
  EXPECT_EQ(t.decode(ids, true), "user\nhi<think>");  // <think> is not special
}

TEST(TokenizerDecode, InvalidIdsDecodeToNothing) {
  const Tokenizer& t = load("qwen3-tiny");
  const Ids ids = {9707, -5, 151675, 1 << 30, 1879};
  EXPECT_EQ(t.decode(ids), "Hello world");
}

TEST(TokenizerDecode, PartialCharacterBecomesReplacement) {
  const Tokenizer& t = load("llama3-tiny-bf16.gguf");
  // 9468 is the first two bytes of a four-byte emoji: one ill-formed subpart, one U+FFFD
  // (what HF's decode with errors="replace" prints).
  EXPECT_EQ(t.decode(Ids{9468}), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode(Ids{9468, 248, 222}), "\xF0\x9F\x9A\x80");  // 🚀
}

TEST(TokenizerIncremental, HoldsBackPartialCharacters) {
  const Tokenizer& t = load("llama3-tiny-bf16.gguf");
  IncrementalDecoder dec(t);
  EXPECT_EQ(dec.push(38623), "emoji");
  EXPECT_EQ(dec.push(9468), "");  // F0 9F: held back
  EXPECT_TRUE(dec.has_pending());
  EXPECT_EQ(dec.push(248), "");
  EXPECT_EQ(dec.push(222), "\xF0\x9F\x9A\x80");  // 🚀
  EXPECT_FALSE(dec.has_pending());
  EXPECT_EQ(dec.push(9468), "");
  EXPECT_EQ(dec.finish(), "\xEF\xBF\xBD");  // the stream ended inside a character
  EXPECT_EQ(dec.push(323), " and");         // reusable after finish()
}

TEST(TokenizerIncremental, BrokenSequenceIsReplacedWithoutWaiting) {
  const Tokenizer& t = load("llama3-tiny-bf16.gguf");
  IncrementalDecoder dec(t);
  EXPECT_EQ(dec.push(9468), "");
  // An ASCII token cannot continue F0 9F: the partial character is replaced at once.
  EXPECT_EQ(dec.push(323), "\xEF\xBF\xBD and");
  EXPECT_EQ(dec.finish(), "");
}

TEST(TokenizerIncremental, SkipSpecialAndBatches) {
  const Tokenizer& t = load("qwen3-tiny-bf16.gguf");
  const Ids ids = t.encode("<|im_start|>assistant\n😀 ok<|im_end|>", false);
  IncrementalDecoder dec(t, /*skip_special=*/true);
  std::string out = dec.push(std::span<const int32_t>(ids).first(3));
  out += dec.push(std::span<const int32_t>(ids).subspan(3));
  out += dec.finish();
  EXPECT_EQ(out, "assistant\n😀 ok");
  EXPECT_EQ(out, t.decode(ids, true));
}

TEST(TokenizerModel, EncodeIsThreadSafe) {
  const Tokenizer& t = load("qwen3-tiny-bf16.gguf");
  const json& cases = golden("qwen3-tiny")["tokenize"];
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        for (const json& c : cases) {
          if (t.encode(c["text"].get<std::string>(), false) != c["ids"].get<Ids>()) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(TokenizerInvalidUtf8, IsReplacedBeforeEncoding) {
  // Documented behavior: ill-formed input is repaired as Python's
  // bytes.decode("utf-8", "replace") would, then tokenized like that string.
  const Tokenizer& t = load("qwen3-tiny-bf16.gguf");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(t.encode("a\xFF"
                     "b",
                     false),
            t.encode("a" + fffd + "b", false));
  EXPECT_EQ(t.encode("x\xC3", false), t.encode("x" + fffd, false));  // truncated at end
  EXPECT_EQ(t.encode("\x80\x80 z", false), t.encode(fffd + fffd + " z", false));
  EXPECT_EQ(t.encode("\xE2\x82 z", false), t.encode(fffd + " z", false));  // one maximal subpart
  EXPECT_EQ(t.encode("\xED\xA0\x80", false), t.encode(fffd + fffd + fffd, false));  // surrogate
  EXPECT_EQ(t.encode("<|im_end|>\xC0", false), t.encode("<|im_end|>" + fffd, false));
  EXPECT_EQ(t.decode(t.encode("a\xFF"
                              "b",
                              false)),
            "a" + fffd + "b");
  // Arbitrary bytes never crash and always decode to valid UTF-8.
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise.push_back(static_cast<char>((i * 2654435761u) >> 13));
  for (const char* source : {"qwen3-tiny-bf16.gguf", "llama3-tiny-bf16.gguf"}) {
    const Ids ids = load(source).encode(noise, true);
    EXPECT_FALSE(ids.empty());
    EXPECT_TRUE(sy::is_valid_utf8(load(source).decode(ids)));
  }
}

TEST(TokenizerUtf8, LossyMatchesPython) {
  auto lossy = [](std::string_view s) {
    std::string out;
    sy::append_utf8_lossy(s, out, true);
    return out;
  };
  const std::string r = "\xEF\xBF\xBD";
  // Expected values from Python 3: b"...".decode("utf-8", "replace").
  EXPECT_EQ(lossy("\xF0\x80\x80"), r + r + r);
  EXPECT_EQ(lossy("\xF0\x9F\x98"), r);
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(lossy("a\xC2"), "a" + r);
  EXPECT_EQ(lossy("\xE0\xA0\x80"), "\xE0\xA0\x80");
  std::string partial;
  EXPECT_EQ(sy::append_utf8_lossy("ab\xF0\x9F", partial, false), 2u);
  EXPECT_EQ(partial, "ab");
}

TEST(TokenizerPreTokenizer, WhiteSpaceIsUnicodeWhiteSpace) {
  EXPECT_EQ(tok::onig_to_icu_pattern(R"(\s+(?!\S)|[^\s\p{L}]|\\s)"),
            R"(\p{White_Space}+(?!\P{White_Space})|[^\p{White_Space}\p{L}]|\\s)");
}

// A small byte-level BPE tokenizer.json: the 256 byte tokens (id = byte), then merges.
json tiny_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[std::string(tok::byte_level_char(static_cast<uint8_t>(b)))] = b;
  json merge_list = json::array();
  int next = 256;
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
    merge_list.push_back(a + " " + b);
  }
  return json{
      {"version", "1.0"},
      {"added_tokens", json::array({json{{"id", next},
                                         {"content", "<|s|>"},
                                         {"special", true},
                                         {"lstrip", false},
                                         {"rstrip", false},
                                         {"normalized", false},
                                         {"single_word", false}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({
             {{"type", "Split"},
              {"pattern", {{"Regex", R"(\S+|\s+)"}}},
              {"behavior", "Isolated"},
              {"invert", false}},
             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}},
         })}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"ignore_merges", false}}},
  };
}

class TokenizerJsonFile : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sy_tok_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Tokenizer> load_text(const std::string& text, const json& config = json()) {
    const std::string path = (dir_ / "tokenizer.json").string();
    std::ofstream(path) << text;
    return Tokenizer::from_tokenizer_json(path, config);
  }
  std::unique_ptr<Tokenizer> load_json(const json& j, const json& config = json()) {
    return load_text(j.dump(), config);
  }
  // The ModelFileError message, or "" when loading succeeded.
  std::string error_of(const json& j) {
    try {
      load_json(j);
    } catch (const ModelFileError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
};

TEST_F(TokenizerJsonFile, TinyModelMergesByRank) {
  json j = tiny_tokenizer({{"a", "b"}, {"b", "c"}, {"ab", "c"}});
  auto t = load_json(j);
  EXPECT_EQ(t->vocab_size(), 260);
  EXPECT_EQ(t->encode("abc", false), Ids{258});  // (a b) first, then (ab c)
  EXPECT_EQ(t->encode("bcab", false), (Ids{257, 256}));
  EXPECT_EQ(t->encode("ab ab", false), (Ids{256, ' ', 256}));  // ' ' is id 32
  EXPECT_EQ(t->encode("ab<|s|>c", false), (Ids{256, 259, 'c'}));
  EXPECT_EQ(t->decode(Ids{258, 259}), "abc<|s|>");
  EXPECT_EQ(t->decode(Ids{258, 259}, true), "abc");
}

TEST_F(TokenizerJsonFile, MergesAsPairs) {
  json j = tiny_tokenizer({{"a", "b"}});
  j["model"]["merges"] = json::array({json::array({"a", "b"})});
  EXPECT_EQ(load_json(j)->encode("ab", false), Ids{256});
}

TEST_F(TokenizerJsonFile, VerticalTabIsWhiteSpaceAsInOniguruma) {
  // With ICU's own \s, "a\vb" would stay one piece and merge.
  const std::string vt(tok::byte_level_char('\v'));
  auto t = load_json(tiny_tokenizer({{"a", vt}, {"a" + vt, "b"}}));
  EXPECT_EQ(t->encode("a\vb", false), (Ids{'a', '\v', 'b'}));
  EXPECT_EQ(t->encode("a\xC2\x85"
                      "b",
                      false),
            (Ids{'a', 0xC2, 0x85, 'b'}));  // U+0085 too
}

TEST_F(TokenizerJsonFile, ByteLevelRegexWithPrefixSpace) {
  json j = tiny_tokenizer({{"Ġ", "a"}});
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  auto t = load_json(j);
  EXPECT_EQ(t->encode("a a", false), (Ids{256, 256}));  // " a", " a"
}

TEST_F(TokenizerJsonFile, AddedTokenStripsAndTemplate) {
  json j = tiny_tokenizer({});
  j["added_tokens"][0]["lstrip"] = true;
  j["added_tokens"][0]["rstrip"] = true;
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array(
           {{{"type", "ByteLevel"}},
            {{"type", "TemplateProcessing"},
             {"single", json::array({{{"SpecialToken", {{"id", "<|s|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                     {{"SpecialToken", {{"id", "<|s|>"}, {"type_id", 0}}}}})},
             {"special_tokens",
              {{"<|s|>",
                {{"id", "<|s|>"},
                 {"ids", json::array({256})},
                 {"tokens", json::array({"<|s|>"})}}}}}}})}};
  auto t = load_json(j, json{{"bos_token", {{"content", "<|s|>"}}}, {"eos_token", "<|s|>"}});
  EXPECT_EQ(t->encode("x \n <|s|>  y", false), (Ids{'x', 256, 'y'}));
  EXPECT_EQ(t->encode("x", true), (Ids{256, 'x', 256}));
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(t->bos_token(), "<|s|>");
}

TEST_F(TokenizerJsonFile, RefusesWhatItCannotTokenizeLikeHuggingFace) {
  auto expect_error = [&](const json& j, const std::string& needle) {
    const std::string message = error_of(j);
    EXPECT_NE(message.find(needle), std::string::npos) << "message: '" << message << "'";
  };
  json j = tiny_tokenizer({});
  j["normalizer"] = {{"type", "NFKC"}};
  expect_error(j, "NFKC");
  j = tiny_tokenizer({});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Lowercase"}}})}};
  expect_error(j, "Lowercase");
  j = tiny_tokenizer({});
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_error(j, "Metaspace");
  j = tiny_tokenizer({});
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  expect_error(j, "Removed");
  j = tiny_tokenizer({});
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_error(j, "(unclosed");
  j = tiny_tokenizer({});
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j, "WordPiece");
  j = tiny_tokenizer({});
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_error(j, "RobertaProcessing");
  j = tiny_tokenizer({});
  j["model"]["type"] = "Unigram";
  expect_error(j, "Unigram");
  j = tiny_tokenizer({});
  j["model"]["merges"] = json::array({"a zz"});
  expect_error(j, "'zz'");
  j = tiny_tokenizer({});
  j["model"]["merges"] = json::array({"abc"});
  expect_error(j, "merges[0]");
  j = tiny_tokenizer({});
  j["model"]["merges"] = json::array({json::array({"a"})});
  expect_error(j, "merges[0]");
  j = tiny_tokenizer({});
  j["model"]["vocab"]["zz"] = 99999;
  expect_error(j, "99999");
  j = tiny_tokenizer({});
  j["model"]["vocab"]["zz"] = "seven";
  expect_error(j, "zz");
  j = tiny_tokenizer({});
  j["model"]["vocab"]["zz"] = 5;
  expect_error(j, "id 5");
  j = tiny_tokenizer({});
  j["model"].erase("merges");
  expect_error(j, "model.merges");
  j = tiny_tokenizer({});
  j.erase("model");
  expect_error(j, "model");
  j = tiny_tokenizer({});
  j["added_tokens"][0]["id"] = -3;
  expect_error(j, "-3");

  EXPECT_THROW(load_text("{\"model\": "), ModelFileError);
  EXPECT_THROW(load_text("[1, 2]"), ModelFileError);
  EXPECT_THROW(load_json(tiny_tokenizer({}), json{{"bos_token", "<nope>"}}), ModelFileError);
  EXPECT_THROW(Tokenizer::from_tokenizer_json((dir_ / "missing.json").string(), json()),
               ModelFileError);
}

TEST_F(TokenizerJsonFile, HuggingFaceDirectoryWithGenerationConfig) {
  json j = tiny_tokenizer({{"a", "b"}});
  std::ofstream(dir_ / "tokenizer.json") << j.dump();
  std::ofstream(dir_ / "tokenizer_config.json") << json{{"eos_token", "<|s|>"}}.dump();
  std::ofstream(dir_ / "config.json") << "{}";
  std::ofstream(dir_ / "generation_config.json") << json{{"eos_token_id", {257, 10}}}.dump();
  auto t = Tokenizer::from_model(*ModelSource::open(dir_.string()));
  EXPECT_EQ(t->eos_id(), 257);
  EXPECT_EQ(t->eos_token(), "<|s|>");
  EXPECT_EQ(t->stop_ids(), (Ids{257, 10}));
  EXPECT_EQ(t->bos_id(), std::nullopt);
  EXPECT_EQ(t->encode("ab", true), Ids{256});

  std::ofstream(dir_ / "generation_config.json") << json{{"eos_token_id", 4096}}.dump();
  EXPECT_THROW(Tokenizer::from_model(*ModelSource::open(dir_.string())), ModelFileError);
  std::filesystem::remove(dir_ / "tokenizer.json");
  EXPECT_THROW(Tokenizer::from_model(*ModelSource::open(dir_.string())), ModelFileError);
}

// GGUF metadata with a tiny byte-level vocabulary, for loader error tests.
class TokenizerGgufFile : public TokenizerJsonFile {
 protected:
  gguf::Writer tiny_writer() {
    gguf::Writer w;
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b)
      tokens.emplace_back(tok::byte_level_char(static_cast<uint8_t>(b)));
    tokens.push_back("ab");
    tokens.push_back("<|eot|>");
    std::vector<int64_t> types(tokens.size(), 1);
    types.back() = 3;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "qwen2");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.eos_token_id", 257);
    return w;
  }
  std::unique_ptr<Tokenizer> load_gguf(const gguf::Writer& w) {
    const std::string path = (dir_ / "t.gguf").string();
    w.write(path);
    return Tokenizer::from_gguf(*gguf::File::open(path));
  }
  std::string gguf_error_of(const gguf::Writer& w) {
    try {
      load_gguf(w);
    } catch (const ModelFileError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(TokenizerGgufFile, TinyVocabulary) {
  auto t = load_gguf(tiny_writer());
  EXPECT_EQ(t->encode("xab<|eot|>", false), (Ids{'x', 256, 257}));
  EXPECT_EQ(t->stop_ids(), Ids{257});
  EXPECT_FALSE(t->add_bos());
}

TEST_F(TokenizerGgufFile, RefusesBadMetadata) {
  auto expect_error = [&](const gguf::Writer& w, const std::string& needle) {
    const std::string message = gguf_error_of(w);
    EXPECT_NE(message.find(needle), std::string::npos) << "message: '" << message << "'";
  };
  gguf::Writer w = tiny_writer();
  w.set_string("tokenizer.ggml.pre", "deepseek-llm");
  expect_error(w, "deepseek-llm");
  w = tiny_writer();
  w.set_string("tokenizer.ggml.model", "llama");
  expect_error(w, "'llama'");
  w = tiny_writer();
  w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1});
  expect_error(w, "token_type");
  w = tiny_writer();
  w.set_string_array("tokenizer.ggml.merges", {"a b", "x yz"});
  expect_error(w, "'yz'");
  w = tiny_writer();
  w.set_string_array("tokenizer.ggml.merges", {"ab"});
  expect_error(w, "merges[0]");
  w = tiny_writer();
  w.set_u32("tokenizer.ggml.bos_token_id", 9999);
  expect_error(w, "9999");
  w = tiny_writer();
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  expect_error(w, "bos_token_id");
  w = tiny_writer();
  w.set_string_array("tokenizer.ggml.tokens", {});
  expect_error(w, "tokens");
}

}  // namespace
}  // namespace sy
