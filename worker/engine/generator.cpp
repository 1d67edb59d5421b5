#include "worker/engine/generator.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace sy {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Sequence {
  std::vector<int32_t> tokens;  // prompt, then generated
  int32_t prompt_len = 0;
  int32_t computed = 0;         // tokens whose KV is in the cache
  std::vector<int32_t> blocks;
  GenerateResult result;
  bool done = false;
};

}  // namespace

int32_t argmax(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

Generator::Generator(Backend& backend, int32_t prefill_chunk)
    : backend_(backend), blocks_(backend.num_kv_blocks()), prefill_chunk_(prefill_chunk) {}

std::vector<GenerateResult> Generator::generate(const std::vector<GenerateRequest>& requests) {
  const ModelConfig& c = backend_.config();
  const int32_t bs = backend_.block_size();
  timing_ = {};
  int64_t needed_blocks = 0;
  for (const auto& r : requests) {
    const int64_t total = static_cast<int64_t>(r.prompt.size()) + r.max_tokens;
    if (r.prompt.empty()) throw std::invalid_argument("empty prompt");
    if (r.max_tokens < 0) throw std::invalid_argument("max_tokens must be >= 0");
    if (total > c.max_context)
      throw std::invalid_argument("prompt (" + std::to_string(r.prompt.size()) + " tokens) + max_tokens (" + std::to_string(r.max_tokens) +
                                  ") exceeds the model's context of " + std::to_string(c.max_context));
    for (int32_t id : r.prompt)
      if (id < 0 || id >= c.vocab) throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
    needed_blocks += blocks_for(total, bs);
  }
  if (needed_blocks > blocks_.num_free())
    throw std::invalid_argument("the requests need " + std::to_string(needed_blocks) + " KV blocks; " + std::to_string(blocks_.num_free()) + " are free");

  std::vector<Sequence> seqs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    seqs[i].tokens = requests[i].prompt;
    seqs[i].prompt_len = static_cast<int32_t>(requests[i].prompt.size());
    if (requests[i].max_tokens == 0) seqs[i].done = true;
  }

  std::vector<float> logits;
  std::vector<int32_t> ids;
  const bool on_device = device_sampling_ && backend_.samples_on_device();
  for (;;) {
    // One step: every unfinished sequence runs its next prefill chunk or decode token.
    // Its time is the whole step: the plan, the backend and the token choice.
    const double t0 = now_s();
    BatchPlan plan;
    std::vector<size_t> in_plan;
    std::vector<bool> sample;
    int64_t step_prefill = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      Sequence& s = seqs[i];
      if (s.done) continue;
      const auto len = static_cast<int32_t>(s.tokens.size());
      int32_t n = len - s.computed;
      if (s.computed < s.prompt_len && prefill_chunk_ > 0) n = std::min(n, prefill_chunk_);
      const int32_t ctx = s.computed + n;
      const int32_t need = blocks_for(ctx, bs) - static_cast<int32_t>(s.blocks.size());
      if (need > 0 && !blocks_.allocate(need, s.blocks)) throw std::runtime_error("KV cache exhausted mid-generation");
      std::vector<int32_t> chunk(s.tokens.begin() + s.computed, s.tokens.begin() + ctx);
      const bool last_chunk = ctx == len;
      plan.add_sequence(chunk, s.computed, s.blocks, bs, last_chunk ? BatchPlan::Logits::kLast : BatchPlan::Logits::kNone);
      if (s.computed < s.prompt_len) step_prefill += n;
      s.computed = ctx;
      in_plan.push_back(i);
      sample.push_back(last_chunk);
    }
    if (in_plan.empty()) break;
    if (on_device)
      backend_.forward_sample(plan, std::vector<RowSampling>(plan.logits_rows.size()), ids);
    else
      backend_.forward(plan, logits);
    size_t row = 0;
    for (size_t k = 0; k < in_plan.size(); ++k) {
      if (!sample[k]) continue;
      Sequence& s = seqs[in_plan[k]];
      const GenerateRequest& req = requests[in_plan[k]];
      const int32_t next =
          on_device ? ids[row] : argmax(&logits[row * static_cast<size_t>(c.vocab)], c.vocab);
      ++row;
      if (step_prefill == 0) ++timing_.decode_tokens;
      if (std::find(req.stop_ids.begin(), req.stop_ids.end(), next) != req.stop_ids.end()) {
        s.result.finish = GenerateResult::Finish::kStop;
        s.done = true;
        continue;
      }
      s.result.tokens.push_back(next);
      s.tokens.push_back(next);
      if (static_cast<int32_t>(s.result.tokens.size()) >= req.max_tokens) s.done = true;
    }
    const double dt = now_s() - t0;
    if (step_prefill > 0) {
      timing_.prefill_s += dt;
      timing_.prefill_tokens += step_prefill;
    } else {
      timing_.decode_s += dt;
    }
  }
  std::vector<GenerateResult> out;
  for (auto& s : seqs) {
    blocks_.release(s.blocks);
    out.push_back(std::move(s.result));
  }
  return out;
}

std::vector<float> Generator::prompt_logits(const std::vector<int32_t>& prompt, bool all_positions) {
  const ModelConfig& c = backend_.config();
  if (prompt.empty()) throw std::invalid_argument("empty prompt");
  if (static_cast<int64_t>(prompt.size()) > c.max_context)
    throw std::invalid_argument("prompt of " + std::to_string(prompt.size()) + " tokens exceeds the model's context of " + std::to_string(c.max_context));
  for (int32_t id : prompt)
    if (id < 0 || id >= c.vocab) throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  const int32_t bs = backend_.block_size();
  std::vector<int32_t> blocks;
  if (!blocks_.allocate(blocks_for(static_cast<int64_t>(prompt.size()), bs), blocks))
    throw std::invalid_argument("the prompt does not fit the KV cache");
  BatchPlan plan;
  plan.add_sequence(prompt, 0, blocks, bs, all_positions ? BatchPlan::Logits::kAll : BatchPlan::Logits::kLast);
  std::vector<float> logits;
  backend_.forward(plan, logits);
  blocks_.release(blocks);
  return logits;
}

}  // namespace sy
