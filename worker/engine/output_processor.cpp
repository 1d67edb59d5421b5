#include "worker/engine/output_processor.h"

#include <algorithm>

namespace sy {
namespace {

// Length of the longest suffix of `text` that is a proper prefix of one of `stops`.
size_t held_suffix(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& stop : stops) {
    const size_t max_len = std::min(text.size(), stop.size() - 1);
    for (size_t len = max_len; len > best; --len)
      if (text.compare(text.size() - len, len, stop, 0, len) == 0) {
        best = len;
        break;
      }
  }
  return best;
}

}  // namespace

void OutputProcessor::resume(Sequence& s) const {
  const std::string text = s.decoder.push(s.request.resume_ids);
  s.unsent = text.substr(text.size() - held_suffix(text, s.request.sampling.stop));
}

void OutputProcessor::observe_token_time(Sequence& s, WorkerStats& stats, LatencyObserver* latency) {
  const auto now = std::chrono::steady_clock::now();
  if (!s.last_token_at) {
    stats.prefix_cache_hit_tokens_total += std::max(0, s.cached_tokens);
    if (latency) latency->observe_ttft(std::chrono::duration<double>(now - s.arrived_at).count());
  } else if (latency) {
    latency->observe_itl(std::chrono::duration<double>(now - *s.last_token_at).count());
  }
  s.last_token_at = now;
}

bool OutputProcessor::add_token(Sequence& s, const SampleResult& r, WorkerStats& stats, LatencyObserver* latency) {
  const SamplingParams& p = s.request.sampling;
  ++stats.generation_tokens_total;
  observe_token_time(s, stats, latency);

  const bool eos = !p.ignore_eos && tokenizer_.is_stop(r.id);
  const bool stop_id = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), r.id) != p.stop_token_ids.end();
  if (eos || stop_id) {  // the stop token counts as generated but is not part of the text
    finish(s, FinishReason::kStop, stats, tokenizer_.token_text(r.id), 1);
    return true;
  }

  s.tokens.push_back(r.id);
  s.unsent += s.decoder.push(r.id);
  TokenEvent ev;
  ev.id = r.id;
  ev.logprob = r.logprob;
  ev.top_logprobs = r.top_logprobs;

  // The earliest stop string in the unsent text ends the output before it.
  size_t cut = std::string::npos;
  std::string matched;
  for (const std::string& stop : p.stop) {
    const size_t pos = s.unsent.find(stop);
    if (pos < cut) {
      cut = pos;
      matched = stop;
    }
  }
  if (cut != std::string::npos) {
    ev.text = s.unsent.substr(0, cut);
    s.unsent.clear();
    s.request.sink->on_tokens({std::move(ev)});
    finish(s, FinishReason::kStop, stats, matched);
    return true;
  }
  const size_t hold = held_suffix(s.unsent, p.stop);
  ev.text = s.unsent.substr(0, s.unsent.size() - hold);
  s.unsent.erase(0, s.unsent.size() - hold);
  s.request.sink->on_tokens({std::move(ev)});

  if (s.num_generated() >= p.max_tokens || static_cast<int32_t>(s.tokens.size()) >= max_context_) {
    finish(s, FinishReason::kLength, stats);
    return true;
  }
  return false;
}

void OutputProcessor::finish(Sequence& s, FinishReason reason, WorkerStats& stats, std::string matched_stop, int32_t extra_tokens) {
  FinishEvent f;
  f.reason = reason;
  if (matched_stop.empty() || reason != FinishReason::kStop || extra_tokens > 0) f.text = s.unsent + s.decoder.finish();
  s.unsent.clear();
  f.prompt_tokens = s.prompt_len;
  f.completion_tokens = s.num_generated() + extra_tokens;
  f.cached_tokens = std::max(0, s.cached_tokens);
  f.matched_stop = std::move(matched_stop);
  if (reason != FinishReason::kAbort) ++stats.requests_finished_total;
  s.request.sink->on_finish(std::move(f));
}

}  // namespace sy
