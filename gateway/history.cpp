#include "gateway/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace sy::gateway {
namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The increase of a cumulative counter; a counter that went backwards began again.
int64_t delta(int64_t now, int64_t before) { return now >= before ? now - before : now; }

}  // namespace

History::History(std::shared_ptr<const policy::Clock> clock, size_t points) : clock_(std::move(clock)), ring_(std::max<size_t>(1, points)) {}

void History::record(const HistoryInputs& in) {
  const double now = clock_->now_s();
  HistoryPoint p;
  p.t = now;
  p.prefix_hit_rate = std::numeric_limits<double>::quiet_NaN();
  if (have_last_ && now > last_t_) {
    p.tok_s = static_cast<double>(delta(in.output_tokens, last_.output_tokens)) / (now - last_t_);
    const int64_t prompt = delta(in.prompt_tokens, last_.prompt_tokens);
    if (prompt > 0) p.prefix_hit_rate = std::min(1.0, static_cast<double>(delta(in.cached_tokens, last_.cached_tokens)) / static_cast<double>(prompt));
  }
  p.ttft_p50 = in.ttft_p50;
  p.ttft_p99 = in.ttft_p99;
  p.itl_p50 = in.itl_p50;
  p.itl_p99 = in.itl_p99;
  p.queue_interactive = in.queue_interactive;
  p.queue_standard = in.queue_standard;
  p.queue_batch = in.queue_batch;
  p.in_flight = in.in_flight;
  p.gpu_power = in.gpu_power;
  ring_[head_] = std::move(p);
  head_ = (head_ + 1) % ring_.size();
  count_ = std::min(count_ + 1, ring_.size());
  last_ = in;
  last_t_ = now;
  have_last_ = true;
  // Events older than the window have nothing left to mark.
  const double oldest = now - kIntervalS * static_cast<double>(ring_.size());
  std::erase_if(events_, [&](const HistoryEvent& e) { return e.t < oldest; });
}

void History::mark(std::string kind, std::string text) { events_.push_back({clock_->now_s(), std::move(kind), std::move(text)}); }

const HistoryPoint& History::point(size_t i) const { return ring_[(head_ + ring_.size() - count_ + i) % ring_.size()]; }

nlohmann::json History::json() const {
  const double now = clock_->now_s();
  nlohmann::json t = nlohmann::json::array(), tok_s = nlohmann::json::array(), hit = nlohmann::json::array(), power = nlohmann::json::array();
  nlohmann::json ttft50 = nlohmann::json::array(), ttft99 = nlohmann::json::array(), itl50 = nlohmann::json::array(), itl99 = nlohmann::json::array();
  nlohmann::json qi = nlohmann::json::array(), qs = nlohmann::json::array(), qb = nlohmann::json::array(), flight = nlohmann::json::array();
  std::set<std::string> uuids;
  for (size_t i = 0; i < count_; ++i)
    for (const auto& [uuid, w] : point(i).gpu_power) uuids.insert(uuid);
  nlohmann::json gpu_power = nlohmann::json::object();
  for (const std::string& u : uuids) gpu_power[u] = nlohmann::json::array();
  for (size_t i = 0; i < count_; ++i) {
    const HistoryPoint& p = point(i);
    t.push_back(p.t - now);
    tok_s.push_back(p.tok_s);
    hit.push_back(number_or_null(p.prefix_hit_rate));
    ttft50.push_back(p.ttft_p50);
    ttft99.push_back(p.ttft_p99);
    itl50.push_back(p.itl_p50);
    itl99.push_back(p.itl_p99);
    qi.push_back(p.queue_interactive);
    qs.push_back(p.queue_standard);
    qb.push_back(p.queue_batch);
    flight.push_back(p.in_flight);
    double sum = 0;
    for (const std::string& u : uuids) {
      auto it = std::find_if(p.gpu_power.begin(), p.gpu_power.end(), [&](const auto& g) { return g.first == u; });
      const double w = it == p.gpu_power.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
      gpu_power[u].push_back(number_or_null(w));
      if (std::isfinite(w)) sum += w;
    }
    power.push_back(sum);
  }
  nlohmann::json events = nlohmann::json::array();
  for (const HistoryEvent& e : events_) events.push_back({{"t", e.t - now}, {"kind", e.kind}, {"text", e.text}});
  return {{"interval_s", kIntervalS},
          {"window_s", kIntervalS * static_cast<double>(ring_.size())},
          {"t", t},
          {"tok_s", tok_s},
          {"ttft_p50", ttft50},
          {"ttft_p99", ttft99},
          {"itl_p50", itl50},
          {"itl_p99", itl99},
          {"queue_interactive", qi},
          {"queue_standard", qs},
          {"queue_batch", qb},
          {"in_flight", flight},
          {"prefix_hit_rate", hit},
          {"power_watts", power},
          {"gpu_power", gpu_power},
          {"events", events}};
}

}  // namespace sy::gateway
