#include "worker/model/rank_shape.h"

#include <algorithm>
#include <stdexcept>

namespace sy {

RankShape RankShape::of(const ModelConfig& c, TensorParallel tp) {
  const int n = tp.size;
  if (n < 1 || tp.rank < 0 || tp.rank >= n)
    throw std::invalid_argument("tensor-parallel rank " + std::to_string(tp.rank) + " of " + std::to_string(n));
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("tp " + std::to_string(n) + " does not divide this model: " + what);
  };
  if (c.n_heads % n != 0) refuse(std::to_string(c.n_heads) + " query heads");
  if (n <= c.n_kv_heads ? c.n_kv_heads % n != 0 : n % c.n_kv_heads != 0)
    refuse(std::to_string(c.n_kv_heads) + " KV heads (tp must divide them or be a multiple of them)");
  if (c.ffn % n != 0) refuse("an FFN width of " + std::to_string(c.ffn));
  RankShape s;
  s.rank = tp.rank;
  s.size = n;
  s.n_heads = c.n_heads / n;
  s.q_head0 = tp.rank * s.n_heads;
  if (n <= c.n_kv_heads) {
    s.n_kv_heads = c.n_kv_heads / n;
    s.kv_head0 = tp.rank * s.n_kv_heads;
  } else {  // replicated: this rank's query heads all belong to one KV head's group
    s.n_kv_heads = 1;
    s.kv_head0 = s.q_head0 / (c.n_heads / c.n_kv_heads);
  }
  s.ffn = c.ffn / n;
  s.ffn0 = tp.rank * s.ffn;
  s.vocab_stride = (c.vocab + n - 1) / n;
  s.vocab0 = std::min(c.vocab, tp.rank * s.vocab_stride);
  s.vocab = std::min(c.vocab, s.vocab0 + s.vocab_stride) - s.vocab0;
  return s;
}

ModelConfig RankShape::local(const ModelConfig& c) const {
  ModelConfig l = c;
  l.n_heads = n_heads;
  l.n_kv_heads = n_kv_heads;
  l.ffn = ffn;
  return l;
}

std::string RankShape::describe() const {
  if (whole()) return "whole model";
  return "tp rank " + std::to_string(rank) + "/" + std::to_string(size) + ": q heads " + std::to_string(q_head0) + "+" +
         std::to_string(n_heads) + ", kv heads " + std::to_string(kv_head0) + "+" + std::to_string(n_kv_heads) +
         ", ffn " + std::to_string(ffn0) + "+" + std::to_string(ffn) + ", vocab " + std::to_string(vocab0) + "+" +
         std::to_string(vocab);
}

}  // namespace sy
