#include "worker/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace sy {
namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// log-softmax of the k largest logits (or of `chosen`), in float64 for stability.
void fill_logprobs(std::span<const float> logits, int32_t chosen, int32_t k, SampleResult& r) {
  float mx = -INFINITY;
  for (float x : logits) mx = std::max(mx, x);
  double z = 0;
  for (float x : logits) z += std::exp(static_cast<double>(x) - mx);
  const double log_z = mx + std::log(z);
  r.logprob = static_cast<float>(logits[static_cast<size_t>(chosen)] - log_z);
  if (k <= 0) return;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto kk = std::min<size_t>(static_cast<size_t>(k), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(kk), ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t i = 0; i < kk; ++i) r.top_logprobs.emplace_back(ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - log_z));
}

}  // namespace

double sampling_uniform(uint64_t seed, int64_t index) {
  const uint64_t x = mix64(mix64(seed ^ 0x5851f42d4c957f2dull) + static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ull);
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

SampleResult sample_token(std::span<const float> logits, const SamplingParams& p, uint64_t seed, int64_t index,
                          std::span<const int32_t> context, std::span<const int32_t> output) {
  return sample_token_with_draw(logits, p, sampling_uniform(seed, index), context, output);
}

SampleResult sample_token_with_draw(std::span<const float> logits, const SamplingParams& p, double uniform,
                                    std::span<const int32_t> context, std::span<const int32_t> output) {
  const auto n = static_cast<int32_t>(logits.size());
  std::vector<float> x(logits.begin(), logits.end());

  if (p.repetition_penalty != 1.0f) {
    std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
    for (int32_t t : context)
      if (t >= 0 && t < n) seen[static_cast<size_t>(t)] = 1;
    for (int32_t t = 0; t < n; ++t)
      if (seen[static_cast<size_t>(t)]) {
        float& v = x[static_cast<size_t>(t)];
        v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
      }
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    std::unordered_map<int32_t, int32_t> counts;
    for (int32_t t : output)
      if (t >= 0 && t < n) ++counts[t];
    for (const auto& [t, c] : counts) x[static_cast<size_t>(t)] -= p.presence_penalty + p.frequency_penalty * static_cast<float>(c);
  }

  SampleResult r;
  if (p.greedy()) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
      if (x[static_cast<size_t>(i)] > x[static_cast<size_t>(best)]) best = i;
    r.id = best;
  } else {
    // Candidates in a deterministic order (logit descending, id ascending), so that the
    // same draw picks the same token on every machine.
    std::vector<int32_t> ids(static_cast<size_t>(n));
    std::iota(ids.begin(), ids.end(), 0);
    auto better = [&](int32_t a, int32_t b) {
      return x[static_cast<size_t>(a)] > x[static_cast<size_t>(b)] || (x[static_cast<size_t>(a)] == x[static_cast<size_t>(b)] && a < b);
    };
    size_t keep = ids.size();
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < keep) {
      keep = static_cast<size_t>(p.top_k);
      std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(keep), ids.end(), better);
    } else {
      std::sort(ids.begin(), ids.end(), better);
    }
    const double inv_t = 1.0 / p.temperature;
    const double mx = x[static_cast<size_t>(ids[0])] * inv_t;
    std::vector<double> prob(keep);
    double z = 0;
    for (size_t i = 0; i < keep; ++i) z += prob[i] = std::exp(x[static_cast<size_t>(ids[i])] * inv_t - mx);
    for (auto& q : prob) q /= z;
    if (p.top_p < 1.0f) {  // the smallest prefix whose mass reaches top_p (at least one)
      double mass = 0;
      size_t i = 0;
      while (i < keep) {
        mass += prob[i++];
        if (mass >= p.top_p) break;
      }
      keep = i;
    }
    if (p.min_p > 0.0f) {  // relative to the most likely token
      const double floor = prob[0] * p.min_p;
      size_t i = 1;
      while (i < keep && prob[i] >= floor) ++i;
      keep = i;
    }
    // Candidates of no probability (a logit of -inf: a token a grammar refuses) are never
    // drawn, also not by the fallback below that takes the last one when rounding leaves
    // the draw at the very top of the sum.
    while (keep > 1 && !(prob[keep - 1] > 0)) --keep;
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += prob[i];
    const double u = uniform * total;
    double acc = 0;
    r.id = ids[keep - 1];
    for (size_t i = 0; i < keep; ++i) {
      acc += prob[i];
      if (u < acc) {
        r.id = ids[i];
        break;
      }
    }
  }
  if (p.logprobs >= 0) fill_logprobs(logits, r.id, p.logprobs, r);
  return r;
}

SampleResult sample_token_among(std::span<const float> logits, std::span<const int32_t> allowed, const SamplingParams& p,
                                double uniform) {
  std::vector<float> compact(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) compact[i] = logits[static_cast<size_t>(allowed[i])];
  SampleResult r = sample_token_with_draw(compact, p, uniform, {}, {});
  r.id = allowed[static_cast<size_t>(r.id)];
  for (auto& [id, lp] : r.top_logprobs) id = allowed[static_cast<size_t>(id)];
  return r;
}

}  // namespace sy
