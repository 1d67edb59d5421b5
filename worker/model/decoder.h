// The decoder's layer sequence, written once. Every backend executes this one description
// through its own ops (DecoderOps): the CPU backend on float vectors, the cuda backend as
// kernel launches (eagerly or into a decode graph). Shapes are a rank's own: a
// tensor-parallel rank holds its slice of the heads, of the FFN width and of the vocabulary
// (worker/model/rank_shape.h), and the sequence adds the collectives between slices, so a
// collective or a new op is added here once, not per backend.
//
// Buffers, as every backend keeps them for a step of T tokens: x, the residual stream
// [T, hidden] (fp32); delta, the output of the last projection [T, hidden], not yet added
// to x; h, the normalized input of the next projection [T, hidden]; qkv [T, local q + 2 ·
// local kv]; attn [T, local q]; act [T, local ffn].
#pragma once

#include <cstdint>

namespace sy {

class DecoderOps {
 public:
  virtual ~DecoderOps() = default;

  // x = the embeddings of the step's tokens.
  virtual void embed() = 0;
  // h = RMSNorm(x += delta) with the layer's attention norm (layer 0: nothing to add).
  virtual void attention_norm(int layer) = 0;
  // qkv = h · Wqkvᵀ (+ bias), then the per-head Q/K RMSNorm where the model has it.
  virtual void qkv_projection(int layer) = 0;
  // RoPE on the query and key heads at the tokens' positions; keys and values into the
  // layer's paged KV cache.
  virtual void rope_and_cache(int layer) = 0;
  // attn = causal attention of each query row over its sequence's cached keys.
  virtual void attention(int layer) = 0;
  // delta = attn · Woᵀ (a row-parallel rank's partial sum).
  virtual void output_projection(int layer) = 0;
  // h = RMSNorm(x += delta) with the layer's MLP norm.
  virtual void mlp_norm(int layer) = 0;
  // act = SiLU(h · Wgateᵀ) · (h · Wupᵀ).
  virtual void gate_up(int layer) = 0;
  // delta = act · Wdownᵀ (a row-parallel rank's partial sum).
  virtual void down_projection(int layer) = 0;
  // delta = the sum of every rank's delta (tensor parallelism; a single device has
  // nothing to add).
  virtual void all_reduce_delta() = 0;
  // The rows whose logits are wanted: RMSNorm(x + delta) with the output norm, ready for
  // the LM head.
  virtual void final_norm() = 0;
};

// The sequence: embedding, then per layer attention (norm, QKV, RoPE and cache, attention,
// O) and MLP (norm, gate/up, down), each ending in the sum over tensor-parallel ranks, then
// the final norm. `tensor_parallel`: more than one rank holds the weights.
inline void run_decoder(DecoderOps& ops, int n_layers, bool tensor_parallel) {
  ops.embed();
  for (int l = 0; l < n_layers; ++l) {
    ops.attention_norm(l);
    ops.qkv_projection(l);
    ops.rope_and_cache(l);
    ops.attention(l);
    ops.output_projection(l);
    if (tensor_parallel) ops.all_reduce_delta();
    ops.mlp_norm(l);
    ops.gate_up(l);
    ops.down_projection(l);
    if (tensor_parallel) ops.all_reduce_delta();
  }
  ops.final_norm();
}

}  // namespace sy
