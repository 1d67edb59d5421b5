#include "common/metrics.h"

#include <charconv>
#include <cmath>

#include "common/check.h"

namespace sy {
namespace {

bool valid_metric_name(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(const std::string& s) {
  return valid_metric_name(s) && s.find(':') == std::string::npos && s.rfind("__", 0) != 0;
}

// HELP text escapes backslash and newline; label values also escape the double quote.
std::string escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out.push_back(c);
  }
  return out;
}

std::string label_text(const MetricLabels& labels, const char* extra_name = nullptr,
                       const std::string& extra_value = {}) {
  if (labels.empty() && !extra_name) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out.push_back(',');
    first = false;
    out += k + "=\"" + escape(v, true) + "\"";
  }
  if (extra_name) {
    if (!first) out.push_back(',');
    out += std::string(extra_name) + "=\"" + extra_value + "\"";
  }
  out.push_back('}');
  return out;
}

void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void Counter::inc(double v) {
  if (v > 0) atomic_add(value_, v);  // counters never go down
}

void Gauge::inc(double v) {
  atomic_add(value_, v);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    SY_CHECK_MSG(std::isfinite(bounds_[i]), "histogram bounds must be finite");
    SY_CHECK_MSG(i == 0 || bounds_[i] > bounds_[i - 1], "histogram bounds must increase");
  }
}

void Histogram::observe(double v) {
  size_t b = 0;
  while (b < bounds_.size() && v > bounds_[b]) ++b;  // le: the first bound >= v
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[b];
  sum_ += v;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t acc = 0;
  for (uint64_t c : counts_) {
    acc += c;
    s.cumulative.push_back(acc);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> latency_buckets_seconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60};
}

struct MetricsRegistry::Series {
  MetricLabels labels;
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::function<double()> read;
};

struct MetricsRegistry::Family {
  std::string name;
  std::string help;
  Type type;
  std::vector<std::unique_ptr<Series>> series;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Series& MetricsRegistry::series(const std::string& name, const std::string& help,
                                                 Type type, const MetricLabels& labels,
                                                 bool& created) {
  SY_CHECK_MSG(valid_metric_name(name), "bad metric name '%s'", name.c_str());
  for (const auto& [k, v] : labels)
    SY_CHECK_MSG(valid_label_name(k) && k != "le", "bad label name '%s'", k.c_str());
  // Caller holds mu_.
  Family* f = nullptr;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    families_.push_back(std::make_unique<Family>(Family{name, help, type, {}}));
    f = families_.back().get();
    by_name_[name] = f;
  } else {
    f = it->second;
    SY_CHECK_MSG(f->type == type, "metric '%s' registered with two types", name.c_str());
  }
  for (auto& s : f->series) {
    if (s->labels == labels) {
      created = false;
      return *s;
    }
  }
  f->series.push_back(std::make_unique<Series>());
  f->series.back()->labels = labels;
  created = true;
  return *f->series.back();
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  bool created = false;
  Series& s = series(name, help, Type::kCounter, labels, created);
  if (created) s.counter = std::make_unique<Counter>();
  SY_CHECK_MSG(s.counter, "metric '%s' is read by a function", name.c_str());
  return *s.counter;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  bool created = false;
  Series& s = series(name, help, Type::kGauge, labels, created);
  if (created) s.gauge = std::make_unique<Gauge>();
  SY_CHECK_MSG(s.gauge, "metric '%s' is read by a function", name.c_str());
  return *s.gauge;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> upper_bounds,
                                      const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  bool created = false;
  Series& s = series(name, help, Type::kHistogram, labels, created);
  if (created) s.histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  return *s.histogram;
}

void MetricsRegistry::counter_fn(const std::string& name, const std::string& help,
                                 std::function<double()> read, const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  bool created = false;
  Series& s = series(name, help, Type::kCounter, labels, created);
  SY_CHECK_MSG(created, "metric '%s' registered twice", name.c_str());
  s.read = std::move(read);
}

void MetricsRegistry::gauge_fn(const std::string& name, const std::string& help,
                               std::function<double()> read, const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  bool created = false;
  Series& s = series(name, help, Type::kGauge, labels, created);
  SY_CHECK_MSG(created, "metric '%s' registered twice", name.c_str());
  s.read = std::move(read);
}

std::string MetricsRegistry::expose() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    const char* type = f->type == Type::kCounter ? "counter"
                       : f->type == Type::kGauge ? "gauge"
                                                 : "histogram";
    out += "# HELP " + f->name + " " + escape(f->help, false) + "\n";
    out += "# TYPE " + f->name + " " + type + "\n";
    for (const auto& s : f->series) {
      if (s->histogram) {
        const Histogram::Snapshot snap = s->histogram->snapshot();
        for (size_t i = 0; i <= snap.upper_bounds.size(); ++i) {
          const std::string le =
              i < snap.upper_bounds.size() ? format_metric_value(snap.upper_bounds[i]) : "+Inf";
          out += f->name + "_bucket" + label_text(s->labels, "le", le) + " " +
                 std::to_string(snap.cumulative[i]) + "\n";
        }
        const std::string labels = label_text(s->labels);
        out += f->name + "_sum" + labels + " " + format_metric_value(snap.sum) + "\n";
        out += f->name + "_count" + labels + " " + std::to_string(snap.count) + "\n";
        continue;
      }
      double v = 0;
      if (s->read)
        v = s->read();
      else if (s->counter)
        v = s->counter->value();
      else if (s->gauge)
        v = s->gauge->value();
      out += f->name + label_text(s->labels) + " " + format_metric_value(v) + "\n";
    }
  }
  return out;
}

}  // namespace sy
