// Percentiles and level summaries of switchyard-bench on hand-made records, against
// values worked out by hand (and NumPy's default percentile for the interpolation).
#include "bench/loadgen/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sy::bench {
namespace {

using std::chrono::milliseconds;

TEST(Percentile, LinearBetweenClosestRanks) {
  const std::vector<double> v = {5, 1, 4, 2, 3};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 2);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4.6);  // numpy.percentile([1,2,3,4,5], 90)
  EXPECT_DOUBLE_EQ(percentile(v, 100), 5);
  EXPECT_DOUBLE_EQ(percentile({10, 20}, 50), 15);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

TEST(Percentile, HundredValues) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_NEAR(percentile(v, 99), 99.01, 1e-9);  // rank 98.01
  EXPECT_NEAR(percentile(v, 90), 90.1, 1e-9);
  EXPECT_NEAR(percentile(v, 50), 50.5, 1e-9);
}

TEST(Percentile, EmptyAndNaN) {
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_TRUE(std::isnan(mean({})));
  const double nan = std::nan("");
  EXPECT_DOUBLE_EQ(percentile({nan, 2, nan, 4}, 50), 3);  // NaN entries are skipped
  EXPECT_DOUBLE_EQ(mean({nan, 2, 4}), 3);
  const Distribution d = distribution({});
  EXPECT_EQ(d.count, 0);
  EXPECT_TRUE(std::isnan(d.p50));
}

// A request issued at `t0 + issued_ms` whose content events arrive at the given offsets
// (with the given token counts) and whose [DONE] arrives at done_ms.
RequestRecord record(Clock::time_point t0, int64_t index, int issued_ms,
                     std::vector<std::pair<int, int64_t>> arrivals, int done_ms, int64_t tokens) {
  RequestRecord r;
  r.index = index;
  r.max_tokens = tokens;
  r.completion_tokens = tokens;
  r.prompt_tokens = 100;
  r.issued = t0 + milliseconds(issued_ms);
  r.done = t0 + milliseconds(done_ms);
  for (auto [ms, k] : arrivals) {
    r.arrivals.push_back({t0 + milliseconds(ms), k});
    r.content_events += 1;
    r.streamed_tokens += k;
  }
  r.text = "some text";
  return r;
}

TEST(RequestRecord, TimingsOfOneRequest) {
  const Clock::time_point t0 = Clock::now();
  const RequestRecord r = record(t0, 0, 0, {{100, 1}, {150, 1}, {200, 1}}, 250, 3);
  EXPECT_NEAR(r.ttft_s(), 0.100, 1e-9);
  EXPECT_NEAR(r.e2e_s(), 0.250, 1e-9);
  const std::vector<double> itl = r.itl_s();
  ASSERT_EQ(itl.size(), 2u);
  EXPECT_NEAR(itl[0], 0.050, 1e-9);
  EXPECT_NEAR(itl[1], 0.050, 1e-9);
  EXPECT_NEAR(r.decode_tok_s(), 2 / 0.100, 1e-6);  // 2 tokens after the first in 100 ms
  EXPECT_NEAR(r.e2e_tok_s(), 3 / 0.250, 1e-6);
}

TEST(RequestRecord, EventsCarryingSeveralTokensSplitTheirGap) {
  const Clock::time_point t0 = Clock::now();
  // 2 tokens in the first event, then 3 tokens 90 ms later: one gap of 0 (with the first),
  // three gaps of 30 ms.
  const RequestRecord r = record(t0, 0, 0, {{40, 2}, {130, 3}}, 140, 5);
  const std::vector<double> itl = r.itl_s();
  ASSERT_EQ(itl.size(), 4u);  // one per token after the first
  EXPECT_DOUBLE_EQ(itl[0], 0.0);
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(itl[i], 0.030, 1e-9);
  EXPECT_NEAR(r.decode_tok_s(), 4 / 0.090, 1e-6);
}

TEST(RequestRecord, OneTokenHasNoDecodeRate) {
  const Clock::time_point t0 = Clock::now();
  const RequestRecord r = record(t0, 0, 0, {{10, 1}}, 20, 1);
  EXPECT_TRUE(r.itl_s().empty());
  EXPECT_TRUE(std::isnan(r.decode_tok_s()));
  EXPECT_NEAR(r.e2e_tok_s(), 1 / 0.020, 1e-6);
}

TEST(Summarize, LevelOfTwoGoodAndOneFailed) {
  const Clock::time_point t0 = Clock::now();
  std::vector<RequestRecord> rs;
  rs.push_back(record(t0, 0, 0, {{100, 1}, {150, 1}, {200, 1}}, 250, 3));   // ttft 100, e2e 250
  rs.push_back(record(t0, 1, 50, {{350, 1}, {370, 1}, {390, 1}}, 400, 3));  // ttft 300, e2e 350
  RequestRecord failed = record(t0, 2, 10, {}, 500, 3);  // the level's last completion
  failed.fail(ErrorKind::kHttpStatus, "HTTP 503");
  rs.push_back(failed);
  std::vector<RequestRecord> warmup = {record(t0, 3, 0, {{1, 1}}, 2, 1)};
  warmup[0].fail(ErrorKind::kTimeout, "slow");

  const LevelStats s = summarize(rs, warmup);
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.ok, 2);
  EXPECT_EQ(s.errors, 1);
  EXPECT_EQ(s.errors_by_kind.at("http_status"), 1);
  ASSERT_EQ(s.error_samples.size(), 1u);
  EXPECT_EQ(s.error_samples[0], "request 2: http_status: HTTP 503");
  EXPECT_EQ(s.warmup_requests, 1);
  EXPECT_EQ(s.warmup_errors, 1);
  EXPECT_FALSE(s.valid());

  EXPECT_EQ(s.ttft_s.count, 2);
  EXPECT_NEAR(s.ttft_s.p50, 0.200, 1e-9);
  EXPECT_NEAR(s.ttft_s.p90, 0.280, 1e-9);  // 0.1 + 0.9 * 0.2
  EXPECT_NEAR(s.e2e_s.p50, 0.300, 1e-9);
  // ITL pooled over requests: 50, 50, 20, 20 ms.
  EXPECT_EQ(s.itl_s.count, 4);
  EXPECT_NEAR(s.itl_s.p50, 0.035, 1e-9);
  EXPECT_NEAR(s.itl_s.mean, 0.035, 1e-9);
  EXPECT_NEAR(s.itl_s.max, 0.050, 1e-9);
  // Decode rates 20 and 50 tok/s; e2e rates 12 and 3/0.35.
  EXPECT_NEAR(s.user_decode_tok_s, 35, 1e-6);
  EXPECT_NEAR(s.user_e2e_tok_s, (12 + 3 / 0.35) / 2, 1e-6);
  // Wall time from the first issue (0) to the last completion (the failed one, 500 ms).
  EXPECT_NEAR(s.wall_s, 0.500, 1e-9);
  EXPECT_EQ(s.output_tokens, 6);
  EXPECT_NEAR(s.aggregate_tok_s, 6 / 0.500, 1e-6);
  EXPECT_NEAR(s.ok_requests_per_s, 2 / 0.500, 1e-6);
  EXPECT_DOUBLE_EQ(s.prompt_tokens_mean, 100);
}

TEST(Summarize, AllGoodIsValid) {
  const Clock::time_point t0 = Clock::now();
  const LevelStats s = summarize({record(t0, 0, 0, {{10, 1}, {20, 1}}, 30, 2)}, {});
  EXPECT_TRUE(s.valid());
  EXPECT_EQ(s.unattributed_tokens, 0);
}

TEST(Summarize, NoRequestsIsNotValid) {
  const LevelStats s = summarize({}, {});
  EXPECT_FALSE(s.valid());
  EXPECT_TRUE(std::isnan(s.aggregate_tok_s));
}

TEST(Summarize, CountsTokensThatCameSeveralToAnUncountedEvent) {
  const Clock::time_point t0 = Clock::now();
  RequestRecord r = record(t0, 0, 0, {{10, 1}, {20, 1}}, 30, 4);  // 4 tokens in 2 text-only events
  r.exact_token_counts = false;
  r.text = "caf\xEF\xBF\xBD";
  const LevelStats s = summarize({r}, {});
  EXPECT_EQ(s.unattributed_tokens, 2);
  EXPECT_EQ(s.texts_with_replacement_char, 1);
}

}  // namespace
}  // namespace sy::bench
