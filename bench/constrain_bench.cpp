// switchyard-constrain-bench: the cost of constrained decoding per token on a real
// tokenizer. Builds the vocabulary index once (timed), then writes N tool calls by
// drawing uniformly among the allowed tokens at each step (a random-weight model does
// about that), timing allowed_tokens() + the -inf fill of a logits row + advance() per
// token. Reports the mean, p50, p99 and max per token, split by where the state was
// (inside a JSON string, elsewhere), and the trie nodes visited.
//
//   switchyard-constrain-bench --model M [--calls 200] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/cli/args.h"
#include "common/constrain/token_mask.h"
#include "common/model_source.h"
#include "common/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const char* kSpec = R"({"format": "hermes", "parallel": false, "reasoning": "none", "tools": [
  {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 24}, "days": {"type": "integer"},
    "unit": {"enum": ["celsius", "fahrenheit"]}, "hourly": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4},
    "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}},
    "required": ["city", "unit"]}},
  {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 64}}, "required": ["query"]}}]})";

struct Series {
  std::vector<double> us;
  std::vector<int64_t> nodes;
  void report(const char* what) {
    if (us.empty()) return std::printf("%-10s no tokens\n", what), void();
    std::vector<double> s = us;
    std::sort(s.begin(), s.end());
    double sum = 0;
    for (double x : s) sum += x;
    int64_t n = 0;
    for (int64_t x : nodes) n += x;
    std::printf("%-10s %7zu tokens  mean %8.1f us  p50 %8.1f  p99 %8.1f  max %8.1f  trie nodes/token %8.0f\n", what, s.size(),
                sum / static_cast<double>(s.size()), s[s.size() / 2], s[s.size() * 99 / 100], s.back(),
                static_cast<double>(n) / static_cast<double>(s.size()));
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    sy::cli::Args a(std::vector<std::string>(argv + 1, argv + argc), {"model", "calls", "seed"}, {});
    const auto src = sy::ModelSource::open(a.get("model"));
    const auto tok = sy::Tokenizer::from_model(*src);
    auto t0 = Clock::now();
    const sy::constrain::VocabIndex vocab(*tok);
    const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::printf("vocabulary %d tokens: index built in %.0f ms (%zu trie nodes; %zu plain string tokens)\n", vocab.vocab_size(),
                build_ms, vocab.all().num_nodes(), vocab.string_plain().size());
    std::string error;
    const auto g = sy::constrain::ToolGrammar::compile(json::parse(kSpec), error);
    if (!g) return std::fprintf(stderr, "%s\n", error.c_str()), 1;
    sy::constrain::TokenMasker masker(vocab);
    std::mt19937_64 rng(static_cast<uint64_t>(a.get_int("seed", 1)));
    const int calls = static_cast<int>(a.get_int("calls", 200));
    std::vector<int32_t> allowed;
    std::vector<float> logits(static_cast<size_t>(vocab.vocab_size()), 0.5f), masked;
    Series in_string, other, all;
    int64_t tokens = 0;
    for (int c = 0; c < calls; ++c) {
      sy::constrain::GrammarState s = g->initial();
      for (int step = 0; step < 4000; ++step) {
        const bool str = g->in_plain_string(s);
        t0 = Clock::now();
        masker.allowed_tokens(*g, s, allowed);
        masked.assign(logits.size(), -INFINITY);
        for (int32_t id : allowed) masked[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
        const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        const bool stop = vocab.is_stop(id);
        if (!stop && !masker.advance(*g, s, id)) return std::fprintf(stderr, "token %d refused after being allowed\n", id), 1;
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        (str ? in_string : other).us.push_back(us);
        (str ? in_string : other).nodes.push_back(masker.last_nodes_visited());
        all.us.push_back(us);
        all.nodes.push_back(masker.last_nodes_visited());
        ++tokens;
        if (stop) break;
      }
    }
    std::printf("%d calls, %lld tokens\n", calls, static_cast<long long>(tokens));
    in_string.report("in string");
    other.report("elsewhere");
    all.report("all");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard-constrain-bench: %s\n", e.what());
    return 2;
  }
}
