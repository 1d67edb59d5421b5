// Priority queues: strict priority, aging, per-key fairness and full queues, driven
// by a manual clock.
#include "policy/admission_queue.h"

#include <gtest/gtest.h>

#include <map>

#include "policy/hedge_budget.h"

namespace sy::policy {
namespace {

QueuedRequest req(uint64_t id, PriorityClass c, std::string key = "k", int64_t cost = 1) {
  return {id, c, std::move(key), cost, 0};
}

std::vector<uint64_t> drain(AdmissionQueue& q) {
  std::vector<uint64_t> out;
  while (auto r = q.pop()) out.push_back(r->id);
  return out;
}

TEST(AdmissionQueue, StrictPriorityThenArrival) {
  ManualClock clock;
  AdmissionQueue q({}, clock);
  q.push(req(1, PriorityClass::kBatch));
  q.push(req(2, PriorityClass::kStandard));
  q.push(req(3, PriorityClass::kInteractive));
  q.push(req(4, PriorityClass::kStandard));
  EXPECT_EQ(drain(q), (std::vector<uint64_t>{3, 2, 4, 1}));
}

TEST(AdmissionQueue, AgingPromotesWaitingWork) {
  ManualClock clock;
  AdmissionQueueOptions o;
  o.aging_s = 10;
  AdmissionQueue q(o, clock);
  q.push(req(1, PriorityClass::kBatch));  // t=0
  clock.advance(11);
  q.push(req(2, PriorityClass::kStandard));  // t=11
  EXPECT_EQ(q.pop()->id, 1u) << "the batch request aged into standard and is older";
  clock.advance(5);
  q.push(req(3, PriorityClass::kInteractive));  // t=16
  EXPECT_EQ(q.pop()->id, 3u) << "2 has waited 5 s: still standard";
  q.push(req(5, PriorityClass::kBatch));  // t=16
  clock.advance(10);                      // t=26: 2 waited 15 s → interactive; 5 waited 10 s → standard
  EXPECT_EQ(q.size(PriorityClass::kBatch), 1u) << "sizes count by the class before aging runs";
  EXPECT_EQ(q.pop()->id, 2u);
  EXPECT_EQ(q.size(PriorityClass::kStandard), 1u);
  EXPECT_EQ(q.pop()->id, 5u);
  q.push(req(6, PriorityClass::kBatch));  // t=26
  clock.advance(20);                      // two steps: batch → interactive
  q.push(req(7, PriorityClass::kInteractive));
  EXPECT_EQ(q.pop()->id, 6u);
  EXPECT_EQ(q.pop()->id, 7u);
  EXPECT_FALSE(q.pop().has_value());
}

TEST(AdmissionQueue, DeficitRoundRobinAcrossKeys) {
  ManualClock clock;
  AdmissionQueueOptions o;
  o.quantum = 100;
  AdmissionQueue q(o, clock);
  for (uint64_t i = 0; i < 6; ++i) q.push(req(i, PriorityClass::kStandard, "greedy", 100));
  q.push(req(100, PriorityClass::kStandard, "polite", 100));
  q.push(req(101, PriorityClass::kStandard, "polite", 100));
  const auto order = drain(q);
  // The polite key's requests are not stuck behind all of greedy's.
  const auto pos = [&](uint64_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  EXPECT_LE(pos(100), 2);
  EXPECT_LE(pos(101), 4);
  // Fairness by tokens: a key with requests 4× as large gets about a quarter as many.
  AdmissionQueue t(o, clock);
  for (uint64_t i = 0; i < 40; ++i) {
    t.push(req(i, PriorityClass::kBatch, "big", 400));
    t.push(req(1000 + i, PriorityClass::kBatch, "small", 100));
  }
  std::map<std::string, int> served;
  for (int i = 0; i < 25; ++i) served[t.pop()->id >= 1000 ? "small" : "big"]++;
  EXPECT_NEAR(served["small"], 20, 2);
  EXPECT_NEAR(served["big"], 5, 2);
}

TEST(AdmissionQueue, FullClassesRefuseAndRemovalFreesASlot) {
  ManualClock clock;
  AdmissionQueueOptions o;
  o.capacity[0] = 2;
  AdmissionQueue q(o, clock);
  EXPECT_TRUE(q.push(req(1, PriorityClass::kInteractive)));
  EXPECT_TRUE(q.push(req(2, PriorityClass::kInteractive)));
  EXPECT_FALSE(q.push(req(3, PriorityClass::kInteractive)));
  EXPECT_TRUE(q.push(req(4, PriorityClass::kBatch))) << "another class has its own bound";
  EXPECT_TRUE(q.remove(1));
  EXPECT_FALSE(q.remove(1));
  EXPECT_TRUE(q.push(req(3, PriorityClass::kInteractive)));
  clock.advance(3);
  EXPECT_DOUBLE_EQ(q.oldest_wait_s(PriorityClass::kInteractive), 3);
  EXPECT_EQ(drain(q), (std::vector<uint64_t>{2, 3, 4}));
}

TEST(HedgeBudget, AllowsAboutRatioTimesRequestsWhenEverythingFails) {
  HedgeBudget b(0.1, 10);
  int extra = 0;
  for (int i = 0; i < 1000; ++i) {
    b.on_request();
    while (b.try_spend()) ++extra;  // every attempt fails, so every request would retry
  }
  EXPECT_LE(extra, 0.1 * 1000 + 6);  // the initial half bucket plus 10 %
  EXPECT_GE(extra, 0.1 * 1000 - 1);
}

}  // namespace
}  // namespace sy::policy
