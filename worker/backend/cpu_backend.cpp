#include "worker/backend/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/invariant_gemm.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/backend/cpu_context_attention.h"
#include "worker/backend/step_profile.h"
#include "worker/model/decoder.h"
#include "worker/model/observed_ops.h"
#include "worker/parallel/communicator.h"

namespace sy {
namespace {

// Never empty: a context-parallel rank can run no rows in a step, and its ops still
// index element 0 of an empty range.
void grow(std::vector<float>& v, size_t n) {
  if (v.size() < std::max<size_t>(n, 1)) v.resize(std::max<size_t>(n, 1));
}

// Splits `rows` rows into chunks for the pool; elementwise kernels are cheap per row.
// No rows, no call (a context-parallel rank may run none in a step).
template <typename Fn>
void for_row_chunks(cpu::ThreadPool& pool, int64_t rows, Fn&& fn) {
  if (rows <= 0) return;
  const int64_t chunks = std::min<int64_t>(rows, pool.size() * 4);
  if (chunks <= 1) {
    fn(0, rows);
    return;
  }
  pool.parallel_for(chunks, [&](int64_t c) { fn(rows * c / chunks, rows * (c + 1) / chunks); });
}

}  // namespace

// The decoder's ops (worker/model/decoder.h) over one plan, on this rank's buffers:
// x_ (fp32 residual), h_ (normalized), qkv_, attn_, proj_ (delta), gate_up_, act_. A
// context-parallel rank's buffers hold only its own rows of the plan.
class CpuBackend::Step : public DecoderOps {
 public:
  Step(CpuBackend& b, const BatchPlan& plan)
      : b_(b), plan_(plan), c_(b.local_), split_(own_rows(b, plan)), T_(static_cast<int64_t>(tokens_.size())), H_(c_.hidden),
        Q_(c_.q_dim()), KV_(c_.kv_dim()), F_(c_.ffn), QKV_(Q_ + 2 * KV_) {
    grow(b.x_, static_cast<size_t>(T_ * H_));
    grow(b.h_, static_cast<size_t>(T_ * H_));
    grow(b.qkv_, static_cast<size_t>(T_ * QKV_));
    grow(b.attn_, static_cast<size_t>(T_ * Q_));
    grow(b.proj_, static_cast<size_t>(T_ * H_));
    grow(b.gate_up_, static_cast<size_t>(T_ * 2 * F_));
    grow(b.act_, static_cast<size_t>(T_ * F_));
    ap_.n_heads = c_.n_heads;
    ap_.n_kv_heads = c_.n_kv_heads;
    ap_.head_dim = c_.head_dim;
    ap_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.head_dim)));
    // A context-parallel rank may run no rows this step (T_ 0: its buffers may be empty).
    float* qkv = T_ > 0 ? b.qkv_.data() : nullptr;
    ap_.q = qkv;
    ap_.q_stride = QKV_;
    ap_.k_new = qkv ? qkv + Q_ : nullptr;
    ap_.v_new = qkv ? qkv + Q_ + KV_ : nullptr;
    ap_.kv_stride = QKV_;
    ap_.out = b.attn_.data();
    ap_.table = plan.kv_table(b.block_size_);
    ap_.cu_seqlens = plan.cu_seqlens.data();
    ap_.positions = plan.positions.data();
    if (b.cp_comm_)
      cp_attention_.emplace(plan, split_, b.block_size_, c_.n_heads, c_.n_kv_heads, c_.head_dim, *b.cp_comm_, *b.pool_);
  }

  void embed() override {
    for (int64_t t = 0; t < T_; ++t) b_.weights_.embedding_row(tokens_[static_cast<size_t>(t)], &b_.x_[static_cast<size_t>(t * H_)]);
  }

  void attention_norm(int l) override { norm(layer(l).attn_norm.data(), l > 0); }

  void qkv_projection(int l) override {
    const LayerWeights& L = layer(l);
    b_.matmul(b_.h_.data(), L.wqkv, b_.qkv_.data(), T_);
    if (L.bqkv.empty() && !c_.qk_norm) return;
    for_row_chunks(*b_.pool_, T_, [&](int64_t r0, int64_t r1) {
      for (int64_t t = r0; t < r1; ++t) {
        float* row = &b_.qkv_[static_cast<size_t>(t * QKV_)];
        if (!L.bqkv.empty())
          for (int64_t i = 0; i < QKV_; ++i) row[i] += L.bqkv[static_cast<size_t>(i)];
        if (c_.qk_norm) {
          cpu::rms_norm(row, L.q_norm.data(), row, c_.n_heads, c_.head_dim, c_.rms_eps);
          cpu::rms_norm(row + Q_, L.k_norm.data(), row + Q_, c_.n_kv_heads, c_.head_dim, c_.rms_eps);
        }
      }
    });
  }

  // Rotates queries and keys by angles computed once per step (the first layer's call),
  // and stores the rows' keys and values, each chunk of rows on its own thread.
  void rope_and_cache(int l) override {
    const size_t at = b_.layer_kv_floats_ * 2 * static_cast<size_t>(l);
    if (b_.kv16_) {
      ap_.cache.k16 = b_.kv16_.get() + at;
      ap_.cache.v16 = ap_.cache.k16 + b_.layer_kv_floats_;
    } else {
      ap_.cache.k = b_.kv_.get() + at;
      ap_.cache.v = ap_.cache.k + b_.layer_kv_floats_;
    }
    const int64_t half = b_.rope_.rot_dim / 2;
    const bool first = rope_cos_.empty();
    if (first) {
      rope_cos_.resize(static_cast<size_t>(T_ * half));
      rope_sin_.resize(rope_cos_.size());
    }
    for_row_chunks(*b_.pool_, T_, [&](int64_t r0, int64_t r1) {
      float* cos = &rope_cos_[static_cast<size_t>(r0 * half)];
      float* sin = &rope_sin_[static_cast<size_t>(r0 * half)];
      if (first) cpu::rope_angles(&positions_[static_cast<size_t>(r0)], r1 - r0, b_.rope_, cos, sin);
      cpu::rope(&b_.qkv_[r0 * QKV_], r1 - r0, QKV_, c_.n_heads, cos, sin, b_.rope_);
      cpu::rope(&b_.qkv_[r0 * QKV_ + Q_], r1 - r0, QKV_, c_.n_kv_heads, cos, sin, b_.rope_);
      if (!cp_attention_) cpu::write_kv(ap_, r0, r1);  // a context-parallel rank stores its blocks' keys in attention()
    });
  }

  void attention(int) override {
    if (cp_attention_)
      cp_attention_->run(b_.qkv_.data(), ap_.cache, b_.attn_.data());
    else
      cpu::paged_attention(ap_, *b_.pool_);
  }

  void output_projection(int l) override { b_.matmul(b_.attn_.data(), layer(l).wo, b_.proj_.data(), T_); }

  void mlp_norm(int l) override { norm(layer(l).ffn_norm.data(), true); }

  void gate_up(int l) override {
    b_.matmul(b_.h_.data(), layer(l).w_gate_up, b_.gate_up_.data(), T_);
    for_row_chunks(*b_.pool_, T_, [&](int64_t r0, int64_t r1) { cpu::silu_mul(&b_.gate_up_[r0 * 2 * F_], &b_.act_[r0 * F_], r1 - r0, F_); });
  }

  void down_projection(int l) override { b_.matmul(b_.act_.data(), layer(l).w_down, b_.proj_.data(), T_); }

  void all_reduce_delta() override { b_.all_reduce(b_.proj_.data(), static_cast<size_t>(T_ * H_)); }

  // Only the rows whose logits are wanted: x + delta, normalized, into last_. A
  // context-parallel rank first gathers every rank's rows of x + delta.
  void final_norm() override {
    const auto R = static_cast<int64_t>(plan_.logits_rows.size());
    b_.last_.resize(static_cast<size_t>(R * H_));
    const float* x = b_.x_.data();
    const float* delta = b_.proj_.data();
    if (cp_attention_) {
      for (size_t i = 0; i < static_cast<size_t>(T_ * H_); ++i) b_.x_[i] += b_.proj_[i];
      grow(b_.rows_, static_cast<size_t>(plan_.num_tokens() * H_));
      gather_rows(*b_.cp_comm_, split_, b_.x_.data(), H_, b_.rows_.data(), b_.send_, b_.recv_);
      x = b_.rows_.data();
      delta = nullptr;
    }
    for (int64_t i = 0; i < R; ++i) {
      const int64_t t = plan_.logits_rows[static_cast<size_t>(i)];
      for (int64_t k = 0; k < H_; ++k)
        b_.last_[static_cast<size_t>(i * H_ + k)] = x[t * H_ + k] + (delta ? delta[t * H_ + k] : 0.0f);
    }
    cpu::rms_norm(b_.last_.data(), b_.weights_.output_norm.data(), b_.last_.data(), R, H_, c_.rms_eps);
  }

 private:
  const LayerWeights& layer(int l) const { return b_.weights_.layers[static_cast<size_t>(l)]; }
  // h = norm(x (+= delta)).
  void norm(const float* weight, bool add) {
    for_row_chunks(*b_.pool_, T_, [&](int64_t r0, int64_t r1) {
      if (add)
        cpu::add_rms_norm(&b_.x_[r0 * H_], &b_.proj_[r0 * H_], weight, &b_.h_[r0 * H_], r1 - r0, H_, c_.rms_eps);
      else
        cpu::rms_norm(&b_.x_[r0 * H_], weight, &b_.h_[r0 * H_], r1 - r0, H_, c_.rms_eps);
    });
  }

  // This rank's rows of the plan (every row without context parallelism), their tokens
  // and positions.
  ContextSplit own_rows(const CpuBackend& b, const BatchPlan& plan) {
    ContextSplit split = split_context(plan, b.cp_size_);
    for (const int32_t t : split.rows[static_cast<size_t>(b.cp_comm_ ? b.cp_comm_->rank() : 0)]) {
      tokens_.push_back(plan.token_ids[static_cast<size_t>(t)]);
      positions_.push_back(plan.positions[static_cast<size_t>(t)]);
    }
    return split;
  }

  CpuBackend& b_;
  const BatchPlan& plan_;
  const ModelConfig& c_;
  std::vector<int32_t> tokens_, positions_;
  std::vector<float> rope_cos_, rope_sin_;  // [T_ × rot_dim/2]: this step's angles, from the first layer on
  const ContextSplit split_;
  const int64_t T_, H_, Q_, KV_, F_, QKV_;
  cpu::AttentionParams ap_;
  std::optional<ContextAttention> cp_attention_;
};

CpuBackend::CpuBackend(const ModelSource& src, const ModelConfig& config, const BackendOptions& options, TensorParallel tp,
                       parallel::Communicator* comm, ContextParallel cp, parallel::Communicator* cp_comm)
    : own_src_(options.cpu_float32_weights ? nullptr : ModelSource::open(src.path())),
      weights_(ModelWeights::load(own_src_ ? *own_src_ : src, config, RankShape::of(config, tp), options.cpu_float32_weights)),
      local_(weights_.shape.local(config)),
      block_size_(options.block_size),
      deterministic_(options.deterministic.value_or(true)),
      amx_(options.tuning.cpu_amx),
      prefetch_(options.tuning.cpu_prefetch),
      comm_(comm),
      cp_comm_(cp.size > 1 ? cp_comm : nullptr),
      cp_size_(cp.size) {
  if (block_size_ <= 0 || block_size_ > 1024) throw std::invalid_argument("block size must be in 1..1024");
  if (tp.size > 1 && (!comm || comm->size() != tp.size || comm->rank() != tp.rank || comm->memory() != parallel::MemoryKind::kHost))
    throw std::invalid_argument("a cpu tensor-parallel rank needs its own end of a host communicator of tp ranks");
  if (cp.size < 1 || cp.rank < 0 || cp.rank >= cp.size)
    throw std::invalid_argument("context-parallel rank " + std::to_string(cp.rank) + " of " + std::to_string(cp.size));
  if (cp.size > 1 && (!cp_comm || cp_comm->size() != cp.size || cp_comm->rank() != cp.rank || cp_comm->memory() != parallel::MemoryKind::kHost))
    throw std::invalid_argument("a cpu context-parallel rank needs its own end of a host communicator of pcp ranks");
  if (tp.size > 1 || cp.size > 1) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    own_pool_ = std::make_unique<cpu::ThreadPool>(std::max(1, static_cast<int>(hw) / (tp.size * cp.size)));
    pool_ = own_pool_.get();
  } else {
    pool_ = &cpu::ThreadPool::global();
  }
  rope_.head_dim = config.head_dim;
  rope_.rot_dim = config.rope_dim;
  rope_.layout = config.rope_layout;
  rope_.inv_freq = cpu::rope_inv_freq(config.rope_dim, config.rope_theta, config.rope_freq_factors, config.rope_inv_freq_bf16);
  if (options.cpu_kv_f16 && cp.size > 1)
    throw std::invalid_argument("a float16 KV cache is not supported with context parallelism (pcp > 1) on the cpu backend yet");
  const size_t per_block = kv_bytes_per_block(local_, block_size_, options.cpu_kv_f16 ? sizeof(uint16_t) : sizeof(float));
  num_blocks_ = options.num_kv_blocks > 0 ? options.num_kv_blocks : static_cast<int32_t>(std::min<size_t>(options.kv_memory_bytes / per_block, INT32_MAX));
  if (num_blocks_ <= 0) throw std::invalid_argument("KV memory budget holds no block");
  if (static_cast<int64_t>(num_blocks_) * cp_size_ > INT32_MAX) num_blocks_ = INT32_MAX / cp_size_;
  layer_kv_floats_ = static_cast<size_t>(num_blocks_) * static_cast<size_t>(block_size_) * static_cast<size_t>(local_.kv_dim());
  // Not zeroed: pages are touched only when a block is first written.
  if (options.cpu_kv_f16)
    kv16_.reset(new uint16_t[layer_kv_floats_ * 2 * static_cast<size_t>(config.n_layers)]);
  else
    kv_.reset(new float[layer_kv_floats_ * 2 * static_cast<size_t>(config.n_layers)]);
  if (options.kv_host_memory_bytes > 0) {
    if (cp.size > 1)
      throw std::invalid_argument("a context-parallel rank's KV host tier is its group's (create_cpu_group), not its own");
    const size_t slot = host_slot_bytes();
    const auto blocks = static_cast<int32_t>(std::min<size_t>(options.kv_host_memory_bytes / slot, INT32_MAX));
    if (blocks <= 0) throw std::invalid_argument("the KV host memory budget holds no block");
    const size_t bytes = static_cast<size_t>(blocks) * slot;
    background_host_.start(blocks, [bytes] { return std::shared_ptr<char[]>(new char[bytes]); });
  }
}

int32_t CpuBackend::take_host_tier() { return background_host_.take(host_kv_, num_host_blocks_); }

void CpuBackend::share_host_tier(std::shared_future<std::shared_ptr<char[]>> allocation, int32_t count) {
  background_host_.start(count, std::move(allocation));
}

KvBlockLayout CpuBackend::kv_layout() const {
  const size_t value = kv16_ ? sizeof(uint16_t) : sizeof(float);
  return {static_cast<size_t>(block_size_) * static_cast<size_t>(local_.kv_dim()) * value, layer_kv_floats_ * value,
          weights_.config.n_layers};
}

CpuBackend::~CpuBackend() = default;

void CpuBackend::matmul(const float* x, const WeightMatrix& w, float* y, int64_t m, int64_t ldy) const {
  if (ldy < 0) ldy = w.rows;
  if (const float* f = w.f32(); f && ldy == w.rows) {  // the float32 reference path, as before
    if (deterministic_)
      cpu::matmul_nt_invariant(x, f, y, m, w.rows, w.cols, false, *pool_);
    else
      cpu::matmul_nt(x, f, y, m, w.rows, w.cols);
    return;
  }
  cpu::LinearOptions opt;
  opt.fast_prefill = !deterministic_;
  opt.amx = amx_;
  opt.prefetch = prefetch_;
  cpu::linear(x, m, w.cols, w.slices, y, ldy, *pool_, opt);
}

void CpuBackend::all_reduce(float* data, size_t n) const {
  if (!comm_) return;
  if (const parallel::CommStatus s = comm_->all_reduce_sum(data, n); !s.ok())
    throw std::runtime_error("tensor-parallel all-reduce failed: " + std::string(parallel::to_string(s.code)) + " " + s.message);
}

void CpuBackend::forward(const BatchPlan& plan, std::vector<float>& logits) {
  const ModelConfig& c = weights_.config;
  const std::string bad = plan.validate(block_size_, num_kv_blocks(), c.vocab, num_host_blocks_);
  SY_CHECK_MSG(bad.empty(), "invalid batch plan: %s", bad.c_str());
  char* cache = kv16_ ? reinterpret_cast<char*>(kv16_.get()) : reinterpret_cast<char*>(kv_.get());
  if (cp_comm_) {
    copy_kv_blocks_of_rank(kv_layout(), plan.kv_copies, cache, host_kv_.get(), cp_comm_->rank(), cp_size_, [&] {
      if (const parallel::CommStatus s = cp_comm_->barrier(); !s.ok())
        throw std::runtime_error("context-parallel host-tier barrier failed: " + std::string(parallel::to_string(s.code)) + " " + s.message);
    });
  } else {
    copy_kv_blocks(kv_layout(), plan.kv_copies, cache, host_kv_.get());
  }
  Step step(*this, plan);
  run_decoder(step, c.n_layers, comm_ != nullptr);

  // The LM head: the whole vocabulary, or this rank's slice gathered from every rank.
  // Context-parallel ranks past the first return none: the group returns rank 0's.
  const auto R = cp_comm_ && cp_comm_->rank() > 0 ? 0 : static_cast<int64_t>(plan.logits_rows.size());
  const int64_t V = c.vocab;
  logits.resize(static_cast<size_t>(R * V));
  if (R == 0) return;  // every rank of this tensor-parallel group agrees
  if (!comm_) return matmul(last_.data(), weights_.output_matrix(), logits.data(), R);
  const RankShape& s = weights_.shape;
  const int64_t stride = s.vocab_stride;
  local_logits_.resize(static_cast<size_t>(R * stride));
  gathered_.resize(static_cast<size_t>(R * stride * s.size));
  // Rows past the rank's vocabulary (padding to the stride) are dropped below; zero them
  // where the weights have no padding rows.
  if (weights_.lm_head.rows < stride) std::fill(local_logits_.begin(), local_logits_.end(), 0.0f);
  matmul(last_.data(), weights_.lm_head, local_logits_.data(), R, stride);
  if (const parallel::CommStatus st = comm_->all_gather(local_logits_.data(), local_logits_.size(), gathered_.data()); !st.ok())
    throw std::runtime_error("tensor-parallel logits gather failed: " + std::string(parallel::to_string(st.code)) + " " + st.message);
  // gathered_ is [rank][row][stride]; logits are [row][vocab], padding dropped.
  for (int r = 0; r < s.size; ++r) {
    const int64_t v0 = r * stride, n = std::min(V, v0 + stride) - v0;
    for (int64_t i = 0; i < R && n > 0; ++i)
      std::memcpy(&logits[static_cast<size_t>(i * V + v0)], &gathered_[static_cast<size_t>((r * R + i) * stride)], static_cast<size_t>(n) * sizeof(float));
  }
}

StepProfile CpuBackend::profile_step(const BatchPlan& plan, int repeats) {
  StepProfile out;
  const ModelConfig& c = weights_.config;
  const auto R = static_cast<int64_t>(plan.logits_rows.size());
  if (comm_ || cp_comm_ || repeats < 1 || R == 0) return out;
  const std::string bad = plan.validate(block_size_, num_kv_blocks(), c.vocab);
  SY_CHECK_MSG(bad.empty(), "invalid batch plan: %s", bad.c_str());
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> op_ms;
  std::map<std::string, int32_t> op_calls;
  std::vector<float> logits(static_cast<size_t>(R * c.vocab));
  for (int rep = 0; rep < repeats; ++rep) {
    std::map<std::string, double> ms;
    Clock::time_point t = Clock::now();
    const auto mark = [&](const char* name) {
      ms[name] += ms_since(t);
      if (rep == 0 && op_calls[name]++ == 0) order.emplace_back(name);
      t = Clock::now();
    };
    Step step(*this, plan);
    ObservedOps observed(step, mark);
    run_decoder(observed, c.n_layers, false);
    matmul(last_.data(), weights_.output_matrix(), logits.data(), R);
    mark("LM head");
    for (const auto& [name, v] : ms) op_ms[name].push_back(v);
  }
  // What each op's weights are (per call; the KV an attention call reads is not counted).
  const LayerWeights& L = weights_.layers[0];
  const std::map<std::string, double> bytes = {{"QKV projection", static_cast<double>(L.wqkv.bytes())},
                                               {"output projection", static_cast<double>(L.wo.bytes())},
                                               {"gate/up projection", static_cast<double>(L.w_gate_up.bytes())},
                                               {"down projection", static_cast<double>(L.w_down.bytes())},
                                               {"LM head", static_cast<double>(weights_.output_matrix().bytes())}};
  for (const std::string& name : order) {
    StepProfile::Op op{name, op_calls[name], profile_median(op_ms[name]), 0};
    if (const auto it = bytes.find(name); it != bytes.end()) op.bytes = it->second * op.calls;
    out.ops_ms += op.ms;
    out.ops.push_back(std::move(op));
  }
  out.queued_ahead = true;  // nothing is queued on a CPU: each op runs when called
  std::vector<double> whole;
  for (int rep = 0; rep < repeats; ++rep) {
    const Clock::time_point t = Clock::now();
    forward(plan, logits);
    whole.push_back(ms_since(t));
  }
  out.forward_ms = profile_median(whole);
  return out;
}

}  // namespace sy
