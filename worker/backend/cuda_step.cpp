// One step on the cuda backend: the decoder's description (worker/model/decoder.h) as
// kernel launches, the same in a decode graph and in an eager step.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/bias_add.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/qk_norm.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_kv.cuh"
#include "kernels/cuda/silu_mul.cuh"
#include "worker/backend/cuda_backend.h"
#include "worker/backend/cuda_context_attention.h"
#include "worker/model/decoder.h"
#include "worker/model/observed_ops.h"
#include "worker/parallel/communicator.h"

namespace sy {

using bf16 = __nv_bfloat16;

// The decoder's ops (worker/model/decoder.h) as kernel launches on stream_, over the
// step buffers: x_ (fp32 residual), delta_, h_ (bf16), qkv_, attn_, gate_up_, act_. Shapes
// are this rank's (its heads and FFN width; the whole model for one rank). A
// context-parallel rank's buffers hold its own rows only, possibly none in a step: its
// ops then launch nothing, and it still joins the context-parallel collectives.
class CudaBackend::LayerOps : public DecoderOps {
 public:
  LayerOps(CudaBackend& b, const Step& step) : b_(b), step_(step), c_(b.local_), T_(step.tokens) {
    const PlanLayout p = b.plan_layout();
    plan_ = b.plan_.as<int32_t>();
    positions_ = plan_ + p.positions;
    tokens_ = plan_ + p.tokens;
    a_.n_heads = c_.n_heads;
    a_.n_kv_heads = c_.n_kv_heads;
    a_.head_dim = c_.head_dim;
    a_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.head_dim)));
    a_.q = b.qkv_.as<bf16>();
    a_.q_stride = qkv_dim();
    a_.k_new = a_.q + c_.q_dim();
    a_.v_new = a_.k_new + c_.kv_dim();
    a_.kv_stride = qkv_dim();
    a_.out = b.attn_.as<bf16>();
    a_.block_size = b.block_size_;
    a_.kv_indptr = plan_ + p.kv_indptr;
    a_.kv_indices = plan_ + p.kv_indices;
    a_.kv_last_block_len = plan_ + p.kv_last_block_len;
    a_.cu_seqlens = plan_ + p.cu_seqlens;
    a_.positions = positions_;
    a_.num_seqs = step.seqs;
    a_.num_tokens = step.tokens;
    a_.workspace = b.attn_workspace_.get();
    a_.workspace_bytes = b.attn_workspace_.bytes();
    a_.prefill_warps = b.prefill_warps_;
    a_.prefill_kernel = b.prefill_attention_kernel_;
    // Deterministic numerics (BackendOptions::deterministic): a decode row goes through
    // the prefill kernels, RoPE and KV write included, exactly as the same position would
    // in a prefill step. Otherwise decode rows take the split decode attention and RoPE
    // fused with the KV write.
    decode_kernels_ = step.decode && !b.deterministic_;
    splits_ = decode_kernels_ ? cuda::decode_num_splits(step.seqs, c_.n_kv_heads, b.num_sms_) : 0;
  }

  void embed() override {
    if (T_ == 0) return;
    cuda::GatherRowsArgs emb;
    emb.table = b_.weights_.embedding;
    emb.table_rows = b_.comm_ ? b_.shape_.vocab : c_.vocab;
    emb.cols = c_.hidden;
    emb.ids = tokens_;
    emb.rows = T_;
    emb.out_f32 = b_.x_.as<float>();
    emb.row0 = b_.shape_.vocab0;
    emb.slice = b_.comm_ != nullptr;
    b_.check(cuda::gather_rows(emb, b_.stream_), "embedding");
    // Vocabulary-parallel: each token's row came from one rank, zeros from the others.
    if (b_.comm_) all_reduce(b_.x_.as<float>(), "embedding all-reduce");
  }

  void attention_norm(int l) override { norm(layer(l).attn_norm, l > 0, "attention norm"); }

  void qkv_projection(int l) override {
    if (T_ == 0) return;
    const CudaLayerWeights& L = layer(l);
    auto* qkv = b_.qkv_.as<bf16>();
    b_.check(b_.linear_.run(L.wqkv, b_.h_.as<bf16>(), T_, qkv, cuda::GemmOut::kBF16, b_.stream_), "QKV projection");
    if (L.bqkv) b_.check(cuda::bias_add({qkv, T_, qkv_dim(), qkv_dim(), L.bqkv}, b_.stream_), "QKV bias");
    if (L.q_norm)
      b_.check(cuda::qk_norm({qkv, T_, qkv_dim(), c_.n_heads, c_.n_kv_heads, c_.head_dim, L.q_norm, L.k_norm, c_.rms_eps},
                             b_.stream_),
               "Q/K norm");
  }

  void rope_and_cache(int l) override {
    a_.k_cache = b_.kv_.as<bf16>() + b_.layer_kv_elements_ * 2 * static_cast<size_t>(l);
    a_.v_cache = a_.k_cache + b_.layer_kv_elements_;
    if (T_ == 0) return;
    if (decode_kernels_) {
      b_.check(cuda::rope_write_kv({a_, b_.qkv_.as<bf16>(), c_.rope_dim, c_.rope_layout, b_.weights_.rope_inv_freq}, b_.stream_),
               "RoPE + KV cache write");
      return;
    }
    b_.check(cuda::rope({b_.qkv_.as<bf16>(), T_, qkv_dim(), c_.n_heads + c_.n_kv_heads, c_.head_dim, c_.rope_dim, c_.rope_layout,
                         positions_, b_.weights_.rope_inv_freq},
                        b_.stream_),
             "RoPE");
    // A context-parallel rank stores its home blocks' keys in attention(), from every rank's rows.
    if (!b_.cp_) b_.check(cuda::write_kv_cache(a_, b_.stream_), "KV cache write");
  }

  void attention(int) override {
    if (b_.cp_)
      b_.cp_->run(b_.qkv_.as<bf16>(), a_.k_cache, a_.v_cache, b_.attn_.as<bf16>());
    else if (decode_kernels_)
      b_.check(cuda::paged_decode_attention(a_, splits_, b_.stream_), "decode attention");
    else
      b_.check(cuda::paged_prefill_attention(a_, step_.max_q_len, step_.max_context, b_.stream_), "prefill attention");
  }

  void output_projection(int l) override {
    if (T_ == 0) return;
    b_.check(b_.linear_.run(layer(l).wo, b_.attn_.as<bf16>(), T_, b_.delta_.as<float>(), cuda::GemmOut::kF32, b_.stream_),
             "output projection");
  }

  void mlp_norm(int l) override { norm(layer(l).ffn_norm, true, "MLP norm"); }

  void gate_up(int l) override {
    if (T_ == 0) return;
    const CudaLayerWeights& L = layer(l);
    auto* h = b_.h_.as<bf16>();
    auto* gate_up = b_.gate_up_.as<bf16>();
    auto* act = b_.act_.as<bf16>();
    b_.check(b_.linear_.run(L.w_gate_up, h, T_, gate_up, cuda::GemmOut::kBF16, b_.stream_), "gate/up projection");
    b_.check(cuda::silu_mul({gate_up, act, T_, c_.ffn}, b_.stream_), "SiLU");
  }

  void down_projection(int l) override {
    if (T_ == 0) return;
    b_.check(b_.linear_.run(layer(l).w_down, b_.act_.as<bf16>(), T_, b_.delta_.as<float>(), cuda::GemmOut::kF32, b_.stream_),
             "down projection");
  }

  // The row-parallel partial sums of every rank, summed on the stream (captured into the
  // decode graphs like any kernel). The ranks of a tensor-parallel group run the same
  // rows, so a context-parallel group with none skips it on all of them.
  void all_reduce_delta() override {
    if (T_ > 0) all_reduce(b_.delta_.as<float>(), "all-reduce");
  }

  // Every row (the LM head then reads the rows it needs).
  void final_norm() override { norm(b_.weights_.output_norm, c_.n_layers > 0, "final norm"); }

 private:
  int64_t qkv_dim() const { return c_.q_dim() + 2 * c_.kv_dim(); }
  const CudaLayerWeights& layer(int l) const { return b_.weights_.layers[static_cast<size_t>(l)]; }
  // data[T, hidden] = its sum over the ranks, on the stream.
  void all_reduce(float* data, const char* what) {
    const parallel::CommStatus s = b_.comm_->all_reduce_sum(data, static_cast<size_t>(T_ * c_.hidden), b_.stream_);
    b_.check(s.ok() ? cudaSuccess : cudaErrorUnknown, s.ok() ? what : s.message.c_str());
  }
  // h = norm(x (+= delta)).
  void norm(const float* weight, bool add, const char* what) {
    if (T_ == 0) return;
    b_.check(cuda::add_rms_norm({b_.x_.as<float>(), add ? b_.delta_.as<float>() : nullptr, weight, b_.h_.as<bf16>(), T_, c_.hidden,
                                 c_.rms_eps},
                                b_.stream_),
             what);
  }

  CudaBackend& b_;
  const Step& step_;
  const ModelConfig& c_;
  const int64_t T_;
  const int32_t* plan_ = nullptr;
  const int32_t* positions_ = nullptr;
  const int32_t* tokens_ = nullptr;
  cuda::PagedAttentionArgs a_;
  bool decode_kernels_ = false;
  int splits_ = 0;
};

void CudaBackend::enqueue_layers(const Step& step, const std::function<void(const char*)>* after_op) {
  LayerOps ops(*this, step);
  if (!after_op) return run_decoder(ops, config_.n_layers, /*tensor_parallel=*/comm_ != nullptr);
  ObservedOps observed(ops, *after_op);
  run_decoder(observed, config_.n_layers, /*tensor_parallel=*/comm_ != nullptr);
}

CudaBackend::Step CudaBackend::prepare_context_step(const BatchPlan& plan) {
  check(cudaSetDevice(device_), "selecting the device");
  cp_->plan(plan);
  BatchPlan own;  // the rank's rows; only tokens, positions and the logits rows are read
  for (const int32_t t : cp_->own_plan_rows()) {
    own.token_ids.push_back(plan.token_ids[static_cast<size_t>(t)]);
    own.positions.push_back(plan.positions[static_cast<size_t>(t)]);
  }
  for (const int32_t t : plan.logits_rows) own.logits_rows.push_back(cp_->gathered_row(t));
  // The collectives send padded_rows() rows from qkv_ and h_; the plan arrays hold the
  // logits rows in a token-capacity slot.
  ensure_capacity(std::max({cp_->own_rows(), cp_->padded_rows(), static_cast<int32_t>(plan.logits_rows.size())}), 0);
  upload_plan(own);
  Step step;
  step.tokens = cp_->own_rows();
  return step;
}

// logits_ = rows · this rank's LM head (its vocabulary rows under tensor parallelism).
void CudaBackend::enqueue_lm_head(const bf16* rows, int64_t n) {
  check(linear_.run(weights_.lm_head, rows, n, logits_.get(), cuda::GemmOut::kF32, stream_),
        "LM head");
}

// The whole logits of the last LM head's first n rows: logits_, or with tensor
// parallelism every rank's slice gathered and laid out by vocabulary into gathered_ (the
// padding rows of the last slice dropped).
const float* CudaBackend::gathered_logits(int64_t n) {
  if (!comm_ || n == 0) return comm_ ? gathered_.as<float>() : logits_.as<float>();
  const auto stride = static_cast<size_t>(shape_.vocab_stride);
  auto* staging = gather_staging_.as<float>();
  const parallel::CommStatus s =
      comm_->all_gather(logits_.as<float>(), static_cast<size_t>(n) * stride, staging, stream_);
  check(s.ok() ? cudaSuccess : cudaErrorUnknown, s.ok() ? "gathering logits" : s.message.c_str());
  const auto V = static_cast<size_t>(config_.vocab);
  for (int r = 0; r < shape_.size; ++r) {
    const RankShape slice = RankShape::of(config_, {r, shape_.size});
    if (slice.vocab == 0) continue;
    check(cudaMemcpy2DAsync(gathered_.as<float>() + slice.vocab0, V * sizeof(float),
                            staging + static_cast<size_t>(r) * n * stride, stride * sizeof(float),
                            static_cast<size_t>(slice.vocab) * sizeof(float), static_cast<size_t>(n),
                            cudaMemcpyDeviceToDevice, stream_),
          "laying out gathered logits");
  }
  return gathered_.as<float>();
}

}  // namespace sy
