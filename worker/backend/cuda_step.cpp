// The kernel sequence of one step on the cuda backend, the same in a decode graph and
// in an eager step: embedding, then per layer norm → QKV → (bias, Q/K norm) → RoPE →
// KV write → attention → O → norm → gate/up → SiLU·up → down, then the final norm.
#include <cmath>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/bias_add.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/qk_norm.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_kv.cuh"
#include "kernels/cuda/silu_mul.cuh"
#include "worker/backend/cuda_backend.h"

namespace sy {

using bf16 = __nv_bfloat16;

void CudaBackend::enqueue_layers(const Step& step) {
  const ModelConfig& c = config_;
  const int64_t T = step.tokens;
  const int64_t Q = c.q_dim(), KV = c.kv_dim(), QKV = Q + 2 * KV;
  const PlanLayout p = plan_layout();
  const int32_t* plan = plan_.as<int32_t>();
  auto* x = x_.as<float>();
  auto* delta = delta_.as<float>();
  auto* h = h_.as<bf16>();
  auto* qkv = qkv_.as<bf16>();
  auto* attn = attn_.as<bf16>();
  auto* gate_up = gate_up_.as<bf16>();
  auto* act = act_.as<bf16>();

  cuda::GatherRowsArgs emb;
  emb.table = weights_.embedding;
  emb.table_rows = c.vocab;
  emb.cols = c.hidden;
  emb.ids = plan + p.tokens;
  emb.rows = T;
  emb.out_f32 = x;
  check(cuda::gather_rows(emb, stream_), "embedding");

  cuda::PagedAttentionArgs a;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  a.q = qkv;
  a.q_stride = QKV;
  a.k_new = qkv + Q;
  a.v_new = qkv + Q + KV;
  a.kv_stride = QKV;
  a.out = attn;
  a.block_size = block_size_;
  a.kv_indptr = plan + p.kv_indptr;
  a.kv_indices = plan + p.kv_indices;
  a.kv_last_block_len = plan + p.kv_last_block_len;
  a.cu_seqlens = plan + p.cu_seqlens;
  a.positions = plan + p.positions;
  a.num_seqs = step.seqs;
  a.num_tokens = step.tokens;
  a.workspace = attn_workspace_.get();
  a.workspace_bytes = attn_workspace_.bytes();
  a.prefill_warps = prefill_warps_;
  a.prefill_kernel = prefill_attention_kernel_;
  // Decode variants 1 and 2: RoPE fused with the KV write; 2 also the one-launch decode
  // attention where the tensor-core kernel applies (GQA groups of 2 or more).
  // Deterministic numerics (BackendOptions::deterministic): a decode row goes through the
  // prefill kernels, RoPE and KV write included, exactly as the same position would in a
  // prefill step.
  const bool decode_kernels = step.decode && !deterministic_;
  const bool fused_decode = decode_kernels && decode_variant_ >= 1;
  if (fused_decode && decode_variant_ == 2 && c.n_heads / c.n_kv_heads >= 2 && c.head_dim >= 16) {
    a.decode_variant = 3;
    a.split_counters = split_counters_.as<int32_t>();
  }
  const int splits = decode_kernels ? cuda::decode_num_splits(step.seqs, c.n_kv_heads, num_sms_) : 0;

  for (int l = 0; l < c.n_layers; ++l) {
    const CudaLayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    // h = norm(x + previous layer's MLP output); the first layer has nothing to add.
    check(cuda::add_rms_norm({x, l == 0 ? nullptr : delta, L.attn_norm, h, T, c.hidden, c.rms_eps,
                              small_kernel_variant_},
                             stream_),
          "attention norm");
    check(linear_.run(L.wqkv, h, T, qkv, cuda::GemmOut::kBF16, stream_), "QKV projection");
    if (L.bqkv) check(cuda::bias_add({qkv, T, QKV, QKV, L.bqkv}, stream_), "QKV bias");
    if (L.q_norm)
      check(cuda::qk_norm(
                {qkv, T, QKV, c.n_heads, c.n_kv_heads, c.head_dim, L.q_norm, L.k_norm, c.rms_eps},
                stream_),
            "Q/K norm");
    a.k_cache = kv_.as<bf16>() + layer_kv_elements_ * 2 * static_cast<size_t>(l);
    a.v_cache = a.k_cache + layer_kv_elements_;
    if (fused_decode) {
      check(
          cuda::rope_write_kv({a, qkv, c.rope_dim, c.rope_layout, weights_.rope_inv_freq}, stream_),
          "RoPE + KV cache write");
    } else {
      check(
          cuda::rope({qkv, T, QKV, c.n_heads + c.n_kv_heads, c.head_dim, c.rope_dim, c.rope_layout,
                      plan + p.positions, weights_.rope_inv_freq, small_kernel_variant_},
                     stream_),
          "RoPE");
      check(cuda::write_kv_cache(a, stream_), "KV cache write");
    }
    if (decode_kernels)
      check(cuda::paged_decode_attention(a, splits, stream_), "decode attention");
    else
      check(cuda::paged_prefill_attention(a, step.max_q_len, step.max_context, stream_),
            "prefill attention");
    check(linear_.run(L.wo, attn, T, delta, cuda::GemmOut::kF32, stream_), "output projection");
    check(cuda::add_rms_norm(
              {x, delta, L.ffn_norm, h, T, c.hidden, c.rms_eps, small_kernel_variant_}, stream_),
          "MLP norm");
    if (gated_gemv_) {
      check(linear_.run_gate(L.w_gate_up, h, T, gate_up, act, stream_),
            "gate/up projection + SiLU");
    } else {
      check(linear_.run(L.w_gate_up, h, T, gate_up, cuda::GemmOut::kBF16, stream_),
            "gate/up projection");
      check(cuda::silu_mul({gate_up, act, T, c.ffn}, stream_), "SiLU");
    }
    check(linear_.run(L.w_down, act, T, delta, cuda::GemmOut::kF32, stream_), "down projection");
  }
  // Final residual add and norm of every row; the LM head then reads the rows it needs.
  check(cuda::add_rms_norm({x, c.n_layers > 0 ? delta : nullptr, weights_.output_norm, h, T,
                            c.hidden, c.rms_eps, small_kernel_variant_},
                           stream_),
        "final norm");
}

void CudaBackend::enqueue_lm_head(const bf16* rows, int64_t n) {
  check(linear_.run(weights_.lm_head, rows, n, logits_.get(), cuda::GemmOut::kF32, stream_),
        "LM head");
}

}  // namespace sy
