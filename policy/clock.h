// Time and randomness are injected into policies so that tests drive them (as Envoy's
// load balancers take a TimeSource and a RandomGenerator).
#pragma once

#include <chrono>
#include <cstdint>

namespace sy::policy {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() const = 0;  // seconds on a monotonic clock
};

class SteadyClock : public Clock {
 public:
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

// A clock that moves only when told to: for tests and simulations.
class ManualClock : public Clock {
 public:
  explicit ManualClock(double start = 0) : now_(start) {}
  double now_s() const override { return now_; }
  void advance(double seconds) { now_ += seconds; }
  void set(double now) { now_ = now; }

 private:
  double now_;
};

class Random {
 public:
  virtual ~Random() = default;
  virtual uint64_t next() = 0;
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// SplitMix64: small, fast, and the same sequence for the same seed everywhere.
class SplitMixRandom : public Random {
 public:
  explicit SplitMixRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() override {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace sy::policy
