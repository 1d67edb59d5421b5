// Decides each step's work: every running decode gets its next token first (in order
// of priority, then arrival), then prompt chunks of running and waiting sequences in
// the same order fill the prefill budget. A sequence that needs KV blocks when none are
// left preempts the least urgent, latest running sequence that is less urgent than it
// (its blocks are freed and it is recomputed later); failing that, a running sequence
// preempts itself and a waiting one waits. Owned by the engine thread.
#pragma once

#include <cstdint>
#include <vector>

#include "common/kv_cache/kv_cache_manager.h"
#include "worker/engine/sequence.h"

namespace sy {

struct ScheduledSeq {
  Sequence* seq;
  int32_t num_tokens;  // tokens[num_computed, num_computed + num_tokens) run this step
  bool sample;         // the chunk reaches the last known token: sample the next one
  bool decode;         // a decode step (outside the prefill budget)
};

struct StepSchedule {
  std::vector<ScheduledSeq> entries;
  std::vector<Sequence*> preempted;  // while scheduling this step; they wait for the next
  bool empty() const { return entries.empty(); }
};

class Scheduler {
 public:
  Scheduler(KvCacheManager& kv, int32_t block_size, int32_t max_num_seqs, int32_t prefill_chunk, uint64_t fingerprint);

  void add(Sequence* s);     // a new request, waiting
  void remove(Sequence* s);  // finished or cancelled: leaves the queues, releases blocks

  StepSchedule schedule();
  // After the step ran: advances num_computed and registers blocks that became full.
  void complete(const StepSchedule& step);

  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool idle() const { return running_.empty() && waiting_.empty(); }

 private:
  void admit(Sequence* s);
  bool ensure_blocks(Sequence* s, int32_t context, StepSchedule& step, int32_t& budget);
  Sequence* pick_victim(const Sequence* for_seq) const;
  void preempt(Sequence* v, StepSchedule& step, int32_t& budget);
  void hash_blocks(Sequence* s, int32_t full_blocks);

  KvCacheManager& kv_;
  int32_t block_size_;
  int32_t max_num_seqs_;
  int32_t prefill_chunk_;
  uint64_t fingerprint_;
  std::vector<Sequence*> running_;
  std::vector<Sequence*> waiting_;
};

}  // namespace sy
