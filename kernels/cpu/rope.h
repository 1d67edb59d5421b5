// Rotary position embedding in place, in either of the two layouts models are stored in.
#pragma once

#include <cstdint>
#include <vector>

namespace sy::cpu {

enum class RopeLayout {
  kRotateHalf,   // pairs (i, i + rot/2): Hugging Face tensors, all qwen* GGUF tensors
  kInterleaved,  // pairs (2i, 2i + 1): GGUF `llama` tensors (permuted by the converter)
};

struct RopeParams {
  int head_dim = 0;
  int rot_dim = 0;                // leading dims of each head that rotate (≤ head_dim)
  RopeLayout layout = RopeLayout::kRotateHalf;
  std::vector<float> inv_freq;    // [rot_dim / 2], frequency scaling already applied
};

// inv_freq[i] = 1 / (theta^(2i/rot_dim) · factor[i]), computed in float32 as
// transformers does; `factors` empty means all 1 (Llama 3 scaling supplies them).
// round_to_bf16 reproduces transformers running a model loaded in bf16: its inv_freq
// buffer is cast to bf16 with the weights, which shifts every angle slightly. The
// fixtures' goldens were computed that way; the engine's default is exact float32.
std::vector<float> rope_inv_freq(int rot_dim, float theta, const std::vector<float>& factors = {},
                                 bool round_to_bf16 = false);

// Rotates n_heads heads of head_dim floats for each of `tokens` rows: row t starts at
// x + t * row_stride and is at position positions[t].
void rope(float* x, int64_t tokens, int64_t row_stride, int n_heads, const int32_t* positions, const RopeParams& p);

// The cosines and sines rope() rotates by, for `tokens` positions: cos[t * rot_dim/2 + i]
// and sin[...] for pair i at positions[t]. A step computes them once for all its layers
// and for queries and keys alike (the same values rope() computes per call).
void rope_angles(const int32_t* positions, int64_t tokens, const RopeParams& p, float* cos, float* sin);

// rope() with row t's angles from rope_angles (cos + t * rot_dim/2, sin likewise).
void rope(float* x, int64_t tokens, int64_t row_stride, int n_heads, const float* cos, const float* sin, const RopeParams& p);

}  // namespace sy::cpu
