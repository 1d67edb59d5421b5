// The Prometheus registry: exact exposition text (HELP/TYPE once per family, labels,
// escaping, cumulative histogram buckets with +Inf, _sum and _count), and updates from
// several threads adding up; the throughput meter's rates over its window.
#include <gtest/gtest.h>

#include <thread>

#include "common/metrics.h"
#include "common/throughput_meter.h"

namespace sy {
namespace {

TEST(Metrics, ExpositionFormat) {
  MetricsRegistry reg;
  Counter& c = reg.counter("sy_requests_total", "Requests served.",
                           {{"route", "/v1/completions"}, {"code", "200"}});
  reg.counter("sy_requests_total", "Requests served.",
              {{"route", "/v1/completions"}, {"code", "400"}})
      .inc(2);
  c.inc();
  c.inc(3);
  Gauge& g = reg.gauge("sy_running", "Running \\ requests\nnow.");
  g.set(5);
  g.dec(2);
  reg.gauge_fn("sy_blocks", "Blocks.", [] { return 1.5; }, {{"q", "a\"b\\c\nd"}});
  Histogram& h = reg.histogram("sy_latency_seconds", "Latency.", {0.1, 1});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(7);
  EXPECT_EQ(reg.expose(),
            "# HELP sy_requests_total Requests served.\n"
            "# TYPE sy_requests_total counter\n"
            "sy_requests_total{route=\"/v1/completions\",code=\"200\"} 4\n"
            "sy_requests_total{route=\"/v1/completions\",code=\"400\"} 2\n"
            "# HELP sy_running Running \\\\ requests\\nnow.\n"
            "# TYPE sy_running gauge\n"
            "sy_running 3\n"
            "# HELP sy_blocks Blocks.\n"
            "# TYPE sy_blocks gauge\n"
            "sy_blocks{q=\"a\\\"b\\\\c\\nd\"} 1.5\n"
            "# HELP sy_latency_seconds Latency.\n"
            "# TYPE sy_latency_seconds histogram\n"
            "sy_latency_seconds_bucket{le=\"0.1\"} 2\n"
            "sy_latency_seconds_bucket{le=\"1\"} 3\n"
            "sy_latency_seconds_bucket{le=\"+Inf\"} 4\n"
            "sy_latency_seconds_sum 7.65\n"
            "sy_latency_seconds_count 4\n");
}

TEST(Metrics, HistogramLabelsJoinTheLeLabel) {
  MetricsRegistry reg;
  reg.histogram("h", "H.", {1}, {{"kind", "ttft"}}).observe(2);
  const std::string text = reg.expose();
  EXPECT_NE(text.find("h_bucket{kind=\"ttft\",le=\"1\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_bucket{kind=\"ttft\",le=\"+Inf\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_sum{kind=\"ttft\"} 2\n"), std::string::npos) << text;
}

TEST(Metrics, CountersNeverDecrease) {
  MetricsRegistry reg;
  Counter& c = reg.counter("c_total", "C.");
  c.inc(2);
  c.inc(-1);
  EXPECT_EQ(c.value(), 2);
}

TEST(Metrics, RegisteringAgainReturnsTheSameSeries) {
  MetricsRegistry reg;
  EXPECT_EQ(&reg.counter("a_total", "A."), &reg.counter("a_total", "A."));
  EXPECT_NE(&reg.counter("a_total", "A.", {{"x", "1"}}), &reg.counter("a_total", "A."));
}

TEST(Metrics, ValuesFormatAsPrometheusNumbers) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1e21), "1e+21");
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_metric_value(0.0 / 0.0), "NaN");
}

TEST(Metrics, ConcurrentUpdatesAddUp) {
  MetricsRegistry reg;
  Counter& c = reg.counter("n_total", "N.");
  Histogram& h = reg.histogram("d", "D.", latency_buckets_seconds());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(0.003);
        reg.gauge("g", "G.").inc();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.snapshot().count, 40000u);
  EXPECT_EQ(reg.gauge("g", "G.").value(), 40000);
  EXPECT_NE(reg.expose().find("d_bucket{le=\"0.005\"} 40000\n"), std::string::npos);
}

// The meter behind switchyard_worker_*_tokens_per_second, driven by a fake clock.
TEST(ThroughputMeter, RatesOverTheWindowAndIdleFallsToZero) {
  ThroughputMeter m(10);
  EXPECT_EQ(m.sample(100, 0, 0).span_s, 0);  // one sample: no rate yet
  ThroughputMeter::Rates r = m.sample(101, 50, 1000);
  EXPECT_DOUBLE_EQ(r.generated_per_s, 50);
  EXPECT_DOUBLE_EQ(r.prompt_per_s, 1000);
  EXPECT_DOUBLE_EQ(r.span_s, 1);
  // 20 tokens a second from then on and no prompts: the window forgets the first second.
  for (int t = 102; t <= 130; ++t) r = m.sample(t, 50 + (t - 101) * 20, 1000);
  EXPECT_NEAR(r.generated_per_s, 20, 1e-9);
  EXPECT_NEAR(r.prompt_per_s, 0, 1e-9);
  EXPECT_NEAR(r.span_s, 10, 1e-9);
  // A second scrape 0.1 s later (no new sample) still measures from the window's start.
  r = m.sample(130.1, 50 + 29 * 20 + 2, 1000);
  EXPECT_NEAR(r.generated_per_s, 202 / 10.1, 1e-9);
  // Idle for longer than the window: the rate is zero, not the last busy value.
  r = m.sample(145, 50 + 29 * 20, 1000);
  EXPECT_DOUBLE_EQ(r.generated_per_s, 0);
  EXPECT_DOUBLE_EQ(r.span_s, 15);
}

}  // namespace
}  // namespace sy
