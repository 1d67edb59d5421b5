// Failure events, driven by a manual clock: each row is one failed attempt (time,
// replica, what that replica held, which replicas are usable) and who must pay for its
// retry, with the bucket's tokens after it. The bucket is the gateway's default
// (HedgeBudget: 10 tokens, spends only above half, so 5 spare attempts from full).
#include "policy/failure_events.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sy::policy {
namespace {

using Payer = FailureEvents::Payer;

constexpr double kWindow = 2.0;

struct Failure {
  double t;
  size_t replica;
  uint64_t incarnation;
  int32_t held;
  std::vector<bool> usable;
  Payer want;
  double want_tokens;        // the bucket's tokens after the decision
  int32_t want_left = -1;    // the replica's cover left, checked when >= 0
};

const char* name(Payer p) {
  switch (p) {
    case Payer::kNone: return "none";
    case Payer::kBucket: return "bucket";
    case Payer::kNewEvent: return "new event";
    case Payer::kEvent: return "event";
  }
  return "?";
}

void run(const std::vector<Failure>& rows, HedgeBudget bucket = HedgeBudget()) {
  ManualClock clock;
  FailureEvents events(clock, bucket, kWindow);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Failure& f = rows[i];
    clock.set(f.t);
    SCOPED_TRACE("row " + std::to_string(i) + " at t=" + std::to_string(f.t) + " replica " + std::to_string(f.replica));
    bool usable[8] = {};  // std::vector<bool> has no span
    for (size_t j = 0; j < f.usable.size(); ++j) usable[j] = f.usable[j];
    const Payer got = events.pay_retry(f.replica, f.incarnation, f.held, std::span<const bool>(usable, f.usable.size()));
    EXPECT_EQ(got, f.want) << "paid by " << name(got) << ", want " << name(f.want);
    EXPECT_NEAR(bucket.tokens(), f.want_tokens, 1e-9);
    if (f.want_left >= 0) {
      EXPECT_EQ(events.cover_left(f.replica), f.want_left);
    }
  }
}

const std::vector<bool> kBoth = {true, true};
const std::vector<bool> kOnlyFirst = {true, false};

// The case: a replica holding 8 streams dies. The first failure opens an event
// (one bucket token) that pays all 8 retries; the per-request bucket alone paid 5.
TEST(FailureEvents, OneEventPaysForEverythingTheReplicaHeld) {
  std::vector<Failure> rows = {{0.0, 0, 1, 8, kBoth, Payer::kNewEvent, 9, 7}};
  for (int k = 1; k < 8; ++k) rows.push_back({0.01 * k, 0, 1, 8 - k, kBoth, Payer::kEvent, 9, 7 - k});
  // A ninth failure on the same replica in the window is more than it held: the bucket.
  rows.push_back({0.5, 0, 1, 1, kBoth, Payer::kBucket, 8, 0});
  run(rows);
}

TEST(FailureEvents, AnEventClosesAfterItsWindow) {
  run({
      {0.0, 0, 1, 3, kBoth, Payer::kNewEvent, 9, 2},
      {1.999, 0, 1, 3, kBoth, Payer::kEvent, 9, 1},
      {2.0, 0, 1, 3, kBoth, Payer::kNewEvent, 8, 2},  // closed: the next failure opens a new one
  });
}

// A restarted replica (a new process) that fails again is a new event, even within the
// old one's window.
TEST(FailureEvents, ARestartedReplicaFailingIsANewEvent) {
  run({
      {0.0, 0, 1, 8, kBoth, Payer::kNewEvent, 9, 7},
      {0.0, 0, 1, 7, kBoth, Payer::kEvent, 9, 6},
      {1.0, 0, 2, 8, kBoth, Payer::kNewEvent, 8, 7},
      {1.0, 0, 2, 7, kBoth, Payer::kEvent, 8, 6},
  });
}

TEST(FailureEvents, HeldCountsTheFailingRequest) {
  run({
      {0.0, 1, 1, 1, kBoth, Payer::kNewEvent, 9, 0},  // a lone request: its event pays only it
      {0.1, 1, 1, 1, kBoth, Payer::kBucket, 8, 0},
      {5.0, 1, 1, 0, kBoth, Payer::kNewEvent, 7, 0},  // a stale count below one still pays this retry
  });
}

// Nowhere to go: the only other replica is not usable, so no event opens and each retry
// spends the bucket until it refuses (below half full).
TEST(FailureEvents, NoEventWithoutAnotherUsableReplica) {
  run({
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kBucket, 9},
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kBucket, 8},
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kBucket, 7},
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kBucket, 6},
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kBucket, 5},
      {0.0, 0, 1, 8, kOnlyFirst, Payer::kNone, 5},
      {0.0, 1, 1, 8, {false, true}, Payer::kNone, 5},
  });
}

// Every replica failing at once: the first opens an event, the second cannot (the only
// other replica has one open), and from then on the first's event pays no more: with
// nowhere to go, the retries would only fail again.
TEST(FailureEvents, NoEventWhileTheOthersAreFailingToo) {
  run({
      {0.0, 0, 1, 8, kBoth, Payer::kNewEvent, 9, 7},
      {0.1, 0, 1, 7, kBoth, Payer::kEvent, 9, 6},
      {0.2, 1, 1, 8, kBoth, Payer::kBucket, 8, 0},
      {0.3, 0, 1, 6, kBoth, Payer::kBucket, 7, 0},
      {2.5, 1, 1, 8, kBoth, Payer::kNewEvent, 6, 7},  // replica 0's event is over
  });
}

TEST(FailureEvents, TwoOfThreeReplicasFailingBothGetEvents) {
  const std::vector<bool> all = {true, true, true};
  run({
      {0.0, 0, 1, 4, all, Payer::kNewEvent, 9, 3},
      {0.0, 1, 1, 4, all, Payer::kNewEvent, 8, 3},  // replica 2 can take them
      {0.0, 1, 1, 3, all, Payer::kEvent, 8, 2},
      {0.0, 2, 1, 4, all, Payer::kBucket, 7, 0},    // the last one standing gets none, and
      {0.0, 1, 1, 2, all, Payer::kBucket, 6, 0},    // the others' events stop paying
  });
}

// An event opens only with a bucket token: when hedges have spent the bucket, a failure
// is not covered.
TEST(FailureEvents, AnEventNeedsABucketToken) {
  HedgeBudget drained;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(drained.try_spend());
  run({{0.0, 0, 1, 8, kBoth, Payer::kNone, 5, 0}}, drained);
}

// A replica that crashes again and again with 8 requests each time, and no client
// requests refilling the bucket: events stop when the bucket does, so the retries stay
// bounded by (the bucket's spare tokens) × (what a replica holds).
TEST(FailureEvents, ACrashLoopCannotStorm) {
  ManualClock clock;
  HedgeBudget bucket;
  FailureEvents events(clock, bucket, kWindow);
  const bool usable[2] = {true, true};
  int paid = 0;
  for (int crash = 0; crash < 100; ++crash) {
    clock.set(3.0 * crash);  // each crash after the previous one's window
    for (int32_t k = 0; k < 8; ++k) paid += events.pay_retry(0, crash, 8 - k, usable) != Payer::kNone;
  }
  EXPECT_EQ(events.events_opened(), 5);
  EXPECT_EQ(paid, 5 * 8);
  EXPECT_NEAR(bucket.tokens(), 5, 1e-9);
}

// Failures faster than the window (a replica failing every request sent to it): one
// event pays for what the replica held, then the bucket, then nothing.
TEST(FailureEvents, ABusyFailingReplicaCannotStorm) {
  ManualClock clock;
  HedgeBudget bucket;
  FailureEvents events(clock, bucket, kWindow);
  const bool usable[2] = {true, true};
  int paid = 0;
  for (int i = 0; i < 10000; ++i) {
    clock.advance(0.1);
    paid += events.pay_retry(0, 1, 8, usable) != Payer::kNone;
  }
  EXPECT_EQ(events.events_opened(), 1);
  EXPECT_EQ(paid, 8 + 4);  // the event's 8, then the bucket down to half
}

}  // namespace
}  // namespace sy::policy
