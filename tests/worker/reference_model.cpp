#include "reference_model.h"

#include <cmath>

namespace sy::testing {
namespace {

// w: loaded with float32 = true (one float32 matrix).
std::vector<float> matvec(const WeightMatrix& w, const float* x, int rows, int cols, size_t row_offset = 0) {
  std::vector<float> y(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    const float* wr = w.f32() + row_offset + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) s += static_cast<double>(wr[c]) * x[c];
    y[static_cast<size_t>(r)] = static_cast<float>(s);
  }
  return y;
}

void rmsnorm(float* x, const float* w, int n, float eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * inv * w[i]);
}

// Rotates one head at position pos. Pairs are (i, i + rot/2) or (2i, 2i + 1).
void rotate(float* v, int pos, const ModelConfig& c) {
  const int half = c.rope_dim / 2;
  for (int i = 0; i < half; ++i) {
    double freq = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.rope_dim);
    if (!c.rope_freq_factors.empty()) freq /= c.rope_freq_factors[static_cast<size_t>(i)];
    const double a = pos * freq;
    const int p0 = c.rope_layout == cpu::RopeLayout::kRotateHalf ? i : 2 * i;
    const int p1 = c.rope_layout == cpu::RopeLayout::kRotateHalf ? i + half : 2 * i + 1;
    const double x0 = v[p0], x1 = v[p1];
    v[p0] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
    v[p1] = static_cast<float>(x1 * std::cos(a) + x0 * std::sin(a));
  }
}

}  // namespace

std::vector<float> reference_logits(const ModelWeights& w, const std::vector<int32_t>& ids) {
  const ModelConfig& c = w.config;
  const int T = static_cast<int>(ids.size()), H = c.hidden, D = c.head_dim, Q = c.q_dim(), KV = c.kv_dim();
  std::vector<std::vector<float>> x(static_cast<size_t>(T));
  for (int t = 0; t < T; ++t)
    x[static_cast<size_t>(t)].assign(w.embedding.f32() + static_cast<ptrdiff_t>(ids[static_cast<size_t>(t)]) * H,
                                     w.embedding.f32() + static_cast<ptrdiff_t>(ids[static_cast<size_t>(t)] + 1) * H);
  for (const LayerWeights& L : w.layers) {
    std::vector<std::vector<float>> keys(static_cast<size_t>(T)), values(static_cast<size_t>(T)), queries(static_cast<size_t>(T));
    for (int t = 0; t < T; ++t) {
      std::vector<float> h = x[static_cast<size_t>(t)];
      rmsnorm(h.data(), L.attn_norm.data(), H, c.rms_eps);
      auto q = matvec(L.wqkv, h.data(), Q, H);
      auto k = matvec(L.wqkv, h.data(), KV, H, static_cast<size_t>(Q) * H);
      auto v = matvec(L.wqkv, h.data(), KV, H, static_cast<size_t>(Q + KV) * H);
      if (!L.bqkv.empty()) {
        for (int i = 0; i < Q; ++i) q[static_cast<size_t>(i)] += L.bqkv[static_cast<size_t>(i)];
        for (int i = 0; i < KV; ++i) k[static_cast<size_t>(i)] += L.bqkv[static_cast<size_t>(Q + i)];
        for (int i = 0; i < KV; ++i) v[static_cast<size_t>(i)] += L.bqkv[static_cast<size_t>(Q + KV + i)];
      }
      for (int hd = 0; hd < c.n_heads; ++hd) {
        if (c.qk_norm) rmsnorm(&q[static_cast<size_t>(hd * D)], L.q_norm.data(), D, c.rms_eps);
        rotate(&q[static_cast<size_t>(hd * D)], t, c);
      }
      for (int hd = 0; hd < c.n_kv_heads; ++hd) {
        if (c.qk_norm) rmsnorm(&k[static_cast<size_t>(hd * D)], L.k_norm.data(), D, c.rms_eps);
        rotate(&k[static_cast<size_t>(hd * D)], t, c);
      }
      queries[static_cast<size_t>(t)] = q;
      keys[static_cast<size_t>(t)] = k;
      values[static_cast<size_t>(t)] = v;
    }
    for (int t = 0; t < T; ++t) {
      std::vector<float> attn(static_cast<size_t>(Q));
      for (int hd = 0; hd < c.n_heads; ++hd) {
        const int kvh = hd / (c.n_heads / c.n_kv_heads);
        std::vector<double> s(static_cast<size_t>(t + 1));
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double dot = 0;
          for (int i = 0; i < D; ++i) dot += static_cast<double>(queries[static_cast<size_t>(t)][static_cast<size_t>(hd * D + i)]) * keys[static_cast<size_t>(j)][static_cast<size_t>(kvh * D + i)];
          s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double z = 0;
        for (auto& e : s) z += (e = std::exp(e - mx));
        for (int i = 0; i < D; ++i) {
          double acc = 0;
          for (int j = 0; j <= t; ++j) acc += s[static_cast<size_t>(j)] * values[static_cast<size_t>(j)][static_cast<size_t>(kvh * D + i)];
          attn[static_cast<size_t>(hd * D + i)] = static_cast<float>(acc / z);
        }
      }
      auto o = matvec(L.wo, attn.data(), H, Q);
      std::vector<float>& xt = x[static_cast<size_t>(t)];
      for (int i = 0; i < H; ++i) xt[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
      std::vector<float> h = xt;
      rmsnorm(h.data(), L.ffn_norm.data(), H, c.rms_eps);
      auto gate = matvec(L.w_gate_up, h.data(), c.ffn, H);
      auto up = matvec(L.w_gate_up, h.data(), c.ffn, H, static_cast<size_t>(c.ffn) * H);
      for (int i = 0; i < c.ffn; ++i) {
        const double g = gate[static_cast<size_t>(i)];
        gate[static_cast<size_t>(i)] = static_cast<float>(g / (1 + std::exp(-g)) * up[static_cast<size_t>(i)]);
      }
      auto down = matvec(L.w_down, gate.data(), H, c.ffn);
      for (int i = 0; i < H; ++i) xt[static_cast<size_t>(i)] += down[static_cast<size_t>(i)];
    }
  }
  std::vector<float> logits(static_cast<size_t>(T) * c.vocab);
  const float* out = w.output_matrix().f32();
  for (int t = 0; t < T; ++t) {
    std::vector<float> h = x[static_cast<size_t>(t)];
    rmsnorm(h.data(), w.output_norm.data(), H, c.rms_eps);
    for (int v = 0; v < c.vocab; ++v) {
      double s = 0;
      for (int i = 0; i < H; ++i) s += static_cast<double>(out[static_cast<size_t>(v) * H + i]) * h[static_cast<size_t>(i)];
      logits[static_cast<size_t>(t) * c.vocab + v] = static_cast<float>(s);
    }
  }
  return logits;
}

}  // namespace sy::testing
