// Batch invariance of one backend (BackendOptions::deterministic, docs/NUMERICS.md): the
// logits of a prompt's last token computed every way a server computes them: alone, in a
// prefill step with other sequences, in chunks, as a decode step alone or in a batch of
// decodes, in a step that mixes a decode with another sequence's prefill chunk, and on top
// of prefix blocks another sequence computed. Every way must give the same bits.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "worker/backend/backend.h"
#include "worker/engine/block_allocator.h"

namespace sy::testing {

struct LogitsWay {
  std::string name;
  std::vector<float> logits;  // [vocab]: the last prompt token's row
};

class InvarianceProbe {
 public:
  InvarianceProbe(Backend& backend, uint32_t seed)
      : b_(backend), blocks_(backend.num_kv_blocks()), rng_(seed), bs_(backend.block_size()) {}

  std::vector<int32_t> random_ids(size_t n) {
    std::uniform_int_distribution<int32_t> d(0, b_.config().vocab - 1);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }

  // Every way of computing `prompt`'s last logits row; [0] is "alone in one prefill step".
  std::vector<LogitsWay> every_way(const std::vector<int32_t>& prompt) {
    const auto n = static_cast<int32_t>(prompt.size());
    std::vector<LogitsWay> ways;
    ways.push_back({"alone, one prefill step", prefill_in_chunks(prompt, n)});
    ways.push_back({"prefill chunks of 7", prefill_in_chunks(prompt, 7)});
    ways.push_back({"prefill chunks of one block", prefill_in_chunks(prompt, bs_)});
    ways.push_back({"in a prefill step with 3 others", prefill_with_others(prompt)});
    ways.push_back({"decode step alone", decode_last(prompt, 0, 0)});
    ways.push_back({"decode step in a batch of 12", decode_last(prompt, 11, 5)});
    ways.push_back({"decode row in a step with a prefill chunk", decode_last_mixed(prompt)});
    if (n > 2 * bs_) ways.push_back({"on two prefix blocks computed by another sequence", on_cached_prefix(prompt)});
    return ways;
  }

 private:
  struct Seq {
    std::vector<int32_t> tokens;
    std::vector<int32_t> blocks;
    int32_t computed = 0;
  };

  Seq open(std::vector<int32_t> tokens) {
    Seq s;
    s.tokens = std::move(tokens);
    EXPECT_TRUE(blocks_.allocate(blocks_for(static_cast<int64_t>(s.tokens.size()), bs_), s.blocks));
    return s;
  }
  void close(Seq& s) { blocks_.release(s.blocks); }
  // The blocks covering the first `ctx` tokens.
  std::vector<int32_t> blocks_of(const Seq& s, int32_t ctx) const {
    return {s.blocks.begin(), s.blocks.begin() + blocks_for(ctx, bs_)};
  }
  // Adds s's next `n` tokens to `plan`.
  void add(BatchPlan& plan, Seq& s, int32_t n, bool logits) {
    const std::vector<int32_t> chunk(s.tokens.begin() + s.computed, s.tokens.begin() + s.computed + n);
    plan.add_sequence(chunk, s.computed, blocks_of(s, s.computed + n), bs_,
                      logits ? BatchPlan::Logits::kLast : BatchPlan::Logits::kNone);
    s.computed += n;
  }
  std::vector<float> run(const BatchPlan& plan) {
    std::vector<float> logits;
    b_.forward(plan, logits);
    return logits;
  }
  std::vector<float> row(const std::vector<float>& logits, size_t i) const {
    const auto v = static_cast<size_t>(b_.config().vocab);
    return {logits.begin() + static_cast<ptrdiff_t>(i * v), logits.begin() + static_cast<ptrdiff_t>((i + 1) * v)};
  }
  // Runs s up to (but not including) its last `left` tokens, `chunk` tokens a step.
  void prefill(Seq& s, int32_t chunk, int32_t left = 0) {
    const auto end = static_cast<int32_t>(s.tokens.size()) - left;
    while (s.computed < end) {
      BatchPlan plan;
      add(plan, s, std::min(chunk, end - s.computed), false);
      run(plan);
    }
  }

  std::vector<float> prefill_in_chunks(const std::vector<int32_t>& prompt, int32_t chunk) {
    Seq s = open(prompt);
    const auto n = static_cast<int32_t>(prompt.size());
    const int32_t last = (n - 1) / chunk * chunk;  // start of the final chunk
    prefill(s, chunk, n - last);
    BatchPlan plan;
    add(plan, s, n - last, true);
    auto out = run(plan);
    close(s);
    return out;
  }

  std::vector<float> prefill_with_others(const std::vector<int32_t>& prompt) {
    Seq a = open(random_ids(5)), s = open(prompt), c = open(random_ids(33)), d = open(random_ids(70));
    BatchPlan plan;
    add(plan, a, 5, true);
    add(plan, s, static_cast<int32_t>(prompt.size()), true);
    add(plan, c, 33, true);
    add(plan, d, 70, false);
    auto out = row(run(plan), 1);
    for (Seq* q : {&a, &s, &c, &d}) close(*q);
    return out;
  }

  // The prompt's last token as a decode step, with `others` other sequences decoding too
  // (contexts of 3 to ~100 tokens), the prompt's row at index `at`.
  std::vector<float> decode_last(const std::vector<int32_t>& prompt, int others, int at) {
    std::vector<Seq> seqs;
    for (int i = 0; i < others; ++i) seqs.push_back(open(random_ids(static_cast<size_t>(3 + 9 * i))));
    Seq s = open(prompt);
    for (Seq& q : seqs) prefill(q, 64, 1);
    prefill(s, 64, 1);
    BatchPlan plan;
    int32_t row_of_s = 0;
    for (int i = 0; i <= others; ++i) {
      if (i == at) {
        row_of_s = plan.num_seqs();
        add(plan, s, 1, true);
      }
      if (i < others) add(plan, seqs[static_cast<size_t>(i)], 1, true);
    }
    auto out = row(run(plan), static_cast<size_t>(row_of_s));
    for (Seq& q : seqs) close(q);
    close(s);
    return out;
  }

  std::vector<float> decode_last_mixed(const std::vector<int32_t>& prompt) {
    Seq s = open(prompt), other = open(random_ids(50));
    prefill(s, 64, 1);
    prefill(other, 64, 20);
    BatchPlan plan;
    add(plan, other, 20, true);
    add(plan, s, 1, true);
    auto out = row(run(plan), 1);
    close(s);
    close(other);
    return out;
  }

  // Another sequence with the same first two blocks computes them; the prompt's sequence
  // then starts on those blocks (as the prefix cache hands them over) and runs the rest.
  std::vector<float> on_cached_prefix(const std::vector<int32_t>& prompt) {
    std::vector<int32_t> donor_tokens(prompt.begin(), prompt.begin() + 2 * bs_);
    const auto tail = random_ids(9);
    donor_tokens.insert(donor_tokens.end(), tail.begin(), tail.end());
    Seq donor = open(donor_tokens);
    prefill(donor, 64);
    Seq s;
    s.tokens = prompt;
    s.blocks = {donor.blocks[0], donor.blocks[1]};
    std::vector<int32_t> more;
    EXPECT_TRUE(blocks_.allocate(blocks_for(static_cast<int64_t>(prompt.size()), bs_) - 2, more));
    s.blocks.insert(s.blocks.end(), more.begin(), more.end());
    s.computed = 2 * bs_;
    BatchPlan plan;
    add(plan, s, static_cast<int32_t>(prompt.size()) - 2 * bs_, true);
    auto out = run(plan);
    blocks_.release(more);
    close(donor);
    return out;
  }

  Backend& b_;
  BlockAllocator blocks_;
  std::mt19937 rng_;
  int32_t bs_;
};

// Every way equals the first bit for bit; a failure names the way and the largest |Δ|.
inline void expect_bit_identical(const std::vector<LogitsWay>& ways) {
  ASSERT_FALSE(ways.empty());
  const LogitsWay& ref = ways[0];
  for (const float x : ref.logits) ASSERT_TRUE(std::isfinite(x)) << ref.name << ": a logit is not finite";
  for (size_t w = 1; w < ways.size(); ++w) {
    const LogitsWay& way = ways[w];
    ASSERT_EQ(way.logits.size(), ref.logits.size()) << way.name;
    if (std::memcmp(way.logits.data(), ref.logits.data(), ref.logits.size() * sizeof(float)) == 0) continue;
    float max_diff = 0;
    size_t differ = 0;
    for (size_t i = 0; i < ref.logits.size(); ++i) {
      const float d = std::fabs(way.logits[i] - ref.logits[i]);
      if (!(way.logits[i] == ref.logits[i]) || std::signbit(way.logits[i]) != std::signbit(ref.logits[i])) ++differ;
      max_diff = std::max(max_diff, d);
    }
    ADD_FAILURE() << "'" << way.name << "' differs from '" << ref.name << "' in " << differ << " of "
                  << ref.logits.size() << " logits (max |diff| " << max_diff << ")";
  }
}

}  // namespace sy::testing
