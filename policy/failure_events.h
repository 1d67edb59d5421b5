// Who pays for a retry: a replica's failure is budgeted once, not per request.
//
// When a replica dies (SIGKILL) or stops (SIGSTOP), every request it held fails at about
// the same moment. Paying each of those retries from the per-request bucket
// (HedgeBudget: about five spare attempts) fails the rest of a full replica's requests,
// although another replica could take them. So the first failed attempt on replica r
// opens a failure event for r, which spends one bucket token and then pays the retries
// of up to the requests r held in flight at that moment, for `window_s`. Retries beyond
// that cover, or while no event can open, spend the bucket as before.
//
// An event is one failure of one process: when the replica's worker has restarted (a
// new `incarnation`, e.g. its boot id) and fails again, that is a new event, even within
// the window (it costs its own bucket token).
//
// An event opens only while another replica is usable and has no event open: the point is
// to move one replica's requests to the others, and when every replica fails at once the
// retries would only fail again. For the same reason a failure that finds no such replica
// stops the other replicas' events from paying. So a full outage adds at most the
// bucket's attempts plus, for each event (each one costs a bucket token), what one
// replica held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "policy/clock.h"
#include "policy/hedge_budget.h"

namespace sy::policy {

class FailureEvents {
 public:
  enum class Payer {
    kNone,      // nobody: the request fails
    kBucket,    // one token of the per-request bucket
    kNewEvent,  // a failure event this retry opened (it spent one bucket token)
    kEvent,     // the replica's open failure event
  };

  // `window_s` (seconds): how long an event pays for its replica's failed attempts. The
  // gateway uses the longest silence its watchdog waits before failing an attempt over,
  // so every attempt the replica held when it failed has failed within the window.
  FailureEvents(const Clock& clock, HedgeBudget& bucket, double window_s);

  // An attempt on `replica` failed and its request may go again. `incarnation`: which
  // process of the replica it ran on (a hash of its boot id). `held`: the requests
  // `replica` had in flight when this attempt failed, this one included. `usable[j]`:
  // replica j can take new work (ready, not ejected); the failed replica's own entry is
  // not read. Spends what pays for the retry and says who that was.
  Payer pay_retry(size_t replica, uint64_t incarnation, int32_t held, std::span<const bool> usable);

  // Whether `replica` has an event open now (paying or used up).
  bool open(size_t replica) const;
  // Retries the open event of `replica` still pays for (0 when none is open).
  int32_t cover_left(size_t replica) const;
  int64_t events_opened() const { return opened_; }

 private:
  struct Event {
    double until_s = 0;  // open while now < until_s
    int32_t left = 0;    // retries it still pays for
    uint64_t incarnation = 0;
  };

  const Clock& clock_;
  HedgeBudget& bucket_;
  double window_s_;
  std::vector<Event> events_;  // by replica index, grown on first use
  int64_t opened_ = 0;
};

}  // namespace sy::policy
