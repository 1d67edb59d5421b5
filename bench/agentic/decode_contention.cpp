#include "bench/agentic/decode_contention.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "bench/loadgen/stats.h"

namespace sy::bench {

using nlohmann::json;

namespace {

struct Span {
  double from, to;  // seconds since the earliest turn's issue
  int replica;
  double ms_per_token;
};

// The mean number of replicas with a span covering t, over [s.from, s.to]: exact, from
// the replicas decoding at the middle of each piece between two span ends.
double mean_replicas_decoding(const Span& s, const std::vector<Span>& all, int replicas) {
  std::vector<double> cuts = {s.from, s.to};
  for (const Span& o : all)
    for (double t : {o.from, o.to})
      if (t > s.from && t < s.to) cuts.push_back(t);
  std::sort(cuts.begin(), cuts.end());
  std::vector<char> seen(static_cast<size_t>(replicas));
  double area = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const double mid = (cuts[i] + cuts[i + 1]) / 2;
    std::fill(seen.begin(), seen.end(), 0);
    for (const Span& o : all)
      if (o.from <= mid && mid < o.to) seen[static_cast<size_t>(o.replica)] = 1;
    area += (cuts[i + 1] - cuts[i]) * static_cast<double>(std::count(seen.begin(), seen.end(), 1));
  }
  return area / (s.to - s.from);
}

}  // namespace

json decode_contention(const std::vector<TurnResult>& turns) {
  std::map<std::string, int> index;
  std::vector<Span> spans;
  std::optional<Clock::time_point> zero;
  for (const TurnResult& t : turns)
    if (!zero || t.record.issued < *zero) zero = t.record.issued;
  for (const TurnResult& t : turns) {
    const RequestRecord& r = t.record;
    const double tok_s = r.decode_tok_s();
    if (!r.ok() || r.replica.empty() || !std::isfinite(tok_s)) continue;
    const int replica = index.emplace(r.replica, static_cast<int>(index.size())).first->second;
    auto at = [&](Clock::time_point p) { return std::chrono::duration<double>(p - *zero).count(); };
    spans.push_back({at(r.arrivals.front().at), at(r.arrivals.back().at), replica, 1e3 / tok_s});
  }
  std::map<long, std::vector<double>> by_count;
  double sum = 0;
  for (const Span& s : spans) {
    const double n = mean_replicas_decoding(s, spans, static_cast<int>(index.size()));
    sum += n;
    by_count[std::lround(n)].push_back(s.ms_per_token);
  }
  json rows = json::array();
  for (const auto& [n, ms] : by_count)
    rows.push_back({{"replicas", n}, {"turns", ms.size()}, {"ms_per_token_p50", percentile(ms, 50)}});
  return {{"turns", spans.size()},
          {"mean_replicas_decoding", spans.empty() ? json(nullptr) : json(sum / static_cast<double>(spans.size()))},
          {"by_replicas_decoding", rows}};
}

}  // namespace sy::bench
