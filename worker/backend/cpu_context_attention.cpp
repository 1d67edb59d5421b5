#include "worker/backend/cpu_context_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/attention_merge.h"
#include "worker/parallel/communicator.h"

namespace sy {
namespace {

void all_gather(parallel::Communicator& comm, const float* send, size_t n, float* recv, const char* what) {
  if (const parallel::CommStatus s = comm.all_gather(send, n, recv); !s.ok())
    throw std::runtime_error(std::string("context-parallel gather of ") + what + " failed: " + parallel::to_string(s.code) + " " + s.message);
}

}  // namespace

void gather_rows(parallel::Communicator& comm, const ContextSplit& split, const float* local, int64_t width, float* full,
                 std::vector<float>& send, std::vector<float>& recv) {
  const int64_t m = split.max_rows();
  if (m == 0) return;
  const auto& own = split.rows[static_cast<size_t>(comm.rank())];
  send.assign(static_cast<size_t>(m * width), 0.0f);
  if (!own.empty()) std::memcpy(send.data(), local, own.size() * static_cast<size_t>(width) * sizeof(float));
  recv.resize(static_cast<size_t>(m * width * split.size));
  all_gather(comm, send.data(), send.size(), recv.data(), "rows");
  for (int32_t r = 0; r < split.size; ++r) {
    const auto& rows = split.rows[static_cast<size_t>(r)];
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(full + rows[i] * width, &recv[static_cast<size_t>((r * m + static_cast<int64_t>(i)) * width)], static_cast<size_t>(width) * sizeof(float));
  }
}

ContextAttention::ContextAttention(const BatchPlan& plan, const ContextSplit& split, int32_t block_size, int n_heads,
                                   int n_kv_heads, int head_dim, parallel::Communicator& comm, cpu::ThreadPool& pool)
    : plan_(plan), split_(split), rank_(comm.rank()), comm_(comm), pool_(pool) {
  base_.n_heads = n_heads;
  base_.n_kv_heads = n_kv_heads;
  base_.head_dim = head_dim;
  base_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  T_ = plan.num_tokens();
  L_ = static_cast<int64_t>(split.rows[static_cast<size_t>(rank_)].size());
  Q_ = int64_t{n_heads} * head_dim;
  KV_ = int64_t{n_kv_heads} * head_dim;
  QKV_ = Q_ + 2 * KV_;

  home_slots_ = home_slots(plan, rank_, split.size);
  context_ = context_shard(plan, block_size, rank_, split.size);
  context_positions_.assign(static_cast<size_t>(T_), 1 << 30);
  // The step's new keys: sequence s's at relative positions 0.. in scratch blocks of its own.
  scratch_.block_size = own_scratch_.block_size = block_size;
  relative_.resize(static_cast<size_t>(T_));
  std::vector<int32_t> first_block(static_cast<size_t>(plan.num_seqs())), blocks;
  int32_t next = 0;
  for (int32_t s = 0; s < plan.num_seqs(); ++s) {
    const int32_t r0 = plan.cu_seqlens[s], n = plan.cu_seqlens[s + 1] - r0;
    if (n > 0 && plan.positions[r0] > 0) any_context_ = true;
    for (int32_t i = 0; i < n; ++i) relative_[static_cast<size_t>(r0 + i)] = i;
    blocks.clear();
    for (int32_t b = 0; b < (n + block_size - 1) / block_size; ++b) blocks.push_back(next++);
    first_block[static_cast<size_t>(s)] = blocks.empty() ? 0 : blocks[0];
    scratch_.add(blocks, n);
  }
  const size_t scratch_floats = static_cast<size_t>(std::max(next, 1)) * block_size * static_cast<size_t>(KV_);
  new_k_.resize(scratch_floats);
  new_v_.resize(scratch_floats);
  // This rank's rows as runs of consecutive rows of one sequence, each attending to its
  // sequence's new keys.
  own_cu_.push_back(0);
  const auto& own = split.rows[static_cast<size_t>(rank_)];
  int32_t s = 0;
  for (size_t i = 0; i < own.size(); ++i) {
    const int32_t row = own[i];
    while (plan.cu_seqlens[s + 1] <= row) ++s;
    own_relative_.push_back(relative_[static_cast<size_t>(row)]);
    const bool run_ends = i + 1 == own.size() || own[i + 1] != row + 1 || own[i + 1] >= plan.cu_seqlens[s + 1];
    if (!run_ends) continue;
    own_cu_.push_back(static_cast<int32_t>(i + 1));
    const int32_t n = plan.cu_seqlens[s + 1] - plan.cu_seqlens[s];
    blocks.clear();
    for (int32_t b = 0; b < (n + block_size - 1) / block_size; ++b) blocks.push_back(first_block[static_cast<size_t>(s)] + b);
    own_scratch_.add(blocks, n);
  }
  qkv_.resize(static_cast<size_t>(T_ * QKV_));
  own_out_.resize(static_cast<size_t>(L_ * Q_));
  own_lse_.resize(static_cast<size_t>(L_ * n_heads));
}

void ContextAttention::run(const float* local_qkv, cpu::KvLayer cache, float* out) {
  if (T_ == 0) return;
  gather_rows(comm_, split_, local_qkv, QKV_, qkv_.data(), send_, parts_);

  // The new keys and values: into this rank's home blocks, and into the scratch cache.
  cpu::AttentionParams w = base_;
  w.k_new = qkv_.data() + Q_;
  w.v_new = qkv_.data() + Q_ + KV_;
  w.kv_stride = QKV_;
  w.cu_seqlens = plan_.cu_seqlens.data();
  w.cache = cache;
  w.table = {plan_.kv_indptr.data(), home_slots_.data(), plan_.kv_last_block_len.data(), plan_.num_seqs(), scratch_.block_size};
  w.positions = plan_.positions.data();
  cpu::write_kv(w);
  w.cache = {new_k_.data(), new_v_.data()};
  w.table = scratch_.table();
  w.positions = relative_.data();
  cpu::write_kv(w);

  // The own rows over the step's new keys.
  cpu::AttentionParams a = base_;
  a.q = local_qkv;
  a.q_stride = QKV_;
  a.cache = {new_k_.data(), new_v_.data()};
  a.table = own_scratch_.table();
  a.cu_seqlens = own_cu_.data();
  a.positions = own_relative_.data();
  a.out = any_context_ ? own_out_.data() : out;
  a.lse = any_context_ ? own_lse_.data() : nullptr;
  cpu::paged_attention(a, pool_);
  if (!any_context_) return;

  // Every row of the step over the context keys this rank holds, then the parts merged.
  const int64_t H = base_.n_heads, per_rank = T_ * (Q_ + H);
  part_.resize(static_cast<size_t>(per_rank));
  cpu::AttentionParams c = base_;
  c.q = qkv_.data();
  c.q_stride = QKV_;
  c.cache = cache;
  c.table = context_.table();
  c.cu_seqlens = plan_.cu_seqlens.data();
  c.positions = context_positions_.data();
  c.out = part_.data();
  c.lse = part_.data() + T_ * Q_;
  cpu::paged_attention(c, pool_);
  parts_.resize(static_cast<size_t>(per_rank * split_.size));
  all_gather(comm_, part_.data(), part_.size(), parts_.data(), "partial attention");
  const auto& own = split_.rows[static_cast<size_t>(rank_)];
  std::vector<const float*> outs(static_cast<size_t>(split_.size) + 1), lses(outs.size());
  for (int64_t i = 0; i < L_; ++i) {
    const int64_t t = own[static_cast<size_t>(i)];
    for (int32_t r = 0; r < split_.size; ++r) {
      const float* p = parts_.data() + r * per_rank;
      outs[static_cast<size_t>(r)] = p + t * Q_;
      lses[static_cast<size_t>(r)] = p + T_ * Q_ + t * H;
    }
    outs.back() = own_out_.data() + i * Q_;
    lses.back() = own_lse_.data() + i * H;
    cpu::merge_attention_states(outs.data(), lses.data(), static_cast<int>(outs.size()), out + i * Q_, nullptr, 1,
                                static_cast<int>(H), base_.head_dim);
  }
}

}  // namespace sy
