// switchyard-engine-bench: prefill and decode throughput of the engine on one backend.
// The serving engine runs on this thread (offline): every prompt of a batch in its first
// step (the prefill), then one decode step per token; each step's wall time counts whole
// (plan, backend, sampling, detokenization). Prompts are real text cut to the requested
// token count; every sequence must come back
// with exactly the requested number of tokens that decode to valid UTF-8 text before
// any rate is printed. Each arm is repeated; every repeat is reported, then the median.
//
// --arms compares variants in one process, their repeats interleaved. Each arm is a
// '+'-joined list of BackendTuning choices (worker/backend/backend.h; bench/ is the only
// place that sets them): gemvN (cuda: bf16 products of up to N rows on the GEMV kernel;
// 0: cuBLASLt only), qgemmN (cuda: quantized products of 9..N rows on the quantized
// GEMM, N <= 64; qgemm0: expanded to bf16 for cuBLASLt past the GEMV), pwN (cuda: N
// warps per prefill attention CTA, 4 or 8), pdl / nopdl
// (cuda: programmatic dependent launch on or off), mmasync / wgmma (cuda: the prefill
// attention kernel; wgmma by default where available), host (fp32 logits copied to the
// host and the argmax taken there, EngineOptions::device_sampling off; default: on the
// device where the backend can), kv16 (cpu: the KV cache in IEEE half,
// BackendOptions::cpu_kv_f16), noamx (cpu, fast: prompts' block-type products by
// dequantized sgemm instead of AMX tiles, BackendTuning::cpu_amx), nopf (cpu: the SIMD
// kernels without software prefetch of the next weight rows, BackendTuning::cpu_prefetch), fast /
// det (BackendOptions::deterministic off / on; default: the backend's own, cuda fast, cpu
// det), detrowsN (det with the row count whose cuBLASLt choice becomes the fixed
// algorithm). Arms with the same backend settings share one backend.
// --profile adds, per batch and backend, where one decode step's time goes
// (profile_step, worker/backend/step_profile.h); --profile-prefill the same for the batch's prefill step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "kernels/cpu/linear.h"
#include "common/utf8.h"
#include "worker/backend/backend.h"
#include "worker/backend/step_profile.h"
#include "worker/engine/block_allocator.h"
#include "common/cli/args.h"
#include "worker/engine/engine.h"
#include "worker/engine/offline.h"

namespace {

const char kUsage[] =
    "usage: switchyard-engine-bench --model M [--device cpu] [--prompt-tokens 512] [--decode-tokens 64]\n"
    "                              [--batch 1,4] [--repeat 3] [--arms gemv0+oldkernels+host,gemv1,...]\n"
    "                              [--profile] [--profile-prefill] [--json]\n";

const char kText[] =
    "The history of the railway switchyard is a history of sorting. Trains arrive with cars bound for many "
    "places, and the yard must break them apart and build new trains, each car rolling over the hump and "
    "down into the track that leads to its next destination. Engineers measured everything: how long a car "
    "took to roll, how many cars a track could hold, how quickly a crew could couple them again. ";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// One decode step of `batch` sequences at context `ctx` (the last token of each at
// position ctx - 1), sequence i on blocks [i·nb, (i+1)·nb): the blocks the batch's run
// just filled.
sy::BatchPlan decode_plan(int32_t batch, int32_t ctx, int32_t block_size, const std::vector<int32_t>& ids) {
  sy::BatchPlan plan;
  const int32_t nb = sy::blocks_for(ctx, block_size);
  for (int32_t i = 0; i < batch; ++i) {
    std::vector<int32_t> blocks(static_cast<size_t>(nb));
    for (int32_t b = 0; b < nb; ++b) blocks[static_cast<size_t>(b)] = i * nb + b;
    plan.add_sequence({ids[static_cast<size_t>(i) % ids.size()]}, ctx - 1, blocks, block_size, sy::BatchPlan::Logits::kLast);
  }
  return plan;
}

// The prefill step of `batch` prompts of ids.size() tokens, sequence i on blocks
// [i·nb, (i+1)·nb), logits of each last row.
sy::BatchPlan prefill_plan(int32_t batch, int32_t block_size, const std::vector<int32_t>& ids) {
  sy::BatchPlan plan;
  const auto n = static_cast<int32_t>(ids.size());
  const int32_t nb = sy::blocks_for(n, block_size);
  for (int32_t i = 0; i < batch; ++i) {
    std::vector<int32_t> blocks(static_cast<size_t>(nb));
    for (int32_t b = 0; b < nb; ++b) blocks[static_cast<size_t>(b)] = i * nb + b;
    plan.add_sequence(ids, 0, blocks, block_size, sy::BatchPlan::Logits::kLast);
  }
  return plan;
}

nlohmann::json print_profile(const sy::StepProfile& p, int32_t batch, const std::string& arm, const char* kind) {
  std::fprintf(stderr,
               "profile %s batch %d, %s: ops back to back %.3f ms (host queued ahead: %s), graph replay %.3f ms, "
               "forward() %.3f ms (logits copy alone %.3f ms), forward_sample() argmax %.3f ms, top-p %.3f ms\n",
               kind, batch, arm.c_str(), p.ops_ms, p.queued_ahead ? "yes" : "NO", p.graph_ms, p.forward_ms, p.logits_copy_ms,
               p.greedy_ms, p.sampled_ms);
  std::fprintf(stderr, "  %-22s %6s %10s %7s %9s\n", "op", "calls", "ms/step", "share", "GB/s");
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : p.ops) {
    std::fprintf(stderr, "  %-22s %6d %10.4f %6.1f%% %9.0f\n", op.name.c_str(), op.calls, op.ms,
                 100.0 * op.ms / std::max(p.ops_ms, 1e-9), op.bytes > 0 ? op.bytes / (op.ms * 1e6) : 0.0);
    ops.push_back({{"op", op.name}, {"calls", op.calls}, {"ms", op.ms}, {"bytes", op.bytes}});
  }
  return {{"batch", batch},       {"arm", arm},           {"step", kind},
          {"ops", ops},           {"ops_ms", p.ops_ms},
          {"queued_ahead", p.queued_ahead}, {"graph_ms", p.graph_ms},
          {"forward_ms", p.forward_ms},     {"logits_copy_ms", p.logits_copy_ms},
          {"greedy_ms", p.greedy_ms},       {"sampled_ms", p.sampled_ms}};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sy;
  try {
    cli::Args a(std::vector<std::string>(argv + 1, argv + argc),
                {"model", "device", "prompt-tokens", "decode-tokens", "batch", "repeat", "arms"},
                {"json", "profile", "profile-prefill"});
    const int32_t prompt_tokens = static_cast<int32_t>(a.get_int("prompt-tokens", 512));
    const int32_t decode_tokens = static_cast<int32_t>(a.get_int("decode-tokens", 64));
    const int repeat = static_cast<int>(a.get_int("repeat", 3));
    const std::vector<int32_t> batches = cli::parse_id_list(a.get_or("batch", "1"));
    if (prompt_tokens < 1 || decode_tokens < 2 || repeat < 1) throw cli::UsageError("need prompt-tokens >= 1, decode-tokens >= 2, repeat >= 1");
    struct Arm {
      std::string label;
      int32_t gemv_rows = BackendTuning{}.gemv_max_rows;
      int32_t qgemm_rows = BackendTuning{}.quant_gemm_max_rows;
      int32_t prefill_warps = 0;
      bool pdl = BackendTuning{}.programmatic_launch;
      int32_t attention_kernel = BackendTuning{}.prefill_attention_kernel;
      bool device_sampling = true;
      std::optional<bool> deterministic;
      int32_t det_rows = BackendTuning{}.deterministic_gemm_rows;
      bool kv16 = false;
      bool amx = BackendTuning{}.cpu_amx;
      bool prefetch = BackendTuning{}.cpu_prefetch;
      size_t backend = 0;
    };
    std::vector<Arm> arms;
    for (const std::string& item : split_list(a.get_or("arms", "default"))) {
      Arm arm;
      arm.label = item;
      size_t start = 0;
      while (start <= item.size()) {
        const size_t plus = std::min(item.find('+', start), item.size());
        const std::string part = item.substr(start, plus - start);
        start = plus + 1;
        if (part == "host")
          arm.device_sampling = false;
        else if (part == "fast" || part == "det")
          arm.deterministic = part == "det";
        else if (part.rfind("detrows", 0) == 0 && part.size() > 7 && part.find_first_not_of("0123456789", 7) == std::string::npos)
          arm.det_rows = std::stoi(part.substr(7)), arm.deterministic = true;
        else if (part == "kv16")
          arm.kv16 = true;
        else if (part == "noamx")
          arm.amx = false;
        else if (part == "nopf")
          arm.prefetch = false;
        else if (part == "mmasync" || part == "wgmma")
          arm.attention_kernel = part == "wgmma" ? 1 : 0;
        else if (part == "pdl" || part == "nopdl")
          arm.pdl = part == "pdl";
        else if (part == "pw4" || part == "pw8")
          arm.prefill_warps = part[2] - '0';
        else if (part.rfind("gemv", 0) == 0 && part.size() > 4 && part.find_first_not_of("0123456789", 4) == std::string::npos)
          arm.gemv_rows = std::stoi(part.substr(4));
        else if (part.rfind("qgemm", 0) == 0 && part.size() > 5 && part.find_first_not_of("0123456789", 5) == std::string::npos)
          arm.qgemm_rows = std::stoi(part.substr(5));
        else if (part != "default")
          throw cli::UsageError("unknown arm part '" + part +
                                "' (fast, det, detrowsN, gemvN, qgemmN, pw4, pw8, pdl, nopdl, mmasync, wgmma, kv16, noamx, nopf, host, default)");
      }
      arms.push_back(arm);
    }
    auto src = ModelSource::open(a.get("model"));
    std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
    const ModelConfig config = ModelConfig::from_source(*src);
    const int32_t max_batch = *std::max_element(batches.begin(), batches.end());
    // One backend per distinct set of backend settings.
    std::vector<std::shared_ptr<Backend>> backends;
    std::vector<std::string> backend_labels;
    for (Arm& arm : arms) {
      const std::string key = "gemv" + std::to_string(arm.gemv_rows) +
                              (arm.qgemm_rows != BackendTuning{}.quant_gemm_max_rows ? "+qgemm" + std::to_string(arm.qgemm_rows) : "") +
                              (arm.prefill_warps ? "+pw" + std::to_string(arm.prefill_warps) : "") +
                              (arm.pdl ? "" : "+nopdl") +
                              (arm.attention_kernel != BackendTuning{}.prefill_attention_kernel
                                   ? (arm.attention_kernel ? "+wgmma" : "+mmasync")
                                   : "") +
                              (!arm.deterministic ? "" : *arm.deterministic ? "+det" + std::to_string(arm.det_rows) : "+fast") +
                              (arm.kv16 ? "+kv16" : "") + (arm.amx ? "" : "+noamx") + (arm.prefetch ? "" : "+nopf");
      const auto found = std::find(backend_labels.begin(), backend_labels.end(), key);
      arm.backend = static_cast<size_t>(found - backend_labels.begin());
      if (found != backend_labels.end()) continue;
      BackendOptions opt;
      opt.num_kv_blocks = max_batch * blocks_for(prompt_tokens + decode_tokens, opt.block_size);
      // Every batch size runs as the server would: decode steps from CUDA graphs
      // (captured up to max_num_seqs), prefill of all prompts in one step.
      opt.max_num_seqs = max_batch;
      opt.max_step_tokens = max_batch * prompt_tokens;
      opt.tuning.gemv_max_rows = arm.gemv_rows;
      opt.tuning.quant_gemm_max_rows = arm.qgemm_rows;
      opt.tuning.prefill_warps = arm.prefill_warps;
      opt.tuning.programmatic_launch = arm.pdl;
      opt.tuning.prefill_attention_kernel = arm.attention_kernel;
      opt.tuning.deterministic_gemm_rows = arm.det_rows;
      opt.deterministic = arm.deterministic;
      opt.cpu_kv_f16 = arm.kv16;
      opt.tuning.cpu_amx = arm.amx;
      opt.tuning.cpu_prefetch = arm.prefetch;
      const auto t_load = std::chrono::steady_clock::now();
      backends.push_back(create_backend(a.get_or("device", "cpu"), *src, config, opt));
      backend_labels.push_back(key);
      const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
      std::fprintf(stderr, "model %s (%s), backend %s [%s], loaded in %.1f s\n", a.get("model").c_str(),
                   config.describe().c_str(), backends.back()->name().c_str(), key.c_str(), load_s);
      if (backends.back()->name() == "cpu")
        std::fprintf(stderr, "cpu kernels: %s, AMX %s\n", cpu::simd_level_name(cpu::simd_level()), cpu::amx_usable() ? "yes" : "no");
    }

    // A real-text prompt of exactly prompt_tokens tokens; sequence i differs in its last
    // token so that no two prompts are identical.
    std::string text;
    std::vector<int32_t> ids;
    while (static_cast<int32_t>(ids.size()) < prompt_tokens) {
      text += kText;
      ids = tok->encode(text, true);
    }
    ids.resize(static_cast<size_t>(prompt_tokens));

    nlohmann::json report = nlohmann::json::array();
    nlohmann::json profiles = nlohmann::json::array();
    for (int32_t batch : batches) {
      std::vector<EngineRequest> reqs;
      for (int32_t i = 0; i < batch; ++i) {
        reqs.push_back(greedy_request(ids, decode_tokens));
        reqs.back().prompt_ids.back() = ids[static_cast<size_t>(i) % ids.size()];
        reqs.back().sampling.ignore_eos = true;  // always the full length
      }
      // The whole batch at once: its prompts in one step, then its decodes together. No
      // prefix cache: every repeat computes every prompt (and arms share backends).
      EngineOptions eo;
      eo.max_num_seqs = batch;
      eo.prefill_chunk = batch * prompt_tokens;
      eo.prefix_caching = false;
      std::vector<std::vector<double>> prefill_rates(arms.size()), decode_rates(arms.size());
      std::vector<std::vector<std::vector<int32_t>>> first_tokens(arms.size());
      for (int r = 0; r < repeat; ++r) {
        for (size_t k = 0; k < arms.size(); ++k) {
          eo.device_sampling = arms[k].device_sampling;
          Engine engine(backends[arms[k].backend], tok, eo);
          std::vector<double> steps;
          const auto results = run_offline(engine, reqs, &steps);
          for (const auto& res : results) {
            if (static_cast<int32_t>(res.token_ids.size()) != decode_tokens) throw std::runtime_error("a sequence returned the wrong number of tokens");
            const std::string out = tok->decode(res.token_ids);
            if (out.empty() || !sy::is_valid_utf8(out)) throw std::runtime_error("a sequence decoded to empty or invalid text");
          }
          // One prefill step that also chose every first token, then decode_tokens - 1 decode steps.
          if (static_cast<int32_t>(steps.size()) != decode_tokens) throw std::runtime_error("the batch did not run as one prefill step and its decode steps");
          if (r == 0) first_tokens[k] = {results[0].token_ids};
          const double prefill_s = steps[0];
          double decode_s = 0;
          for (size_t i = 1; i < steps.size(); ++i) decode_s += steps[i];
          const int64_t prefill_tokens = int64_t{batch} * prompt_tokens, decoded = int64_t{batch} * (decode_tokens - 1);
          prefill_rates[k].push_back(static_cast<double>(prefill_tokens) / prefill_s);
          decode_rates[k].push_back(static_cast<double>(decoded) / decode_s);
          std::fprintf(stderr, "  batch %d repeat %d [%s]: prefill %lld tok in %.3f s (%.1f tok/s), decode %lld tok in %.3f s (%.2f tok/s)\n",
                       batch, r + 1, arms[k].label.c_str(), static_cast<long long>(prefill_tokens), prefill_s,
                       prefill_rates[k].back(), static_cast<long long>(decoded), decode_s, decode_rates[k].back());
        }
      }
      // Host and device argmax on the same backend must agree token for token.
      for (size_t k = 1; k < arms.size(); ++k)
        if (arms[k].backend == arms[k - 1].backend && first_tokens[k] != first_tokens[k - 1])
          std::fprintf(stderr, "  batch %d: sequence 0 differs between [%s] and [%s]\n", batch, arms[k - 1].label.c_str(),
                       arms[k].label.c_str());
      for (size_t k = 0; k < arms.size(); ++k)
        report.push_back({{"batch", batch},
                          {"arm", arms[k].label},
                          {"gemv_rows", arms[k].gemv_rows},
                          {"sampling", arms[k].device_sampling ? "device" : "host"},
                          {"prompt_tokens", prompt_tokens},
                          {"decode_tokens", decode_tokens},
                          {"prefill_tok_s_median", median(prefill_rates[k])},
                          {"decode_tok_s_median", median(decode_rates[k])},
                          {"prefill_tok_s", prefill_rates[k]},
                          {"decode_tok_s", decode_rates[k]}});
      if (a.has("profile-prefill")) {
        const BatchPlan plan = prefill_plan(batch, backends[0]->block_size(), ids);
        for (size_t b = 0; b < backends.size(); ++b) {
          const StepProfile p = profile_step(*backends[b], plan, 5);
          if (p.ops.empty() && p.forward_ms == 0) continue;
          profiles.push_back(print_profile(p, batch, backend_labels[b], "prefill"));
        }
      }
      if (a.has("profile")) {
        const BatchPlan plan = decode_plan(batch, prompt_tokens + decode_tokens - 1, backends[0]->block_size(), ids);
        for (size_t b = 0; b < backends.size(); ++b) {
          const StepProfile p = profile_step(*backends[b], plan, 9);
          if (p.ops.empty() && p.forward_ms == 0) continue;
          profiles.push_back(print_profile(p, batch, backend_labels[b], "decode"));
        }
      }
    }
    if (a.has("json")) {
      std::puts(a.has("profile") || a.has("profile-prefill") ? nlohmann::json{{"runs", report}, {"profiles", profiles}}.dump(2).c_str()
                                 : report.dump(2).c_str());
    } else {
      std::printf("%-6s %-26s %-8s %-8s %-18s %-18s\n", "batch", "arm", "prompt", "decode", "prefill tok/s", "decode tok/s");
      for (const auto& row : report)
        std::printf("%-6d %-26s %-8d %-8d %-18.1f %-18.2f\n", row["batch"].get<int>(), row["arm"].get<std::string>().c_str(),
                    prompt_tokens, decode_tokens, row["prefill_tok_s_median"].get<double>(),
                    row["decode_tok_s_median"].get<double>());
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
