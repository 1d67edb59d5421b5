#include "worker/engine/scheduler.h"

#include <algorithm>

#include "common/check.h"
#include "policy/block_hash.h"
#include "worker/engine/block_allocator.h"

namespace sy {
namespace {

bool before(const Sequence* a, const Sequence* b) { return a->order_key() < b->order_key(); }

}  // namespace

Scheduler::Scheduler(KvCacheManager& kv, int32_t block_size, int32_t max_num_seqs, int32_t prefill_chunk, uint64_t fingerprint)
    : kv_(kv), block_size_(block_size), max_num_seqs_(max_num_seqs), prefill_chunk_(prefill_chunk), fingerprint_(fingerprint) {
  SY_CHECK(block_size > 0 && max_num_seqs > 0 && prefill_chunk > 0);
}

void Scheduler::add(Sequence* s) { waiting_.push_back(s); }

void Scheduler::remove(Sequence* s) {
  std::erase(running_, s);
  std::erase(waiting_, s);
  kv_.release(s->blocks);
  s->blocks.clear();
  s->num_computed = 0;
  s->registered_blocks = 0;
  s->running = false;
}

void Scheduler::hash_blocks(Sequence* s, int32_t full_blocks) {
  while (static_cast<int32_t>(s->block_hashes.size()) < full_blocks) {
    const size_t i = s->block_hashes.size();
    const uint64_t prev = i == 0 ? fingerprint_ : s->block_hashes[i - 1];
    s->block_hashes.push_back(policy::chain_block_hash(
        prev, std::span<const int32_t>(s->tokens).subspan(i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_))));
  }
}

// Takes the cached prefix of a waiting sequence. At least one token is left to compute,
// since the step that computes it produces the logits to sample from.
void Scheduler::admit(Sequence* s) {
  SY_CHECK(s->blocks.empty() && s->num_computed == 0);
  const auto len = static_cast<int32_t>(s->tokens.size());
  const int32_t matchable = (len - 1) / block_size_;
  hash_blocks(s, matchable);
  std::vector<uint64_t> hashes(s->block_hashes.begin(), s->block_hashes.begin() + matchable);
  const int32_t matched = kv_.match_prefix(hashes, s->blocks);
  s->num_computed = matched * block_size_;
  s->registered_blocks = matched;
  if (s->cached_tokens < 0) s->cached_tokens = std::min(s->num_computed, s->prompt_len);
}

Sequence* Scheduler::pick_victim(const Sequence* for_seq) const {
  Sequence* victim = nullptr;
  for (Sequence* r : running_)
    if (r != for_seq && before(for_seq, r) && (!victim || before(victim, r))) victim = r;
  return victim;
}

void Scheduler::preempt(Sequence* v, StepSchedule& step, int32_t& budget) {
  for (auto it = step.entries.begin(); it != step.entries.end(); ++it) {
    if (it->seq != v) continue;
    if (!it->decode) budget += it->num_tokens;  // a prefill chunk returns its budget
    step.entries.erase(it);
    break;
  }
  kv_.release(v->blocks);
  v->blocks.clear();
  v->num_computed = 0;
  v->registered_blocks = 0;
  v->running = false;
  std::erase(running_, v);
  waiting_.push_back(v);
  step.preempted.push_back(v);
}

bool Scheduler::ensure_blocks(Sequence* s, int32_t context, StepSchedule& step, int32_t& budget) {
  const int32_t need = blocks_for(context, block_size_) - static_cast<int32_t>(s->blocks.size());
  if (need <= 0) return true;
  while (kv_.num_available() < need) {
    Sequence* v = pick_victim(s);
    if (!v) return false;
    preempt(v, step, budget);
  }
  return kv_.allocate(need, s->blocks);
}

StepSchedule Scheduler::schedule() {
  StepSchedule step;
  int32_t budget = prefill_chunk_;
  std::sort(running_.begin(), running_.end(), before);

  // Decodes first, most urgent first.
  const std::vector<Sequence*> running = running_;
  for (Sequence* s : running) {
    if (!s->running || s->remaining() != 1) continue;  // preempted meanwhile, or prefilling
    if (!ensure_blocks(s, s->num_computed + 1, step, budget)) {
      preempt(s, step, budget);
      continue;
    }
    step.entries.push_back({s, 1, true, true});
  }

  // Then prompt chunks, of running and waiting sequences alike, by priority and arrival.
  std::vector<Sequence*> candidates;
  for (Sequence* s : running_)
    if (s->remaining() > 1) candidates.push_back(s);
  for (Sequence* s : waiting_) candidates.push_back(s);
  std::sort(candidates.begin(), candidates.end(), before);
  for (Sequence* s : candidates) {
    if (budget <= 0) break;
    if (std::find(step.preempted.begin(), step.preempted.end(), s) != step.preempted.end()) continue;
    const bool was_waiting = !s->running;
    if (was_waiting) {
      if (num_running() >= max_num_seqs_) {
        Sequence* v = pick_victim(s);
        if (!v || priority_class(v->priority()) == priority_class(s->priority())) break;  // only a more urgent class takes a seat
        preempt(v, step, budget);
      }
      admit(s);
    }
    const int32_t n = std::min(s->remaining(), budget);
    if (!ensure_blocks(s, s->num_computed + n, step, budget)) {
      if (was_waiting) {  // give back the cached prefix it took; it waits
        kv_.release(s->blocks);
        s->blocks.clear();
        s->num_computed = 0;
        s->registered_blocks = 0;
        break;
      }
      preempt(s, step, budget);  // holding blocks without progress would starve others
      continue;
    }
    if (was_waiting) {
      std::erase(waiting_, s);
      running_.push_back(s);
      s->running = true;
    }
    budget -= n;
    step.entries.push_back({s, n, s->num_computed + n == static_cast<int32_t>(s->tokens.size()), false});
  }
  return step;
}

void Scheduler::complete(const StepSchedule& step) {
  for (const ScheduledSeq& e : step.entries) {
    Sequence* s = e.seq;
    s->num_computed += e.num_tokens;
    const int32_t full = s->num_computed / block_size_;
    hash_blocks(s, full);
    for (; s->registered_blocks < full; ++s->registered_blocks)
      kv_.register_full_block(s->blocks[static_cast<size_t>(s->registered_blocks)], s->block_hashes[static_cast<size_t>(s->registered_blocks)]);
  }
}

}  // namespace sy
