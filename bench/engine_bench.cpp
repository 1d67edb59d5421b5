// switchyard-engine-bench: prefill and decode throughput of the engine on one backend.
// Prompts are real text cut to the requested token count; every sequence must come back
// with exactly the requested number of tokens that decode to valid UTF-8 text before
// any rate is printed. Each arm is repeated; every repeat is reported, then the median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "common/utf8.h"
#include "worker/backend/backend.h"
#include "common/cli/args.h"
#include "worker/engine/generator.h"

namespace {

const char kUsage[] =
    "usage: switchyard-engine-bench --model M [--device cpu] [--prompt-tokens 512] [--decode-tokens 64]\n"
    "                              [--batch 1,4] [--repeat 3] [--json]\n";

const char kText[] =
    "The history of the railway switchyard is a history of sorting. Trains arrive with cars bound for many "
    "places, and the yard must break them apart and build new trains, each car rolling over the hump and "
    "down into the track that leads to its next destination. Engineers measured everything: how long a car "
    "took to roll, how many cars a track could hold, how quickly a crew could couple them again. ";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sy;
  try {
    cli::Args a(std::vector<std::string>(argv + 1, argv + argc),
                {"model", "device", "prompt-tokens", "decode-tokens", "batch", "repeat"}, {"json"});
    const int32_t prompt_tokens = static_cast<int32_t>(a.get_int("prompt-tokens", 512));
    const int32_t decode_tokens = static_cast<int32_t>(a.get_int("decode-tokens", 64));
    const int repeat = static_cast<int>(a.get_int("repeat", 3));
    const std::vector<int32_t> batches = cli::parse_id_list(a.get_or("batch", "1"));
    if (prompt_tokens < 1 || decode_tokens < 2 || repeat < 1) throw cli::UsageError("need prompt-tokens >= 1, decode-tokens >= 2, repeat >= 1");

    auto src = ModelSource::open(a.get("model"));
    auto tok = Tokenizer::from_model(*src);
    const ModelConfig config = ModelConfig::from_source(*src);
    const int32_t max_batch = *std::max_element(batches.begin(), batches.end());
    BackendOptions opt;
    opt.num_kv_blocks = max_batch * blocks_for(prompt_tokens + decode_tokens, opt.block_size);
    // Every batch size runs as the server would: decode steps from CUDA graphs (captured
    // up to max_num_seqs), prefill of all prompts in one step.
    opt.max_num_seqs = max_batch;
    opt.max_step_tokens = max_batch * prompt_tokens;
    const auto t_load = std::chrono::steady_clock::now();
    auto backend = create_backend(a.get_or("device", "cpu"), *src, config, opt);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

    // A real-text prompt of exactly prompt_tokens tokens; sequence i differs in its first
    // token so that no two prompts are identical.
    std::string text;
    std::vector<int32_t> ids;
    while (static_cast<int32_t>(ids.size()) < prompt_tokens) {
      text += kText;
      ids = tok->encode(text, true);
    }
    ids.resize(static_cast<size_t>(prompt_tokens));

    std::fprintf(stderr, "model %s (%s), backend %s, loaded in %.1f s\n", a.get("model").c_str(), config.describe().c_str(),
                 backend->name().c_str(), load_s);
    nlohmann::json report = nlohmann::json::array();
    Generator gen(*backend);
    for (int32_t batch : batches) {
      std::vector<GenerateRequest> reqs(static_cast<size_t>(batch));
      for (int32_t i = 0; i < batch; ++i) {
        reqs[static_cast<size_t>(i)].prompt = ids;
        reqs[static_cast<size_t>(i)].prompt.back() = ids[static_cast<size_t>(i) % ids.size()];
        reqs[static_cast<size_t>(i)].max_tokens = decode_tokens;  // no stop ids: always the full length
      }
      std::vector<double> prefill_rates, decode_rates;
      for (int r = 0; r < repeat; ++r) {
        const auto results = gen.generate(reqs);
        for (const auto& res : results) {
          if (static_cast<int32_t>(res.tokens.size()) != decode_tokens) throw std::runtime_error("a sequence returned the wrong number of tokens");
          const std::string out = tok->decode(res.tokens);
          if (out.empty() || !sy::is_valid_utf8(out)) throw std::runtime_error("a sequence decoded to empty or invalid text");
        }
        const auto& t = gen.last_timing();
        prefill_rates.push_back(static_cast<double>(t.prefill_tokens) / t.prefill_s);
        decode_rates.push_back(static_cast<double>(t.decode_tokens) / t.decode_s);
        std::fprintf(stderr, "  batch %d repeat %d: prefill %lld tok in %.3f s (%.1f tok/s), decode %lld tok in %.3f s (%.2f tok/s)\n", batch,
                     r + 1, static_cast<long long>(t.prefill_tokens), t.prefill_s, prefill_rates.back(),
                     static_cast<long long>(t.decode_tokens), t.decode_s, decode_rates.back());
      }
      report.push_back({{"batch", batch},
                        {"prompt_tokens", prompt_tokens},
                        {"decode_tokens", decode_tokens},
                        {"prefill_tok_s_median", median(prefill_rates)},
                        {"decode_tok_s_median", median(decode_rates)},
                        {"prefill_tok_s", prefill_rates},
                        {"decode_tok_s", decode_rates}});
    }
    if (a.has("json")) {
      std::puts(report.dump(2).c_str());
    } else {
      std::printf("%-6s %-8s %-8s %-18s %-18s\n", "batch", "prompt", "decode", "prefill tok/s", "decode tok/s");
      for (const auto& row : report)
        std::printf("%-6d %-8d %-8d %-18.1f %-18.2f\n", row["batch"].get<int>(), prompt_tokens, decode_tokens,
                    row["prefill_tok_s_median"].get<double>(), row["decode_tok_s_median"].get<double>());
    }
    return 0;
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
