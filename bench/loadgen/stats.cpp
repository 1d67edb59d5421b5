#include "bench/loadgen/stats.h"

#include <algorithm>
#include <cmath>

#include "common/utf8.h"

namespace sy::bench {

namespace {

constexpr size_t kMaxErrorSamples = 5;

void drop_nan(std::vector<double>& v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  drop_nan(values);
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (double v : values)
    if (!std::isnan(v)) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : kNaN;
}

double median(std::vector<double> values) {
  return percentile(std::move(values), 50);
}

Distribution distribution(const std::vector<double>& values) {
  Distribution d;
  std::vector<double> v = values;
  drop_nan(v);
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) {
    d.p50 = d.p90 = d.p99 = d.mean = d.max = kNaN;
    return d;
  }
  d.p50 = percentile(v, 50);
  d.p90 = percentile(v, 90);
  d.p99 = percentile(v, 99);
  d.mean = mean(v);
  d.max = *std::max_element(v.begin(), v.end());
  return d;
}

LevelStats summarize(const std::vector<RequestRecord>& records,
                     const std::vector<RequestRecord>& warmup) {
  LevelStats s;
  s.requests = static_cast<int64_t>(records.size());
  s.warmup_requests = static_cast<int64_t>(warmup.size());
  for (const RequestRecord& r : warmup)
    if (!r.ok()) ++s.warmup_errors;

  std::vector<double> ttft, itl, e2e, decode, e2e_rate, prompt;
  Clock::time_point first_issue = Clock::time_point::max(), last_done = Clock::time_point::min();
  for (const RequestRecord& r : records) {
    // Wall time spans every measured request, failed ones too: they held the server.
    first_issue = std::min(first_issue, r.issued);
    last_done = std::max(last_done, r.done);
    if (r.reused_connection) ++s.reused_connections;
    if (!r.ok()) {
      ++s.errors;
      ++s.errors_by_kind[error_kind_name(r.error)];
      if (s.error_samples.size() < kMaxErrorSamples)
        s.error_samples.push_back("request " + std::to_string(r.index) + ": " +
                                  error_kind_name(r.error) + ": " + r.error_message);
      continue;
    }
    ++s.ok;
    ttft.push_back(r.ttft_s());
    e2e.push_back(r.e2e_s());
    const std::vector<double> gaps = r.itl_s();
    itl.insert(itl.end(), gaps.begin(), gaps.end());
    decode.push_back(r.decode_tok_s());
    e2e_rate.push_back(r.e2e_tok_s());
    s.output_tokens += r.completion_tokens;
    if (r.prompt_tokens >= 0) {
      prompt.push_back(static_cast<double>(r.prompt_tokens));
      s.prompt_tokens += r.prompt_tokens;
    }
    if (r.cached_tokens > 0) s.cached_tokens += r.cached_tokens;
    if (!r.exact_token_counts) s.unattributed_tokens += r.completion_tokens - r.content_events;
    if (r.text.find(kReplacementChar) != std::string::npos) ++s.texts_with_replacement_char;
  }
  s.ttft_s = distribution(ttft);
  s.itl_s = distribution(itl);
  s.e2e_s = distribution(e2e);
  s.user_decode_tok_s = median(decode);
  s.user_e2e_tok_s = median(e2e_rate);
  s.prompt_tokens_mean = mean(prompt);
  if (!records.empty()) s.wall_s = std::chrono::duration<double>(last_done - first_issue).count();
  s.aggregate_tok_s =
      s.wall_s > 0 && s.ok > 0 ? static_cast<double>(s.output_tokens) / s.wall_s : kNaN;
  s.ok_requests_per_s = s.wall_s > 0 ? static_cast<double>(s.ok) / s.wall_s : kNaN;
  return s;
}

double LevelStats::prefix_hit_rate() const {
  return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens) : kNaN;
}

}  // namespace sy::bench
