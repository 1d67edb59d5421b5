// A small Prometheus registry: counters, gauges and histograms with fixed buckets,
// exposed in the text format 0.0.4 (HELP and TYPE lines, one family per name).
//
// Thread-safe: any thread may register, update and expose. Registration returns a
// reference that stays valid for the registry's lifetime, so hot paths keep it and
// update without lookups. Registering a name twice with the same labels returns the
// same series; a name registered again with another type or with a bad name is a
// programming error (SY_CHECK).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sy {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double v = 1);  // v >= 0
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1);
  void dec(double v = 1) { inc(-v); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `upper_bounds`: finite, strictly increasing; +Inf is implied.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;         // sum and counts change together, so a scrape sees one state
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Latency buckets in seconds, 1 ms to 60 s.
std::vector<double> latency_buckets_seconds();

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  Counter& counter(const std::string& name, const std::string& help,
                   const MetricLabels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       std::vector<double> upper_bounds, const MetricLabels& labels = {});
  // Series whose value is read when exposed, from state another component owns (e.g.
  // the engine's atomics). `read` must be thread-safe and cheap.
  void counter_fn(const std::string& name, const std::string& help, std::function<double()> read,
                  const MetricLabels& labels = {});
  void gauge_fn(const std::string& name, const std::string& help, std::function<double()> read,
                const MetricLabels& labels = {});

  // Text exposition format 0.0.4, families in registration order.
  std::string expose() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series;
  struct Family;
  Series& series(const std::string& name, const std::string& help, Type type,
                 const MetricLabels& labels, bool& created);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::map<std::string, Family*> by_name_;
};

// Prometheus number text: shortest round-trip decimal, +Inf, -Inf or NaN.
std::string format_metric_value(double v);

}  // namespace sy
