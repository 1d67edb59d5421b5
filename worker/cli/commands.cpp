#include "worker/cli/commands.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/chat_template.h"
#include "common/model_source.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/backend/backend.h"
#include "common/cli/args.h"
#include "common/cli/serve_flags.h"
#include "worker/engine/block_allocator.h"
#include "worker/engine/engine.h"
#include "worker/engine/offline.h"
#include "worker/model/make_model.h"

namespace sy::cli {
namespace {

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// A backend with just enough KV blocks for `tokens` tokens (or --kv-blocks).
std::shared_ptr<Backend> open_backend(const ModelSource& src, const Args& a, int64_t tokens) {
  const ModelConfig config = ModelConfig::from_source(src);
  BackendOptions opt;
  opt.block_size = static_cast<int32_t>(a.get_int("block-size", 16));
  if (opt.block_size <= 0 || opt.block_size > 1024) throw UsageError("--block-size must be in 1..1024");
  opt.num_kv_blocks = static_cast<int32_t>(a.get_int("kv-blocks", blocks_for(std::max<int64_t>(tokens, 1), opt.block_size)));
  if (opt.num_kv_blocks <= 0) throw UsageError("--kv-blocks must be positive");
  opt.deterministic = read_numerics(a);
  opt.tp = read_tp(a);
  opt.pcp = read_pcp(a);
  opt.cpu_kv_f16 = read_kv_f16(a);
  return create_backend(a.get_or("device", "cpu"), src, config, opt);
}

}  // namespace

int run_tokenize(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "text"}, {"add-special"});
  auto src = ModelSource::open(a.get("model"));
  auto tok = Tokenizer::from_model(*src);
  nlohmann::json out;
  out["ids"] = tok->encode(a.get("text"), a.has("add-special"));
  std::puts(dump(out).c_str());
  return 0;
}

namespace {

// The prompt text of a chat: the model's template over the messages in `path` (a JSON
// array, or an object with "messages"), with the generation prompt appended.
std::string render_chat(const ModelSource& src, const Tokenizer& tok, const std::string& path, bool no_thinking) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  nlohmann::json messages = nlohmann::json::parse(in, nullptr, false);
  if (messages.is_discarded()) throw std::runtime_error(path + ": invalid JSON");
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  const ChatTemplate tmpl = ChatTemplate::from_model(src, tok.bos_token(), tok.eos_token());
  nlohmann::json kwargs = nlohmann::json::object();
  if (no_thinking) kwargs["enable_thinking"] = false;
  return tmpl.render(messages, true, kwargs);
}

}  // namespace

int run_eval(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "prompt-ids", "logits-out", "device", "block-size", "kv-blocks", "numerics", "tp", "pcp", "kv-dtype"}, {"last-only"});
  const std::vector<int32_t> ids = parse_id_list(a.get("prompt-ids"));
  const std::string out_path = a.get("logits-out");
  auto src = ModelSource::open(a.get("model"));
  auto backend = open_backend(*src, a, static_cast<int64_t>(ids.size()));
  EngineOptions eo;
  eo.prefill_chunk = static_cast<int32_t>(std::max<size_t>(1, ids.size()));  // the whole prompt in one step
  Engine engine(backend, Tokenizer::from_model(*src), eo);
  const std::vector<float> logits = engine.prompt_logits(ids, !a.has("last-only"));
  std::ofstream out(out_path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) throw std::runtime_error(out_path + ": write failed");
  std::fprintf(stderr, "wrote %zu x %d float32 logits to %s\n", logits.size() / backend->config().vocab, backend->config().vocab, out_path.c_str());
  return 0;
}

int run_generate(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "prompt", "prompt-ids", "messages", "max-tokens", "temperature", "device", "block-size", "kv-blocks", "prefill-chunk", "numerics", "tp", "pcp", "kv-dtype"},
         {"json", "ignore-eos", "no-thinking"});
  if (a.has("prompt") + a.has("prompt-ids") + a.has("messages") != 1) throw UsageError("give exactly one of --prompt, --prompt-ids and --messages");
  const double temperature = a.get_double("temperature", 0.0);
  if (temperature != 0.0)
    throw UsageError("only --temperature 0 (greedy) is implemented by this command");
  const int64_t max_tokens = a.get_int("max-tokens", 16);
  if (max_tokens < 0 || max_tokens > 1'000'000) throw UsageError("--max-tokens must be in 0..1000000");
  auto src = ModelSource::open(a.get("model"));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  std::vector<int32_t> prompt;
  if (a.has("prompt-ids")) {
    prompt = parse_id_list(a.get("prompt-ids"));
  } else if (a.has("prompt")) {
    prompt = tok->encode(a.get("prompt"), true);
  } else {  // a rendered chat already holds the special tokens the template wants
    prompt = tok->encode(render_chat(*src, *tok, a.get("messages"), a.has("no-thinking")), false);
  }
  // The serving engine, run on this thread: one sequence, its prompt in chunks of
  // --prefill-chunk tokens (0: all at once), tokens sampled and stopped as `serve` does.
  const int64_t whole_prompt = std::max<int64_t>(1, static_cast<int64_t>(prompt.size()));
  const int64_t prefill_chunk = a.get_int("prefill-chunk", 0);
  EngineOptions eo;
  eo.max_num_seqs = 1;
  eo.prefill_chunk = static_cast<int32_t>(prefill_chunk > 0 ? std::min(prefill_chunk, whole_prompt) : whole_prompt);
  Engine engine(open_backend(*src, a, static_cast<int64_t>(prompt.size()) + max_tokens), tok, eo);
  EngineRequest req = greedy_request(prompt, static_cast<int32_t>(max_tokens));
  req.sampling.ignore_eos = a.has("ignore-eos");
  req.sampling.skip_special_tokens = false;  // the text of every generated token, as decode() gives it
  const Completion r = run_offline(engine, {std::move(req)})[0];
  if (r.finish.reason == FinishReason::kError) throw std::runtime_error(r.finish.error);
  if (a.has("json")) {
    nlohmann::json out;
    out["prompt_ids"] = prompt;
    out["token_ids"] = r.token_ids;
    out["text"] = r.text;
    out["finish_reason"] = finish_reason_name(r.finish.reason);
    std::puts(dump(out).c_str());
  } else {
    const std::string& text = r.text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

int run_make_model(const std::vector<std::string>& argv) {
  Args a(argv, {"arch", "preset", "tokenizer-from", "out", "type", "dtype", "seed"}, {});
  MakeModelOptions o;
  o.arch = a.get("arch");
  o.preset = a.get("preset");
  o.tokenizer_from = a.get("tokenizer-from");
  o.out = a.get("out");
  o.seed = static_cast<uint64_t>(a.get_int("seed", 1));
  // --dtype is the older spelling of --type.
  if (a.has("type") && a.has("dtype")) throw UsageError("give --type or --dtype, not both");
  const std::string dt = a.has("dtype") ? a.get("dtype") : a.get_or("type", "bf16");
  const auto type = parse_file_type(dt);
  if (!type) throw UsageError("--type must be bf16, f16, f32, q8_0, q4_0, q4_k_m or q6_k, not '" + dt + "'");
  o.type = *type;
  const int64_t params = make_model(o);
  std::fprintf(stderr, "wrote %s: %s preset %s, %.3f B parameters, %s\n", o.out.c_str(), o.arch.c_str(), o.preset.c_str(),
               static_cast<double>(params) / 1e9, file_type_name(o.type));
  return 0;
}

}  // namespace sy::cli
