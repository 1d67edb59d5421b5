#include "worker/backend/cuda_context_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_merge.cuh"
#include "worker/parallel/communicator.h"

namespace sy {
namespace {

using bf16 = __nv_bfloat16;

// A position past every context key: the context attention needs no causal mask.
constexpr int32_t kFarPosition = 1 << 30;

// Appends one pseudo-sequence's blocks (first, first + n) to a CSR table.
void add_blocks(std::vector<int32_t>& indptr, std::vector<int32_t>& indices, std::vector<int32_t>& last, int32_t first,
                int32_t n, int32_t last_len) {
  for (int32_t b = 0; b < n; ++b) indices.push_back(first + b);
  indptr.push_back(static_cast<int32_t>(indices.size()));
  last.push_back(n > 0 ? last_len : 0);
}

}  // namespace

CudaContextAttention::CudaContextAttention(parallel::Communicator& comm, const ModelConfig& local, int32_t block_size,
                                           int prefill_kernel, int prefill_warps, cudaStream_t stream)
    : comm_(comm),
      rank_(comm.rank()),
      size_(comm.size()),
      n_heads_(local.n_heads),
      n_kv_heads_(local.n_kv_heads),
      head_dim_(local.head_dim),
      q_(local.q_dim()),
      kv_(local.kv_dim()),
      qkv_(local.q_dim() + 2 * local.kv_dim()),
      hidden_(local.hidden),
      block_size_(block_size),
      prefill_kernel_(prefill_kernel),
      prefill_warps_(prefill_warps),
      stream_(stream) {
  if (size_ < 2 || size_ > kMaxRanks)
    throw std::invalid_argument("cuda context parallelism takes 2.." + std::to_string(kMaxRanks) + " ranks, not " +
                                std::to_string(size_));
  if (hidden_ % 2 != 0 || head_dim_ % 8 != 0)
    throw std::invalid_argument("cuda context parallelism needs an even hidden size and head_dim a multiple of 8");
  if (comm.memory() != parallel::MemoryKind::kDevice)
    throw std::invalid_argument("a cuda context-parallel rank needs a device communicator");
}

void CudaContextAttention::check(cudaError_t e, const char* what) const {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cuda backend: context-parallel ") + what + ": " + cudaGetErrorString(e));
}

void CudaContextAttention::grow(cuda::DeviceBuffer& b, size_t bytes, const char* what) {
  if (b.bytes() >= bytes && b.get()) return;
  check(cudaStreamSynchronize(stream_), "finishing the last step");  // the old buffer may still be read
  check(b.allocate(std::max(bytes, b.bytes() * 2)), what);
}

void CudaContextAttention::gather(const void* send, size_t floats, void* recv, const char* what) {
  const parallel::CommStatus s =
      comm_.all_gather(static_cast<const float*>(send), floats, static_cast<float*>(recv), stream_);
  if (!s.ok())
    throw std::runtime_error(std::string("cuda backend: context-parallel gather of ") + what + " failed: " +
                             parallel::to_string(s.code) + " " + s.message);
}

void CudaContextAttention::plan(const BatchPlan& plan) {
  split_ = split_context(plan, size_);
  const auto& rows = split_.rows;
  own_ = static_cast<int32_t>(rows[static_cast<size_t>(rank_)].size());
  m_ = split_.max_rows();
  const int32_t T = plan.num_tokens(), S = plan.num_seqs(), G = m_ * size_, bs = block_size_;

  // Per plan row: its sequence and position relative to the sequence's first new token.
  std::vector<int32_t> seq_of(static_cast<size_t>(T)), rel(static_cast<size_t>(T));
  std::vector<int32_t> first_block(static_cast<size_t>(S)), n_new(static_cast<size_t>(S));
  any_context_ = false;
  scratch_blocks_ = 0;
  max_new_ = 0;
  for (int32_t s = 0; s < S; ++s) {
    const int32_t r0 = plan.cu_seqlens[s], n = plan.cu_seqlens[s + 1] - r0;
    if (n > 0 && plan.positions[r0] > 0) any_context_ = true;
    for (int32_t i = 0; i < n; ++i) seq_of[static_cast<size_t>(r0 + i)] = s, rel[static_cast<size_t>(r0 + i)] = i;
    n_new[static_cast<size_t>(s)] = n;
    first_block[static_cast<size_t>(s)] = scratch_blocks_;
    scratch_blocks_ += (n + bs - 1) / bs;
    max_new_ = std::max(max_new_, n);
  }
  gathered_.assign(static_cast<size_t>(T), 0);
  for (int32_t r = 0; r < size_; ++r)
    for (size_t i = 0; i < rows[static_cast<size_t>(r)].size(); ++i)
      gathered_[static_cast<size_t>(rows[static_cast<size_t>(r)][i])] = r * m_ + static_cast<int32_t>(i);
  const KvTableStorage ctx = context_shard(plan, bs, rank_, size_);
  max_context_ = 0;
  for (int32_t s = 0; s < S; ++s) max_context_ = std::max(max_context_, static_cast<int32_t>(ctx.table().context_len(s)));

  // Home writes: gathered row g is pseudo-sequence g, holding its block's slot when this
  // rank is the block's home, else nothing (padding rows too).
  std::vector<int32_t> home_cu{0}, home_indptr{0}, home_indices, home_last, home_pos;
  // Runs: consecutive gathered rows of one sequence (a rank's padding is a run of its
  // own, with no blocks), over the scratch cache and over this rank's context shard.
  std::vector<int32_t> run_cu{0}, scratch_indptr{0}, scratch_indices, scratch_last, ctx_indptr{0}, ctx_indices, ctx_last;
  std::vector<int32_t> run_rel(static_cast<size_t>(G), 0);
  std::vector<int32_t> own_cu{0}, own_indptr{0}, own_indices, own_last, own_rel;
  max_run_ = max_own_run_ = 0;
  for (int32_t r = 0; r < size_; ++r) {
    const auto& mine = rows[static_cast<size_t>(r)];
    const auto L = static_cast<int32_t>(mine.size());
    for (int32_t i = 0; i < m_; ++i) {
      home_cu.push_back(r * m_ + i + 1);
      if (i >= L) {
        add_blocks(home_indptr, home_indices, home_last, 0, 0, 0);
        home_pos.push_back(0);
        continue;
      }
      const int32_t t = mine[static_cast<size_t>(i)], s = seq_of[static_cast<size_t>(t)], pos = plan.positions[t];
      const int32_t b = plan.kv_indices[static_cast<size_t>(plan.kv_indptr[s] + pos / bs)];
      const bool home = block_home(b, size_) == rank_;
      add_blocks(home_indptr, home_indices, home_last, block_slot(b, size_), home ? 1 : 0, bs);
      home_pos.push_back(pos % bs);
      run_rel[static_cast<size_t>(r * m_ + i)] = rel[static_cast<size_t>(t)];
    }
    for (int32_t i = 0; i < L;) {
      const int32_t s = seq_of[static_cast<size_t>(mine[static_cast<size_t>(i)])];
      int32_t j = i + 1;
      while (j < L && mine[static_cast<size_t>(j)] == mine[static_cast<size_t>(j - 1)] + 1 &&
             seq_of[static_cast<size_t>(mine[static_cast<size_t>(j)])] == s)
        ++j;
      const int32_t n = n_new[static_cast<size_t>(s)], nb = (n + bs - 1) / bs;
      run_cu.push_back(r * m_ + j);
      add_blocks(scratch_indptr, scratch_indices, scratch_last, first_block[static_cast<size_t>(s)], nb, n - (nb - 1) * bs);
      ctx_indices.insert(ctx_indices.end(), ctx.indices.begin() + ctx.indptr[static_cast<size_t>(s)],
                         ctx.indices.begin() + ctx.indptr[static_cast<size_t>(s) + 1]);
      ctx_indptr.push_back(static_cast<int32_t>(ctx_indices.size()));
      ctx_last.push_back(ctx.last_block_len[static_cast<size_t>(s)]);
      max_run_ = std::max(max_run_, j - i);
      if (r == rank_) {
        own_cu.push_back(j);
        add_blocks(own_indptr, own_indices, own_last, first_block[static_cast<size_t>(s)], nb, n - (nb - 1) * bs);
        max_own_run_ = std::max(max_own_run_, j - i);
      }
      i = j;
    }
    if (L < m_) {  // the padding: a run without keys
      run_cu.push_back((r + 1) * m_);
      add_blocks(scratch_indptr, scratch_indices, scratch_last, 0, 0, 0);
      add_blocks(ctx_indptr, ctx_indices, ctx_last, 0, 0, 0);
    }
  }
  for (const int32_t t : rows[static_cast<size_t>(rank_)]) own_rel.push_back(rel[static_cast<size_t>(t)]);
  runs_ = static_cast<int32_t>(run_cu.size()) - 1;
  own_runs_ = static_cast<int32_t>(own_cu.size()) - 1;

  host_.clear();
  auto put = [&](const std::vector<int32_t>& v) {
    const size_t at = host_.size();
    host_.insert(host_.end(), v.begin(), v.end());
    host_.push_back(0);  // never an empty range: every table has a valid address
    return at;
  };
  t_.home_cu = put(home_cu);
  t_.home_indptr = put(home_indptr);
  t_.home_indices = put(home_indices);
  t_.home_last = put(home_last);
  t_.home_pos = put(home_pos);
  t_.run_cu = put(run_cu);
  t_.scratch_indptr = put(scratch_indptr);
  t_.scratch_indices = put(scratch_indices);
  t_.scratch_last = put(scratch_last);
  t_.ctx_indptr = put(ctx_indptr);
  t_.ctx_indices = put(ctx_indices);
  t_.ctx_last = put(ctx_last);
  t_.run_rel = put(run_rel);
  t_.far_pos = put(std::vector<int32_t>(static_cast<size_t>(G), kFarPosition));
  t_.own_cu = put(own_cu);
  t_.own_indptr = put(own_indptr);
  t_.own_indices = put(own_indices);
  t_.own_last = put(own_last);
  t_.own_rel = put(own_rel);

  const auto g = static_cast<size_t>(G);
  grow(table_, host_.size() * sizeof(int32_t), "allocating its tables");
  grow(qkv_all_, g * static_cast<size_t>(qkv_) * sizeof(bf16), "allocating the gathered QKV");
  const size_t scratch = static_cast<size_t>(std::max(scratch_blocks_, 1)) * bs * static_cast<size_t>(kv_) * sizeof(bf16);
  grow(scratch_k_, scratch, "allocating the new keys");
  grow(scratch_v_, scratch, "allocating the new values");
  grow(own_out_, static_cast<size_t>(std::max(own_, 1)) * static_cast<size_t>(q_) * sizeof(bf16), "allocating partial outputs");
  grow(own_lse_, static_cast<size_t>(std::max(own_, 1)) * n_heads_ * sizeof(float), "allocating partial outputs");
  const size_t part_bytes = g * (static_cast<size_t>(q_) * sizeof(bf16) + static_cast<size_t>(n_heads_) * sizeof(float));
  grow(part_, part_bytes, "allocating partial outputs");
  grow(parts_, part_bytes * size_, "allocating partial outputs");
  // From pageable memory: the copy has read host_ when it returns.
  check(cudaMemcpyAsync(table_.get(), host_.data(), host_.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream_),
        "uploading its tables");
}

void CudaContextAttention::run(const bf16* local_qkv, bf16* k_cache, bf16* v_cache, bf16* out) {
  if (m_ == 0) return;
  const int32_t G = m_ * size_;
  const int32_t* t = table_.as<int32_t>();
  auto* qkv = qkv_all_.as<bf16>();
  gather(local_qkv, static_cast<size_t>(m_) * static_cast<size_t>(qkv_) / 2, qkv, "QKV rows");

  cuda::PagedAttentionArgs base;
  base.n_heads = n_heads_;
  base.n_kv_heads = n_kv_heads_;
  base.head_dim = head_dim_;
  base.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim_)));
  base.block_size = block_size_;
  base.prefill_kernel = prefill_kernel_;
  base.prefill_warps = prefill_warps_;

  // The new keys and values: into this rank's home blocks, and into the scratch cache.
  cuda::PagedAttentionArgs w = base;
  w.k_new = qkv + q_;
  w.v_new = qkv + q_ + kv_;
  w.kv_stride = qkv_;
  w.k_cache = k_cache;
  w.v_cache = v_cache;
  w.cu_seqlens = t + t_.home_cu;
  w.kv_indptr = t + t_.home_indptr;
  w.kv_indices = t + t_.home_indices;
  w.kv_last_block_len = t + t_.home_last;
  w.positions = t + t_.home_pos;
  w.num_seqs = G;
  w.num_tokens = G;
  check(cuda::write_kv_cache(w, stream_), "KV cache write");
  w.k_cache = scratch_k_.as<bf16>();
  w.v_cache = scratch_v_.as<bf16>();
  w.cu_seqlens = t + t_.run_cu;
  w.kv_indptr = t + t_.scratch_indptr;
  w.kv_indices = t + t_.scratch_indices;
  w.kv_last_block_len = t + t_.scratch_last;
  w.positions = t + t_.run_rel;
  w.num_seqs = runs_;
  check(cuda::write_kv_cache(w, stream_), "new-key write");

  // The own rows over the step's new keys.
  cuda::PagedAttentionArgs a = base;
  a.q = local_qkv;
  a.q_stride = qkv_;
  a.k_cache = scratch_k_.as<bf16>();
  a.v_cache = scratch_v_.as<bf16>();
  a.cu_seqlens = t + t_.own_cu;
  a.kv_indptr = t + t_.own_indptr;
  a.kv_indices = t + t_.own_indices;
  a.kv_last_block_len = t + t_.own_last;
  a.positions = t + t_.own_rel;
  a.num_seqs = own_runs_;
  a.num_tokens = own_;
  a.out = any_context_ ? own_out_.as<bf16>() : out;
  a.lse = any_context_ ? own_lse_.as<float>() : nullptr;
  check(cuda::paged_prefill_attention(a, max_own_run_, max_new_, stream_), "attention over the new keys");
  if (!any_context_) return;

  // Every gathered row over the context keys this rank holds, then the parts merged.
  auto* part_out = part_.as<bf16>();
  auto* part_lse = reinterpret_cast<float*>(part_out + static_cast<size_t>(G) * q_);
  cuda::PagedAttentionArgs c = base;
  c.q = qkv;
  c.q_stride = qkv_;
  c.k_cache = k_cache;
  c.v_cache = v_cache;
  c.cu_seqlens = t + t_.run_cu;
  c.kv_indptr = t + t_.ctx_indptr;
  c.kv_indices = t + t_.ctx_indices;
  c.kv_last_block_len = t + t_.ctx_last;
  c.positions = t + t_.far_pos;
  c.num_seqs = runs_;
  c.num_tokens = G;
  c.out = part_out;
  c.lse = part_lse;
  check(cuda::paged_prefill_attention(c, max_run_, max_context_, stream_), "attention over the context shard");
  const size_t part_floats = static_cast<size_t>(G) * (static_cast<size_t>(q_) / 2 + static_cast<size_t>(n_heads_));
  gather(part_out, part_floats, parts_.get(), "partial attention");
  cuda::MergeStatesArgs merge;
  for (int r = 0; r < size_; ++r) {
    const auto* p = reinterpret_cast<const bf16*>(parts_.as<float>() + static_cast<size_t>(r) * part_floats);
    merge.outs[r] = p + static_cast<size_t>(rank_) * m_ * q_;
    merge.lses[r] = reinterpret_cast<const float*>(p + static_cast<size_t>(G) * q_) + static_cast<size_t>(rank_) * m_ * n_heads_;
  }
  merge.outs[size_] = own_out_.as<bf16>();
  merge.lses[size_] = own_lse_.as<float>();
  merge.num_parts = size_ + 1;
  merge.out = out;
  merge.rows = own_;
  merge.heads = n_heads_;
  merge.head_dim = head_dim_;
  check(cuda::merge_attention_states(merge, stream_), "merging partial attention");
}

const bf16* CudaContextAttention::gather_rows(const bf16* local, int64_t width) {
  const size_t g = static_cast<size_t>(m_) * size_;
  grow(rows_, std::max<size_t>(g, 1) * static_cast<size_t>(width) * sizeof(bf16), "allocating gathered rows");
  if (m_ > 0) gather(local, static_cast<size_t>(m_) * static_cast<size_t>(width) / 2, rows_.get(), "final rows");
  return rows_.as<bf16>();
}

}  // namespace sy
