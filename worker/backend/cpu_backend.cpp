#include "worker/backend/cpu_backend.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/invariant_gemm.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/thread_pool.h"

namespace sy {
namespace {

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Splits `rows` rows into chunks for the pool; elementwise kernels are cheap per row.
template <typename Fn>
void for_row_chunks(int64_t rows, Fn&& fn) {
  auto& pool = cpu::ThreadPool::global();
  const int64_t chunks = std::min<int64_t>(rows, pool.size() * 4);
  if (chunks <= 1) {
    fn(0, rows);
    return;
  }
  pool.parallel_for(chunks, [&](int64_t c) { fn(rows * c / chunks, rows * (c + 1) / chunks); });
}

}  // namespace

CpuBackend::CpuBackend(const ModelSource& src, const ModelConfig& config, const BackendOptions& options)
    : weights_(ModelWeights::load(src, config)), block_size_(options.block_size), deterministic_(options.deterministic.value_or(true)) {
  if (block_size_ <= 0 || block_size_ > 1024) throw std::invalid_argument("block size must be in 1..1024");
  rope_.head_dim = config.head_dim;
  rope_.rot_dim = config.rope_dim;
  rope_.layout = config.rope_layout;
  rope_.inv_freq = cpu::rope_inv_freq(config.rope_dim, config.rope_theta, config.rope_freq_factors, config.rope_inv_freq_bf16);
  const size_t per_block = kv_bytes_per_block(config, block_size_);
  num_blocks_ = options.num_kv_blocks > 0 ? options.num_kv_blocks : static_cast<int32_t>(std::min<size_t>(options.kv_memory_bytes / per_block, INT32_MAX));
  if (num_blocks_ <= 0) throw std::invalid_argument("KV memory budget holds no block");
  layer_kv_floats_ = static_cast<size_t>(num_blocks_) * static_cast<size_t>(block_size_) * static_cast<size_t>(config.kv_dim());
  // Not zeroed: pages are touched only when a block is first written.
  kv_.reset(new float[layer_kv_floats_ * 2 * static_cast<size_t>(config.n_layers)]);
}

void CpuBackend::matmul(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k) const {
  if (deterministic_)
    cpu::matmul_nt_invariant(x, w, y, m, n, k, false, cpu::ThreadPool::global());
  else
    cpu::matmul_nt(x, w, y, m, n, k);
}

void CpuBackend::forward(const BatchPlan& plan, std::vector<float>& logits) {
  const ModelConfig& c = weights_.config;
  const std::string bad = plan.validate(block_size_, num_blocks_, c.vocab);
  SY_CHECK_MSG(bad.empty(), "invalid batch plan: %s", bad.c_str());
  const int64_t T = plan.num_tokens();
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, D = c.head_dim;
  const int64_t QKV = Q + 2 * KV;
  auto& pool = cpu::ThreadPool::global();

  grow(x_, static_cast<size_t>(T * H));
  grow(h_, static_cast<size_t>(T * H));
  grow(qkv_, static_cast<size_t>(T * QKV));
  grow(attn_, static_cast<size_t>(T * Q));
  grow(proj_, static_cast<size_t>(T * H));
  grow(gate_up_, static_cast<size_t>(T * 2 * F));
  grow(act_, static_cast<size_t>(T * F));

  for (int64_t t = 0; t < T; ++t)
    std::memcpy(&x_[static_cast<size_t>(t * H)], &weights_.embedding[static_cast<size_t>(plan.token_ids[t]) * H], H * sizeof(float));

  cpu::AttentionParams ap;
  ap.n_heads = c.n_heads;
  ap.n_kv_heads = c.n_kv_heads;
  ap.head_dim = c.head_dim;
  ap.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  ap.q = qkv_.data();
  ap.q_stride = QKV;
  ap.k_new = qkv_.data() + Q;
  ap.v_new = qkv_.data() + Q + KV;
  ap.kv_stride = QKV;
  ap.out = attn_.data();
  ap.table = plan.kv_table(block_size_);
  ap.cu_seqlens = plan.cu_seqlens.data();
  ap.positions = plan.positions.data();

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    // h = norm(x + previous layer's MLP output); the first layer has nothing to add.
    for_row_chunks(T, [&](int64_t r0, int64_t r1) {
      if (l == 0)
        cpu::rms_norm(&x_[r0 * H], L.attn_norm.data(), &h_[r0 * H], r1 - r0, H, c.rms_eps);
      else
        cpu::add_rms_norm(&x_[r0 * H], &proj_[r0 * H], L.attn_norm.data(), &h_[r0 * H], r1 - r0, H, c.rms_eps);
    });
    matmul(h_.data(), L.wqkv.data(), qkv_.data(), T, QKV, H);
    for_row_chunks(T, [&](int64_t r0, int64_t r1) {
      for (int64_t t = r0; t < r1; ++t) {
        float* row = &qkv_[static_cast<size_t>(t * QKV)];
        if (!L.bqkv.empty())
          for (int64_t i = 0; i < QKV; ++i) row[i] += L.bqkv[static_cast<size_t>(i)];
        if (c.qk_norm) {
          cpu::rms_norm(row, L.q_norm.data(), row, c.n_heads, D, c.rms_eps);
          cpu::rms_norm(row + Q, L.k_norm.data(), row + Q, c.n_kv_heads, D, c.rms_eps);
        }
      }
      cpu::rope(&qkv_[r0 * QKV], r1 - r0, QKV, c.n_heads, &plan.positions[r0], rope_);
      cpu::rope(&qkv_[r0 * QKV + Q], r1 - r0, QKV, c.n_kv_heads, &plan.positions[r0], rope_);
    });
    ap.cache.k = kv_.get() + layer_kv_floats_ * 2 * static_cast<size_t>(l);
    ap.cache.v = ap.cache.k + layer_kv_floats_;
    cpu::write_kv(ap);
    cpu::paged_attention(ap, pool);
    matmul(attn_.data(), L.wo.data(), proj_.data(), T, H, Q);
    for_row_chunks(T, [&](int64_t r0, int64_t r1) {
      cpu::add_rms_norm(&x_[r0 * H], &proj_[r0 * H], L.ffn_norm.data(), &h_[r0 * H], r1 - r0, H, c.rms_eps);
    });
    matmul(h_.data(), L.w_gate_up.data(), gate_up_.data(), T, 2 * F, H);
    for_row_chunks(T, [&](int64_t r0, int64_t r1) { cpu::silu_mul(&gate_up_[r0 * 2 * F], &act_[r0 * F], r1 - r0, F); });
    matmul(act_.data(), L.w_down.data(), proj_.data(), T, H, F);
  }

  // Final residual add and norm, only for the rows whose logits are wanted.
  const auto R = static_cast<int64_t>(plan.logits_rows.size());
  std::vector<float> last(static_cast<size_t>(R * H));
  for (int64_t i = 0; i < R; ++i) {
    const int64_t t = plan.logits_rows[static_cast<size_t>(i)];
    for (int64_t k = 0; k < H; ++k) last[static_cast<size_t>(i * H + k)] = x_[static_cast<size_t>(t * H + k)] + proj_[static_cast<size_t>(t * H + k)];
  }
  cpu::rms_norm(last.data(), weights_.output_norm.data(), last.data(), R, H, c.rms_eps);
  logits.resize(static_cast<size_t>(R * c.vocab));
  matmul(last.data(), weights_.output_matrix(), logits.data(), R, c.vocab, H);
}

}  // namespace sy
