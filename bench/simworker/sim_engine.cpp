#include "bench/simworker/sim_engine.h"

#include <algorithm>

#include "bench/simworker/sim_request.h"
#include "policy/block_hash.h"

namespace sy::sim {

SimEngine::SimEngine(SimEngineOptions options)
    : options_(options), kv_(options.kv_blocks, options.prefix_caching, &hub_, options.kv_host_blocks) {
  if (!options_.shared_prefill_path.empty())
    shared_prefill_ = std::make_unique<SharedTimeline>(
        options_.shared_prefill_path, options_.sliced_prefill ? SharedTimeline::Sharing::kSliced : SharedTimeline::Sharing::kFifo);
  update_gauges();
}

SharedTimeline::Queued SimEngine::queue_prefill(double ms) {
  using namespace std::chrono;
  std::lock_guard<std::mutex> lock(mu_);
  if (shared_prefill_) return shared_prefill_->queue(ms);
  const auto now = steady_clock::now();
  prefill_free_at_ = std::max(prefill_free_at_, now) + duration_cast<steady_clock::duration>(duration<double, std::milli>(ms));
  return {.done_in_ms = duration<double, std::milli>(prefill_free_at_ - now).count()};
}

double SimEngine::prefill_left_ms(const SharedTimeline::Queued& q) {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_prefill_ ? shared_prefill_->left_ms(q) : 0;
}

void SimEngine::decoding(int32_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  decoding_ += delta;
  if (options_.sliced_decode && shared_prefill_) shared_prefill_->set_decoding(decoding_);
}

double SimEngine::decode_slowdown() {
  if (!options_.sliced_decode) return 1;
  std::lock_guard<std::mutex> lock(mu_);
  return shared_prefill_ ? std::max<int32_t>(1, shared_prefill_->decoders()) : 1;
}

uint64_t SimEngine::draw_seed() {
  std::lock_guard<std::mutex> lock(mu_);
  return rng_();
}

bool SimEngine::submit(const std::shared_ptr<SimRequest>& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = live_.try_emplace(r->id());
  if (!fresh) return false;
  Slot& s = it->second;
  s.request = r;
  s.arrival = next_arrival_++;
  waiting_.push_back(&s);
  stats_.prompt_tokens_total += r->prompt_tokens();
  admit_waiting();
  update_gauges();
  return true;
}

// Most urgent first, then earliest; a request that does not fit blocks those behind it
// (as the worker's scheduler stops at the first prefill it cannot place).
void SimEngine::admit_waiting() {
  auto before = [](const Slot* a, const Slot* b) {
    return std::pair(a->request->priority(), a->arrival) < std::pair(b->request->priority(), b->arrival);
  };
  std::sort(waiting_.begin(), waiting_.end(), before);
  while (!waiting_.empty() && running_ < options_.max_num_seqs && try_admit(*waiting_.front()))
    waiting_.erase(waiting_.begin());
  kv_.flush_events();
}

// Takes the cached prefix and reserves blocks for the whole request. At least one token
// is left to compute, as in the worker, since that step produces the first token.
bool SimEngine::try_admit(Slot& s) {
  const SimRequest& r = *s.request;
  const int32_t bs = options_.block_size;
  const auto& tokens = r.start_tokens();
  const int32_t matchable = (static_cast<int32_t>(tokens.size()) - 1) / bs;
  s.hashes = policy::prefix_block_hashes(
      options_.model_fingerprint, std::span<const int32_t>(tokens).first(static_cast<size_t>(matchable) * bs), bs);
  const int32_t matched = kv_.match_prefix(s.hashes, s.blocks);
  const int32_t need = (r.max_context() + bs - 1) / bs - matched;
  const bool fits = kv_.allocate(need, s.blocks);
  // The host tier's copies are only timed, and only the loads (the request waits for
  // them); saves are left out, though on the GPU a block costs as much either way.
  int32_t loaded = 0;
  for (const KvCopy& c : kv_.take_copies()) loaded += c.to_host ? 0 : 1;
  if (!fits) {
    kv_.release(s.blocks);
    s.blocks.clear();
    return false;
  }
  s.registered = matched;
  s.running = true;
  ++running_;
  s.request->admitted(std::min(matched * bs, r.prompt_tokens()), loaded * bs);
  return true;
}

void SimEngine::computed(SimRequest& r, std::span<const int32_t> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(r.id());
  if (it == live_.end() || it->second.request.get() != &r || !it->second.running) return;
  Slot& s = it->second;
  const int32_t bs = options_.block_size;
  const auto full = static_cast<int32_t>(tokens.size()) / bs;
  while (static_cast<int32_t>(s.hashes.size()) < full) {
    const size_t i = s.hashes.size();
    const uint64_t prev = i == 0 ? options_.model_fingerprint : s.hashes.back();
    s.hashes.push_back(policy::chain_block_hash(prev, tokens.subspan(i * static_cast<size_t>(bs), static_cast<size_t>(bs))));
  }
  for (; s.registered < full; ++s.registered)
    kv_.register_full_block(s.blocks[static_cast<size_t>(s.registered)], s.hashes[static_cast<size_t>(s.registered)]);
  kv_.flush_events();
  update_gauges();
}

void SimEngine::release(Slot& s) {
  if (s.running) --running_;
  kv_.release(s.blocks);
  s.blocks.clear();
  s.running = false;
}

void SimEngine::finished(SimRequest& r, bool aborted) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(r.id());
  if (it == live_.end() || it->second.request.get() != &r) return;
  Slot& s = it->second;
  release(s);
  std::erase(waiting_, &s);
  live_.erase(it);
  if (aborted)
    ++stats_.requests_aborted_total;
  else
    ++stats_.requests_finished_total;
  admit_waiting();
  update_gauges();
}

void SimEngine::abort_all() {
  std::vector<std::shared_ptr<SimRequest>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : live_) all.push_back(s.request);
  }
  for (auto& r : all) r->abort();
}

void SimEngine::update_gauges() {
  stats_.requests_running = running_;
  stats_.requests_waiting = static_cast<int64_t>(waiting_.size());
  stats_.kv_blocks_used = kv_.num_used();
  stats_.kv_blocks_total = kv_.num_blocks();
  stats_.kv_host_blocks_capacity = kv_.num_host_blocks();
  stats_.kv_host_blocks_saved_total = kv_.host_blocks_saved();
  stats_.kv_host_blocks_loaded_total = kv_.host_blocks_loaded();
}

}  // namespace sy::sim
