// A DecoderOps that runs another and reports each op by name once it has been issued:
// a profiler records a device event there (worker/backend/cuda_profile.cpp), so timing
// stays out of the ops themselves and of their error checks.
#pragma once

#include <functional>

#include "worker/model/decoder.h"

namespace sy {

class ObservedOps : public DecoderOps {
 public:
  // `after` gets a static name: "embedding", "attention norm", "QKV projection", "RoPE and
  // KV write", "attention", "output projection", "MLP norm", "gate/up projection",
  // "down projection", "all-reduce", "final norm".
  ObservedOps(DecoderOps& inner, std::function<void(const char*)> after) : in_(inner), after_(std::move(after)) {}

  void embed() override { in_.embed(), after_("embedding"); }
  void attention_norm(int l) override { in_.attention_norm(l), after_("attention norm"); }
  void qkv_projection(int l) override { in_.qkv_projection(l), after_("QKV projection"); }
  void rope_and_cache(int l) override { in_.rope_and_cache(l), after_("RoPE and KV write"); }
  void attention(int l) override { in_.attention(l), after_("attention"); }
  void output_projection(int l) override { in_.output_projection(l), after_("output projection"); }
  void mlp_norm(int l) override { in_.mlp_norm(l), after_("MLP norm"); }
  void gate_up(int l) override { in_.gate_up(l), after_("gate/up projection"); }
  void down_projection(int l) override { in_.down_projection(l), after_("down projection"); }
  void all_reduce_delta() override { in_.all_reduce_delta(), after_("all-reduce"); }
  void final_norm() override { in_.final_norm(), after_("final norm"); }

 private:
  DecoderOps& in_;
  std::function<void(const char*)> after_;
};

}  // namespace sy
