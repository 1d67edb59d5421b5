// Scheduler decisions as table rows: each row is a scenario of arrivals and steps with
// the expected plan of every step, written "name:tokens" (+"*" when the step samples
// the sequence, "-name" for a preemption).
#include "worker/engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>

#include "common/tokenizer/tokenizer.h"
#include "fixture_util.h"

namespace sy {
namespace {

struct Arrival {
  std::string name;
  int32_t priority;
  int32_t prompt_len;
};

struct StepRow {
  std::vector<Arrival> arrivals;  // submitted before this step
  std::string expected;           // the step's plan
};

struct Scenario {
  std::string name;
  int32_t kv_blocks, max_num_seqs, prefill_chunk;
  std::vector<StepRow> steps;
};

constexpr int32_t kBlockSize = 4;

class Harness {
 public:
  Harness(const Scenario& sc, const Tokenizer& tok)
      : tok_(tok), kv_(sc.kv_blocks, true, nullptr), sched_(kv_, kBlockSize, sc.max_num_seqs, sc.prefill_chunk, 1) {}

  void arrive(const Arrival& a) {
    EngineRequest r;
    r.id = a.name;
    r.priority = a.priority;
    for (int32_t i = 0; i < a.prompt_len; ++i) r.prompt_ids.push_back(1000 * static_cast<int32_t>(seqs_.size() + 1) + i);
    auto s = std::make_unique<Sequence>(std::move(r), seqs_.size(), 0, tok_);
    s->tokens = s->request.prompt_ids;
    s->prompt_len = static_cast<int32_t>(s->tokens.size());
    sched_.add(s.get());
    names_[s.get()] = a.name;
    seqs_.push_back(std::move(s));
  }

  // Runs one step and describes it; sampled sequences get a token, as the engine does.
  std::string step() {
    const StepSchedule st = sched_.schedule();
    std::string out;
    for (Sequence* p : st.preempted) out += (out.empty() ? "" : " ") + std::string("-") + names_[p];
    for (const ScheduledSeq& e : st.entries)
      out += (out.empty() ? "" : " ") + names_[e.seq] + ":" + std::to_string(e.num_tokens) + (e.sample ? "*" : "");
    sched_.complete(st);
    for (const ScheduledSeq& e : st.entries)
      if (e.sample) e.seq->tokens.push_back(7);
    return out;
  }

 private:
  const Tokenizer& tok_;
  KvCacheManager kv_;
  Scheduler sched_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  std::map<const Sequence*, std::string> names_;
};

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> rows = {
      {"decodes first, then prompt chunks by priority within the budget", 100, 8, 8,
       {{{{"A", kPriorityBatch, 20}, {"B", kPriorityInteractive, 6}}, "B:6* A:2"},
        {{}, "B:1* A:8"},
        {{}, "B:1* A:8"},
        {{}, "B:1* A:2*"},
        {{}, "B:1* A:1*"}}},
      {"an interactive arrival takes the next step's budget from a long batch prefill", 100, 8, 8,
       {{{{"A", kPriorityBatch, 40}}, "A:8"},
        {{}, "A:8"},
        {{{"I", kPriorityInteractive, 5}}, "I:5* A:3"},
        {{}, "I:1* A:8"}}},
      {"a more urgent class takes a seat from the least urgent when all seats are taken", 100, 1, 8,
       {{{{"A", kPriorityBatch, 4}}, "A:4*"},
        {{{"I", kPriorityInteractive, 4}}, "-A I:4*"},
        {{}, "I:1*"}}},
      {"the same class waits for a seat", 100, 1, 8,
       {{{{"A", kPriorityStandard, 4}}, "A:4*"},
        {{{"B", kPriorityStandard, 4}}, "A:1*"},
        {{}, "A:1*"}}},
      {"out of blocks, the least urgent latest sequence is preempted, never a more urgent one", 4, 8, 16,
       // 4 blocks of 4 tokens: A (interactive) and B (batch) take two each.
       {{{{"A", kPriorityInteractive, 7}, {"B", kPriorityBatch, 7}}, "A:7* B:7*"},
        {{}, "A:1* B:1*"},  // both now hold 8 tokens in 2 full blocks
        {{}, "-B A:1*"},    // A needs a third block: B gives up its blocks
        {{}, "A:1*"},       // B cannot come back while A holds 3 of 4 blocks
       }},
  };
  return rows;
}

TEST(Scheduler, Scenarios) {
  auto src = ModelSource::open(testing::fixture_path("qwen3-tiny-bf16.gguf"));
  auto tok = Tokenizer::from_model(*src);
  for (const Scenario& sc : scenarios()) {
    Harness h(sc, *tok);
    for (size_t i = 0; i < sc.steps.size(); ++i) {
      for (const Arrival& a : sc.steps[i].arrivals) h.arrive(a);
      EXPECT_EQ(h.step(), sc.steps[i].expected) << sc.name << ", step " << i + 1;
    }
  }
}

}  // namespace
}  // namespace sy
