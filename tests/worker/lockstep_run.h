// Driving a backend step by step with hand-made batch plans, so that two backends (an
// unsharded one and a parallel group) can run the same sequences in lockstep and their
// logits be compared row by row: the harness of the CPU and CUDA context-parallel tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "worker/backend/backend.h"
#include "worker/plan/batch_plan.h"

namespace sy::testing {

// max |a - b| over max |b|; infinite where a is not finite.
inline double scaled_diff(const float* a, const float* b, size_t n) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// The first index of the largest logit.
inline int32_t argmax(const float* logits, int32_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

// n token ids spread over the vocabulary, different for each salt.
inline std::vector<int32_t> some_ids(int32_t n, int32_t vocab, int32_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((int64_t{i} * 7919 + salt * 104729) % vocab);
  return ids;
}

// Rows of an n-token prompt whose logits are compared: all of a short one, a spread of a
// long one (the LM head over a large vocabulary is the costly part).
inline std::vector<int32_t> wanted_rows(int32_t n) {
  std::vector<int32_t> rows;
  const int32_t step = n <= 48 ? 1 : n / 12;
  for (int32_t r = 0; r < n; r += step) rows.push_back(r);
  if (rows.back() != n - 1) rows.push_back(n - 1);
  return rows;
}

// One backend's sequences, fed step by step with block ids from a fixed supply.
class LockstepRun {
 public:
  LockstepRun(Backend& b, std::vector<int32_t> supply) : b_(b), supply_(std::move(supply)) {}

  struct Piece {
    int seq;
    int32_t n;                  // new tokens this step
    std::vector<int32_t> rows;  // of the new tokens, those whose logits are wanted
  };
  // Adds a sequence whose first `cached` tokens are sequence `from`'s (whole blocks).
  int add(std::vector<int32_t> tokens, int from = -1, int32_t cached = 0) {
    Seq s{std::move(tokens), {}, cached};
    if (from >= 0)
      s.blocks.assign(seqs_[static_cast<size_t>(from)].blocks.begin(),
                      seqs_[static_cast<size_t>(from)].blocks.begin() + cached / b_.block_size());
    seqs_.push_back(std::move(s));
    return static_cast<int>(seqs_.size()) - 1;
  }
  void append(int seq, int32_t token) { seqs_[static_cast<size_t>(seq)].tokens.push_back(token); }
  // Runs one step of the pieces; the wanted rows' logits, in order.
  std::vector<float> step(const std::vector<Piece>& pieces) {
    BatchPlan plan;
    const int32_t bs = b_.block_size();
    for (const Piece& p : pieces) {
      Seq& s = seqs_[static_cast<size_t>(p.seq)];
      const int32_t ctx = s.done + p.n;
      while (static_cast<int64_t>(s.blocks.size()) * bs < ctx) s.blocks.push_back(supply_.at(next_++));
      const int32_t row0 = plan.num_tokens();
      plan.add_sequence({s.tokens.begin() + s.done, s.tokens.begin() + ctx}, s.done, s.blocks, bs, BatchPlan::Logits::kNone);
      for (const int32_t r : p.rows) plan.logits_rows.push_back(row0 + r);
      s.done = ctx;
    }
    std::vector<float> logits;
    b_.forward(plan, logits);
    return logits;
  }

 private:
  struct Seq {
    std::vector<int32_t> tokens, blocks;
    int32_t done = 0;
  };
  Backend& b_;
  std::vector<int32_t> supply_;
  size_t next_ = 0;
  std::vector<Seq> seqs_;
};

}  // namespace sy::testing
